"""Random-init twins (olacore.loading): initialised once per (model, seed), saved, read back bit for bit, loadable by
name (in worker processes too), and not built at all when their maps are cached."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from conftest import store_in  # noqa: E402
from olacore import loading as twins  # noqa: E402
from olacore.loading import (LoadedModel, load_model, model_fingerprint, model_kind, parse_twin_name,  # noqa: E402
                             random_init, twin_fingerprint, twin_key, twin_name)
from olacore.store import TensorStore  # noqa: E402


def _tiny() -> LoadedModel:
    config = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=32, attn_implementation="eager")
    torch.manual_seed(7)
    backbone = transformers.BertModel(config, add_pooling_layer=False)
    with torch.no_grad():  # stand-in for training
        for p in backbone.parameters():
            p.add_(torch.randn_like(p))
    backbone.eval()
    return LoadedModel(name="tiny", tokenizer=None, backbone=backbone, is_causal=False, num_layers=2, num_heads=2,
                       max_length=32, device=torch.device("cpu"), fingerprint="tiny-fp")


def _reference_state(model: LoadedModel, seed: int) -> dict[str, torch.Tensor]:
    """Hugging Face's initialiser run directly: ``model_class(config)`` under ``torch.manual_seed(seed)`` (the
    official random-init control), the entries the model has."""
    torch.manual_seed(seed)
    fresh = type(model.backbone)(model.backbone.config).state_dict()
    return {key: fresh[key] for key in model.backbone.state_dict()}


def _equal_states(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_twin_is_saved_once_and_read_back_bit_for_bit(tmp_path):
    model, store = _tiny(), TensorStore(tmp_path)
    trained = {k: v.clone() for k, v in model.backbone.state_dict().items()}
    built = random_init(model, 3, store=store)
    assert len(list(tmp_path.rglob("*.safetensors"))) == 1
    loaded = random_init(model, 3, store=store)
    assert len(list(tmp_path.rglob("*.safetensors"))) == 1  # read, not written again
    reference = _reference_state(model, 3)
    assert _equal_states(built.backbone.state_dict(), reference)
    assert _equal_states(loaded.backbone.state_dict(), reference)
    assert _equal_states(model.backbone.state_dict(), trained)  # the trained model is untouched
    # the fingerprint names the model, the seed and the initialiser (torch, transformers, this code)
    assert built.fingerprint == loaded.fingerprint == twin_fingerprint("tiny-fp", 3)
    assert built.fingerprint.startswith("tiny-fp|control:random init seed=3|init:")
    assert built.name == loaded.name == "tiny [random init seed=3]" == twin_name("tiny", 3)
    other = random_init(model, 4, store=store)
    assert len(list(tmp_path.rglob("*.safetensors"))) == 2
    assert not torch.equal(other.backbone.state_dict()["encoder.layer.0.attention.self.query.weight"],
                           loaded.backbone.state_dict()["encoder.layer.0.attention.self.query.weight"])


def test_twin_keys_differ_by_model_and_seed():
    assert len({twin_key("a", 0), twin_key("a", 1), twin_key("b", 0)}) == 3 and twin_key("a", 0) == twin_key("a", 0)


def test_twin_names_round_trip_and_are_checked():
    assert parse_twin_name(twin_name("minilm-l6", 2)) == ("minilm-l6", 2)
    with pytest.raises(ValueError, match="random init seed=S"):  # a twin of a twin is the model's twin: refused
        parse_twin_name(twin_name(twin_name("minilm-l6", 0), 5))
    assert parse_twin_name("minilm-l6") is None and parse_twin_name("minilm-l6 [shuffled layers seed=0]") is None
    with pytest.raises(ValueError, match="seed"):
        twin_name("minilm-l6", -1)
    with pytest.raises(TypeError, match="seed"):
        twin_name("minilm-l6", 1.0)


def test_a_twin_loads_by_name_as_random_init_of_the_model(tmp_path, monkeypatch):
    monkeypatch.setattr(twins, "TensorStore", store_in(tmp_path))
    name = twin_name("minilm-l6", 0)
    by_name = load_model(name, device="cpu")
    direct = random_init(load_model("minilm-l6", device="cpu"), 0)
    assert by_name.name == direct.name == name
    assert by_name.fingerprint == direct.fingerprint == model_fingerprint(name)
    assert model_fingerprint(name).startswith(model_fingerprint("minilm-l6") + "|control:random init seed=0|init:")
    assert model_kind(name) == "encoder" and not by_name.is_causal
    assert _equal_states(by_name.backbone.state_dict(), direct.backbone.state_dict())
    with pytest.raises(ValueError, match="no-such-model"):
        load_model(twin_name("no-such-model", 0))


@pytest.mark.slow
def test_twin_maps_on_two_workers_equal_one_and_need_no_twin_once_cached(tmp_path, monkeypatch):
    from olacore import pipeline
    from olacore.pipeline import cached_ola

    monkeypatch.setenv("OLACORE_CACHE", str(tmp_path / "cache"))  # the workers' default store too
    texts = [f"Sentence number {i} has {'a few ' * (i % 4)}words in it." for i in range(16)]
    name = twin_name("minilm-l6", 0)
    spread = cached_ola(name, texts, 2, workers=2, device="cpu", progress=False)
    here = cached_ola(load_model(name, device="cpu"), texts, 2, workers=1, device="cpu", progress=False,
                      store=TensorStore(tmp_path / "other"))
    assert all(torch.equal(a.orders, b.orders) and torch.equal(a.rollout, b.rollout) for a, b in zip(spread, here))

    def refuse(*args, **kwargs):
        raise AssertionError("a twin was loaded although its maps are cached")

    monkeypatch.setattr(twins, "random_init", refuse)
    monkeypatch.setattr(pipeline, "per_text", refuse)
    again = cached_ola(name, texts, 2, workers=2, device="cpu", progress=False)
    assert all(torch.equal(a.orders, b.orders) for a, b in zip(again, spread))


def test_another_initialiser_gives_another_twin_fingerprint_and_weights_key(monkeypatch):
    before = twin_fingerprint("tiny-fp", 0), twin_key("tiny-fp", 0)
    import sys

    installed = sys.modules["transformers"]  # the module the package imports now
    monkeypatch.setattr(installed, "__version__", installed.__version__ + ".other")
    after = twin_fingerprint("tiny-fp", 0), twin_key("tiny-fp", 0)
    assert before[0] != after[0] and before[1] != after[1]  # maps and saved weights of the old twin are not read


@pytest.mark.parametrize("name", ["minilm-l6 [random init seed=-1]", "minilm-l6 [random init seed=01]",
                                  "minilm-l6 [random init seed=99999999999999]", "minilm-l6 [Random init seed=x]",
                                  "minilm-l6 [random init seed=0] [random init seed=1]"])
def test_a_name_asking_for_a_twin_that_is_none_is_refused_with_the_form(name):
    with pytest.raises(ValueError, match=r"random init seed=S"):
        model_fingerprint(name)
    with pytest.raises(ValueError, match="999999999"):
        twin_name("minilm-l6", 10**12)


def test_from_pretrained_refuses_a_twin_name():
    with pytest.raises(ValueError, match="random-init twin"):
        twins.from_pretrained(twin_name("minilm-l6", 0), print)  # built in memory: no folder


def test_a_backbone_its_fresh_copy_cannot_rebuild_is_refused_naming_the_tensor(tmp_path):
    model = _tiny()
    model.backbone.register_buffer("extra_scale", torch.ones(3))  # a modified model: no fresh copy has it
    with pytest.raises(ValueError, match="re-initialise") as error:
        random_init(model, 0, store=TensorStore(tmp_path))
    assert "extra_scale" in str(error.value)
