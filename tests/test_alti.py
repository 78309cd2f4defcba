"""ALTI (olacore.alti): the measure on hand-made cases, the decomposition against the forward pass
of tiny random-weight models of every covered family (fast) and of every zoo model (slow), and
the errors for bad input."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import olacore.alti as alti_module
from alti_reference import contributions_from_vectors, layer_decomposition, supported_model_types
from olacore.alti import alti, alti_rollout, layer_contributions
from olacore.extraction import FAMILIES, family_of
from olacore.loading import LoadedModel
from olacore.pipeline import cached_alti
from olacore.store import TensorStore

SHORT_TEXTS = ["The cat sat on the mat.", "Rain fell all night, so the river rose over the old bridge."]


def max_relative_error(model: LoadedModel, text: str) -> float:
    """Worst per-token ||sum_j T_i(x_j) + bias_i - y_i|| / ||y_i|| over layers (y from the forward)."""
    worst = 0.0
    for layer in layer_decomposition(model, text):
        recon = layer.transformed.double().sum(1) + layer.bias.double()
        output = layer.output.double()
        worst = max(worst, float(((recon - output).norm(dim=-1) / output.norm(dim=-1)).max()))
    return worst


# --------------------------------------------------------------------------------------------
# The measure, hand-made
# --------------------------------------------------------------------------------------------


def test_rows_sum_to_one_and_nonnegative():
    g = torch.Generator().manual_seed(0)
    transformed = torch.randn(5, 5, 7, generator=g, dtype=torch.float64)
    output = transformed.sum(1) + 0.1 * torch.randn(5, 7, generator=g, dtype=torch.float64)
    c = contributions_from_vectors(transformed, output)
    assert (c >= 0).all()
    torch.testing.assert_close(c.sum(-1), torch.ones(5, dtype=torch.float64))


def test_causal_zeros_above_the_diagonal():
    g = torch.Generator().manual_seed(1)
    transformed = torch.randn(6, 6, 4, generator=g)
    c = contributions_from_vectors(transformed, transformed.sum(1), causal=True)
    assert torch.equal(c.triu(1), torch.zeros(6, 6))
    torch.testing.assert_close(c.sum(-1), torch.ones(6))


def test_token_that_is_the_whole_output_gets_everything():
    output = torch.tensor([[1.0, -2.0, 3.0], [0.5, 0.5, -1.0]])
    transformed = torch.zeros(2, 2, 3)
    transformed[0, 1] = output[0]  # token 1 alone makes y_0
    transformed[1, 0] = output[1]  # token 0 alone makes y_1
    c = contributions_from_vectors(transformed, output)
    assert torch.equal(c, torch.tensor([[0.0, 1.0], [1.0, 0.0]]))


def test_hand_computed_l1_proximity():
    # row 0: y_0 = (2, 0), ||y_0||_1 = 2; T_0(x_0) = T_0(x_1) = (1, 0) are at L1 distance 1 -> 2 - 1 = 1
    # each; T_0(x_2) = (0, 3) is at distance 2 + 3 = 5 -> max(0, 2 - 5) = 0. Normalised: 1/2, 1/2, 0.
    # rows 1 and 2: the token itself is the whole output.
    transformed = torch.zeros(3, 3, 2)
    transformed[0] = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 3.0]])
    transformed[1, 1] = torch.tensor([0.0, 1.0])
    transformed[2, 2] = torch.tensor([1.0, 1.0])
    outputs = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    c = contributions_from_vectors(transformed, outputs)
    torch.testing.assert_close(c, torch.tensor([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))


def test_row_without_positive_contribution_becomes_identity_with_warning():
    output = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    transformed = torch.zeros(2, 2, 2)
    transformed[0, :] = torch.tensor([-5.0, 0.0])  # every vector further from y_0 than the origin
    transformed[1, 1] = output[1]
    with pytest.warns(RuntimeWarning, match="no positive contribution"):
        c = contributions_from_vectors(transformed, output)
    assert torch.equal(c, torch.eye(2))


def test_rollout_is_the_ordered_product():
    g = torch.Generator().manual_seed(2)
    layers = torch.rand(3, 4, 4, generator=g, dtype=torch.float64)
    layers = layers / layers.sum(-1, keepdim=True)
    expected = layers[2] @ layers[1] @ layers[0]
    torch.testing.assert_close(alti_rollout(layers), expected)
    assert not torch.allclose(expected, layers[0] @ layers[1] @ layers[2])  # the order matters here
    torch.testing.assert_close(alti_rollout(layers).sum(-1), torch.ones(4, dtype=torch.float64))
    torch.testing.assert_close(alti_rollout(layers[:1]), layers[0])


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("chunk", [10**9, 3 * 5 * 7])  # one block, and blocks of 3 keys
def test_fused_blocks_equal_the_explicit_vectors(causal, chunk, monkeypatch):
    monkeypatch.setattr(alti_module, "_CHUNK_ELEMENTS", chunk)
    g = torch.Generator().manual_seed(3)
    size, heads, dim = 20, 3, 7
    left = torch.rand(size, size, heads + 1, generator=g)
    if causal:  # keys after the query carry nothing
        left = left * torch.ones(size, size).triu()[:, :, None]  # (j, i): zero where j > i
    right = torch.randn(size, heads + 1, dim, generator=g)
    transformed = torch.bmm(left, right).transpose(0, 1)
    output = transformed.sum(1) + 0.3 * torch.randn(size, dim, generator=g)
    expected = contributions_from_vectors(transformed, output, causal=causal)
    torch.testing.assert_close(layer_contributions(left, right, output, causal), expected, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------------------------
# Tiny random-weight models of every covered family (fast)
# --------------------------------------------------------------------------------------------

WORDS = (
    "the cat sat on mat . rain fell all night , so river rose over old bridge a dog ran to "
    "house and then it slept under tree while birds sang loudly in morning"
).split()
CAUSAL_TYPES = {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text"}


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[PAD]": 1}
    for word in WORDS:
        vocab.setdefault(word, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]")


def tiny_model(model_type: str, attn_implementation: str = "eager", seed: int = 0) -> LoadedModel:
    """A 2-layer random-weight base model of ``model_type`` (all weights ~ N(0, 0.3), seed fixed).

    ``"gemma3_text-bidirectional"``: Gemma-3 with ``use_bidirectional_attention`` (EmbeddingGemma)."""
    from transformers import AutoConfig, AutoModel

    bidirectional = model_type.endswith("-bidirectional")
    model_type = model_type.removesuffix("-bidirectional")

    tokenizer = _tokenizer()
    kwargs = dict(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
        max_position_embeddings=64, pad_token_id=1,
    )
    if model_type in CAUSAL_TYPES:
        kwargs.update(num_key_value_heads=2, head_dim=12)  # GQA, and head_dim != hidden / heads
    if model_type == "gpt2":
        kwargs = dict(vocab_size=64, n_embd=32, n_layer=1, n_head=4, n_positions=64)
    if model_type == "electra":
        kwargs.update(embedding_size=16)
    if bidirectional:
        kwargs.update(use_bidirectional_attention=True)
    config = AutoConfig.for_model(model_type, **kwargs)
    torch.manual_seed(seed)
    backbone = AutoModel.from_config(config, attn_implementation=attn_implementation)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in backbone.parameters():  # non-trivial norms and biases everywhere
            parameter.copy_(0.3 * torch.randn(parameter.shape, generator=generator))
    backbone.eval()
    return LoadedModel(
        name=f"tiny-{model_type}", tokenizer=tokenizer, backbone=backbone,
        is_causal=model_type in CAUSAL_TYPES and not bidirectional,
        num_layers=config.num_hidden_layers if hasattr(config, "num_hidden_layers") else 1,
        num_heads=4, max_length=60, device=torch.device("cpu"), fingerprint=f"test:tiny-{model_type}:seed{seed}",
    )


@pytest.mark.parametrize("model_type", supported_model_types())
def test_tiny_model_vectors_sum_to_the_real_block_output(model_type):
    model = tiny_model(model_type)
    for text in SHORT_TEXTS:
        assert max_relative_error(model, text) < 1e-4


def test_bidirectional_gemma3_decomposes_and_attends_both_ways():
    """EmbeddingGemma's architecture: a Gemma-3 whose masks let every token see every other."""
    from olacore.loading import _kind_from_config

    model = tiny_model("gemma3_text-bidirectional")
    assert _kind_from_config(model.backbone.config, "tiny") == "encoder"
    assert _kind_from_config(tiny_model("gemma3_text").backbone.config, "tiny") == "causal"
    for text in SHORT_TEXTS:
        assert max_relative_error(model, text) < 1e-4
    (result,) = alti(model, SHORT_TEXTS[1:], progress=False)
    assert not result.is_causal and result.contributions.triu(1).sum() > 0
    for layer in layer_decomposition(model, SHORT_TEXTS[1]):  # T_i(x_j) of later tokens j > i is not zero
        assert layer.transformed.norm(dim=-1).triu(1).sum() > 0


@pytest.mark.parametrize("model_type", ["llama", "bert", "gemma3_text"])
def test_the_decomposition_check_fails_on_wrong_head_weights(model_type, monkeypatch):
    model = tiny_model(model_type)
    real = alti_module.layer_weights

    def rolled(backbone, family, layer):  # W_O head blocks shifted by one head
        weights = real(backbone, family, layer)
        w_o = weights.w_o.reshape(weights.w_o.shape[0], weights.num_heads, weights.head_dim).roll(1, dims=1)
        return dataclasses.replace(weights, w_o=w_o.reshape(weights.w_o.shape))

    monkeypatch.setattr(alti_module, "layer_weights", rolled)
    assert max_relative_error(model, SHORT_TEXTS[1]) > 1e-2


@pytest.mark.parametrize("model_type", ["llama", "gemma3_text", "bert", "mpnet"])
def test_tiny_model_contributions_and_batching(model_type):
    model = tiny_model(model_type)
    texts = [SHORT_TEXTS[1], SHORT_TEXTS[0], "a dog ran", "a cat sat", "a cow ate"]  # three of one length
    batched = alti(model, texts, progress=False)
    for text, result in zip(texts, batched):
        single = alti(model, [text], progress=False)[0]
        size = len(result.tokens)
        assert result.contributions.shape == (2, size, size) and result.contributions.dtype == torch.float32
        assert torch.equal(result.contributions, single.contributions)  # no padding: bit-identical (#13)
        torch.testing.assert_close(result.contributions.sum(-1), torch.ones(2, size), rtol=0, atol=1e-5)
        torch.testing.assert_close(result.rollout, alti_rollout(result.contributions).float(), rtol=1e-5, atol=1e-6)
        if result.is_causal:
            assert torch.equal(result.contributions.triu(1), torch.zeros(2, size, size))
        else:
            assert result.contributions.triu(1).sum() > 0
        result.contributions += 0  # ordinary tensors, editable outside inference mode


def test_every_family_is_reachable_by_model_type():
    assert {f.name for f in FAMILIES} == {"llama", "qwen2", "gemma", "gemma3", "bert", "mpnet"}
    assert {"llama", "gemma3_text", "qwen2", "bert", "mpnet"} <= set(supported_model_types())


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


def test_uncovered_architecture_names_the_families():
    model = tiny_model("gpt2")
    with pytest.raises(ValueError, match="gpt2"):
        alti(model, SHORT_TEXTS, progress=False)
    with pytest.raises(ValueError, match="does not cover"):
        layer_decomposition(model, SHORT_TEXTS[0])


def test_model_without_eager_attention_says_how_to_load_it():
    model = tiny_model("bert", attn_implementation="sdpa")
    with pytest.raises(RuntimeError, match="eager"):
        alti(model, SHORT_TEXTS, progress=False)


def test_attention_module_without_probabilities_is_reported(monkeypatch):
    model = tiny_model("mpnet")  # MPNet returns probabilities only with output_attentions=True
    family = dataclasses.replace(family_of(model.backbone), needs_output_attentions=False)
    monkeypatch.setattr(alti_module, "family_of", lambda backbone: family)
    # A text within the attention budget gets output_attentions=True for the attention ALTI's pass also gives;
    # over it, ALTI runs alone, asking for probabilities only where its family says so.
    monkeypatch.setenv("OLACORE_ATTENTION_GB", "1e-12")
    with pytest.raises(RuntimeError, match="eager"):
        alti(model, SHORT_TEXTS[:1], progress=False)


def test_text_over_the_context_gives_both_lengths():
    model = tiny_model("bert")
    with pytest.raises(ValueError, match="context"):
        alti(model, ["the cat", "the cat " * 40], progress=False)


def test_bad_text_types():
    model = tiny_model("bert")
    with pytest.raises(TypeError, match="single string"):
        alti(model, SHORT_TEXTS[0], progress=False)
    with pytest.raises(ValueError, match=r"texts\[1\] is empty"):
        cached_alti(model, ["fine", "  "], store=TensorStore("/nonexistent-never-written"))


def test_task_head_model_is_refused():
    from transformers import AutoConfig, AutoModelForSequenceClassification

    model = tiny_model("bert")
    config = AutoConfig.for_model("bert", vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                  intermediate_size=48)
    model.backbone = AutoModelForSequenceClassification.from_config(config, attn_implementation="eager")
    with pytest.raises(ValueError, match="not the module layout"):
        alti(model, SHORT_TEXTS, progress=False)


# --------------------------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------------------------


def test_cached_alti_reads_back_what_it_wrote(tmp_path, monkeypatch):
    model = tiny_model("llama")
    store = TensorStore(tmp_path)
    texts = [SHORT_TEXTS[0], SHORT_TEXTS[1], SHORT_TEXTS[0]]
    first = cached_alti(model, texts, store=store, progress=False)
    assert len(list(tmp_path.rglob("*.safetensors"))) == 4  # per distinct text, its ALTI and its pass's attention

    def no_compute(*args, **kwargs):
        raise AssertionError("cache miss")

    monkeypatch.setattr(alti_module, "_alti_pass", no_compute)  # the pass cached_alti runs
    second = cached_alti(model, texts, store=store, progress=False)
    for a, b in zip(first, second):
        assert (a.tokens, a.offsets, a.is_causal) == (b.tokens, b.offsets, b.is_causal)
        assert torch.equal(a.contributions, b.contributions) and torch.equal(a.rollout, b.rollout)
    assert second[0].contributions is not second[2].contributions  # duplicates are copies
    other = dataclasses.replace(model, fingerprint="test:other-weights")
    with pytest.raises(AssertionError, match="cache miss"):
        cached_alti(other, texts[:1], store=store, progress=False)


# --------------------------------------------------------------------------------------------
# The zoo (slow): one test per architecture
# --------------------------------------------------------------------------------------------

ZOO_MODELS = ["smollm2-135m", "gemma-3-270m", "qwen2.5-0.5b", "minilm-l6", "mpnet-base", "qwen2.5-1.5b",
              "embeddinggemma-300m"]


@pytest.fixture(scope="module")
def zoo_models():
    from olacore.loading import load_model

    cache: dict[str, LoadedModel] = {}

    def get(name: str) -> LoadedModel:
        if name not in cache:
            cache.clear()  # one model in memory at a time
            cache[name] = load_model(name, device="cpu")
        return cache[name]

    return get


@pytest.mark.slow
@pytest.mark.parametrize("name", ZOO_MODELS)
def test_zoo_vectors_sum_to_the_real_block_output(name, zoo_models):
    from olacore.zoo import ZOO
    from olacore.zoo import is_built

    if not ZOO[name].in_book and not is_built(name):
        pytest.skip(f"{name} (outside the book) is not built in the model cache; build it once with: "
                    f"python scripts/build_zoo.py {name}")
    model = zoo_models(name)
    for text in SHORT_TEXTS:
        assert max_relative_error(model, text) < 1e-4
    results = alti(model, SHORT_TEXTS, progress=False)
    for result in results:
        size = len(result.tokens)
        assert result.contributions.shape == (model.num_layers, size, size)
        torch.testing.assert_close(result.contributions.sum(-1), torch.ones(model.num_layers, size), rtol=0, atol=1e-5)
        torch.testing.assert_close(result.rollout.sum(-1), torch.ones(size), rtol=0, atol=1e-5)
        if model.is_causal:
            assert torch.equal(result.contributions.triu(1), torch.zeros_like(result.contributions))
        else:
            assert result.contributions.triu(1).sum() > 0
    single = alti(model, SHORT_TEXTS[:1], progress=False)[0]
    torch.testing.assert_close(single.contributions, results[0].contributions, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_zoo_model_switched_off_eager_is_refused(zoo_models):
    model = zoo_models("minilm-l6")
    model.backbone.set_attn_implementation("sdpa")
    try:
        with pytest.raises(RuntimeError, match="attn_implementation='eager'"):
            alti(model, SHORT_TEXTS, progress=False)
    finally:
        model.backbone.set_attn_implementation("eager")


@pytest.mark.slow
def test_zoo_text_over_the_context(zoo_models):
    with pytest.raises(ValueError, match="context"):
        alti(zoo_models("minilm-l6"), ["word " * 600], progress=False)
