"""The zoo's two large models outside the book (qwen2.5-1.5b, embeddinggemma-300m), loaded by name.

They are downloaded (1.1 GB each) and built by ``python scripts/build_zoo.py NAME``, never by ``make test``: every
test here is slow and skipped, saying how to build the model, where the model cache does not
hold it yet. Their ALTI decomposition is checked with the other zoo models in tests/test_alti.py,
their extraction in tests/test_loading.py (both skipped likewise).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

import build_zoo  # scripts/ is on the path (conftest): the per-part sizes of the downloaded wheels
from olacore.extraction import extract_attention
from olacore.loading import load_model, model_kind
from olacore.zoo import is_built, zoo_folder

pytestmark = pytest.mark.slow

# The sha256 of EmbeddingGemma's model.safetensors as published with the packages (issue 23); the
# zoo checks the joined zip, this checks that the zip holds those weights.
EMBEDDINGGEMMA_WEIGHTS = (1_211_486_072, "cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2")


def built(name: str) -> None:
    """Skip unless ``name`` is built in the model cache (its build downloads about a gigabyte)."""
    if not is_built(name):
        download = sum(size for size, _ in build_zoo.PART_SUMS[name])
        pytest.skip(f"{name} is not built in the model cache (a {download / 1e9:.1f} GB download); "
                    f"build it once with: python scripts/build_zoo.py {name}")


def test_qwen_1_5b_continues_the_capital_of_france_with_paris():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    built("qwen2.5-1.5b")
    folder = zoo_folder("qwen2.5-1.5b")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    assert (model.config.num_hidden_layers, model.config.num_attention_heads, model.config.num_key_value_heads,
            model.config.hidden_size) == (28, 12, 2, 1536)
    inputs = tokenizer("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=6, do_sample=False)
    continuation = tokenizer.decode(out[0, inputs["input_ids"].shape[1]:])
    assert "Paris" in continuation, continuation


def test_qwen_1_5b_loads_by_name_as_a_causal_model():
    built("qwen2.5-1.5b")
    model = load_model("qwen2.5-1.5b", device="cpu")
    assert model.is_causal and model_kind("qwen2.5-1.5b") == "causal"
    assert (model.num_layers, model.num_heads) == (28, 12) and type(model.backbone).__name__ == "Qwen2Model"
    (extraction,) = extract_attention(model, ["The capital of France is Paris."], progress=False)
    assert extraction.tokens[0] == "The"  # no BOS token
    assert torch.triu(extraction.attentions, diagonal=1).abs().max().item() == 0.0


@pytest.fixture(scope="module")
def embeddinggemma():
    built("embeddinggemma-300m")
    return load_model("embeddinggemma-300m", device="cpu")


def test_embeddinggemma_holds_the_published_weights():
    built("embeddinggemma-300m")
    weights = Path(zoo_folder("embeddinggemma-300m")) / "model.safetensors"
    digest = hashlib.sha256()
    with open(weights, "rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    assert (weights.stat().st_size, digest.hexdigest()) == EMBEDDINGGEMMA_WEIGHTS


def test_embeddinggemma_is_a_bidirectional_encoder(embeddinggemma):
    model = embeddinggemma
    assert not model.is_causal and model_kind("embeddinggemma-300m") == "encoder"
    assert model_kind(model.path) == "encoder"  # its folder alone says so too (use_bidirectional_attention)
    assert (model.num_layers, model.num_heads) == (24, 3) and type(model.backbone).__name__ == "Gemma3TextModel"
    assert model.backbone.config.use_bidirectional_attention
    (extraction,) = extract_attention(model, ["The cat sat on the mat because it was warm."], progress=False)
    attentions = extraction.attentions
    size = attentions.shape[-1]
    upper = torch.triu(attentions, diagonal=1).sum(-1)  # (layers, queries): mass on later tokens
    assert (upper[:, : size - 1] > 0.01).float().mean() > 0.5, "most queries attend to later tokens"
    torch.testing.assert_close(attentions.sum(-1), torch.ones(attentions.shape[:2]), atol=1e-5, rtol=0)


def test_embeddinggemma_embeds_a_paraphrase_closer_than_an_unrelated_sentence(embeddinggemma):
    model = embeddinggemma
    texts = ["A man is playing a guitar on stage.", "On stage, a man plays the guitar.",
             "The stock market fell sharply this morning."]
    batch = model.tokenizer(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        hidden = model.backbone(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    pooled = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)  # mean pooling
    paraphrase, unrelated = float(pooled[0] @ pooled[1]), float(pooled[0] @ pooled[2])
    assert paraphrase > unrelated + 0.1, (paraphrase, unrelated)
