"""Controls really change the weights (olacore.controls)."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from olacore.controls import add_noise, layer_stack, random_init, shuffle_layers  # noqa: E402
from olacore.models import LoadedModel  # noqa: E402


@pytest.fixture(scope="module")
def tiny_model() -> LoadedModel:
    """A 4-layer BERT with non-default weights, wrapped as a LoadedModel (no files needed)."""
    config = transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=4, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=32, attn_implementation="eager",
    )
    torch.manual_seed(123)
    backbone = transformers.BertModel(config, add_pooling_layer=False)
    with torch.no_grad():  # stand-in for training: move every weight away from its init
        for p in backbone.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    backbone.eval()
    return LoadedModel(name="tiny", tokenizer=None, backbone=backbone, is_causal=False, num_layers=4,
                       num_heads=2, max_length=32, device=torch.device("cpu"), fingerprint="tiny-fp")


def _params(model: LoadedModel) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.backbone.state_dict().items()}


def test_random_init_differs_and_keeps_shapes(tiny_model):
    before = _params(tiny_model)
    control = random_init(tiny_model, seed=0)
    after = _params(control)
    assert control.fingerprint != tiny_model.fingerprint
    assert after.keys() == before.keys()
    weights = [k for k in before if k.endswith("weight") and before[k].ndim == 2]
    assert all(after[k].shape == before[k].shape for k in before)
    assert all(not torch.allclose(after[k], before[k]) for k in weights)
    assert all(torch.equal(v, _params(tiny_model)[k]) for k, v in before.items())  # original untouched
    same = random_init(tiny_model, seed=0)
    assert all(torch.equal(v, _params(same)[k]) for k, v in after.items())  # seeded
    ids = torch.tensor([[1, 2, 3, 4]])
    out = control.backbone(input_ids=ids, output_attentions=True)
    assert len(out.attentions) == 4


def test_shuffle_is_a_permutation_of_layers(tiny_model):
    control, permutation = shuffle_layers(tiny_model, seed=1)
    assert sorted(permutation) == [0, 1, 2, 3] and permutation != [0, 1, 2, 3]
    assert control.fingerprint != tiny_model.fingerprint
    _, old_layers = layer_stack(tiny_model.backbone, 4)
    _, new_layers = layer_stack(control.backbone, 4)
    for position, source in enumerate(permutation):
        old = old_layers[source].state_dict()
        new = new_layers[position].state_dict()
        assert all(torch.equal(old[k], new[k]) for k in old)
    moved = [i for i, s in enumerate(permutation) if s != i]
    assert moved
    first = moved[0]
    q_old = old_layers[first].state_dict()["attention.self.query.weight"]
    q_new = new_layers[first].state_dict()["attention.self.query.weight"]
    assert not torch.equal(q_old, q_new)
    # everything outside the layer stack is unchanged
    before, after = _params(tiny_model), _params(control)
    assert all(torch.equal(before[k], after[k]) for k in before if not k.startswith("encoder.layer"))


@pytest.mark.parametrize("scale", [0.0, 0.1, 1.0])
def test_noise_has_the_asked_relative_scale(tiny_model, scale):
    control = add_noise(tiny_model, scale, seed=0)
    assert control.fingerprint != tiny_model.fingerprint
    before, after = _params(tiny_model), _params(control)
    for name, old in before.items():
        if old.numel() < 256:
            continue
        delta = after[name] - old
        ratio = float(delta.std() / old.std())
        assert ratio == pytest.approx(scale, rel=0.15, abs=1e-12), name


def test_noise_rejects_negative_scale(tiny_model):
    with pytest.raises(ValueError, match="scale"):
        add_noise(tiny_model, -0.1)
