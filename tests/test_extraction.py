"""Attention extraction (olacore.extraction): maps, offsets, batching, errors, the memory budget."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from olacore.extraction import _check_memory, extract_attention, tokenize
from olacore.loading import LoadedModel, load_model

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Attention maps differ.",
    "Order-level attention is shared across language models, the paper says; we check it here.",
    "Hi!",
    "Layers, heads and tokens: three axes of every attention tensor.",
]


@pytest.fixture(scope="module")
def minilm() -> LoadedModel:
    return load_model("minilm-l6", device="cpu")


@pytest.fixture(scope="module")
def smollm() -> LoadedModel:
    return load_model("smollm2-135m", device="cpu")


def _check_maps(extraction, num_layers, causal):
    attentions = extraction.attentions
    size = len(extraction.tokens)
    assert attentions.shape == (num_layers, size, size)
    assert attentions.dtype == torch.float32 and attentions.device.type == "cpu"
    assert len(extraction.offsets) == size
    assert torch.allclose(attentions.sum(-1), torch.ones(num_layers, size), atol=1e-5)
    assert (attentions >= 0).all()
    upper = torch.triu(attentions, diagonal=1).abs().max().item()
    if causal:
        assert upper == 0.0
    else:
        assert upper > 0.01


def _check_offsets(text, extraction, special):
    last_end = 0
    for token, (start, end) in zip(extraction.tokens, extraction.offsets):
        if token in special:
            assert (start, end) == (0, 0)
            continue
        assert 0 <= start <= end <= len(text)
        assert start >= last_end - 1  # spans move forward (byte-level BPE may share one char)
        span = text[start:end]
        assert span == span.strip(), "offsets are trimmed of whitespace"
        last_end = end
    covered = set()
    for start, end in extraction.offsets:
        covered.update(range(start, end))
    assert all(i in covered for i, char in enumerate(text) if not char.isspace()), "every visible char is in a token"


@pytest.mark.slow
def test_minilm_extraction(minilm):
    results = extract_attention(minilm, TEXTS, progress=False)
    assert [r.text for r in results] == TEXTS
    for text, extraction in zip(TEXTS, results):
        _check_maps(extraction, 6, causal=False)
        assert extraction.tokens[0] == "[CLS]" and extraction.tokens[-1] == "[SEP]"
        _check_offsets(text, extraction, {"[CLS]", "[SEP]"})
        for token, (start, end) in zip(extraction.tokens[1:-1], extraction.offsets[1:-1]):
            assert text[start:end].lower() == token.removeprefix("##")


@pytest.mark.slow
def test_smollm_extraction(smollm):
    results = extract_attention(smollm, TEXTS, progress=False)
    for text, extraction in zip(TEXTS, results):
        _check_maps(extraction, 30, causal=True)
        # SmolLM2's GGUF tokenizer adds no BOS: the first token is the text's own.
        assert extraction.offsets[0][0] == 0 and extraction.offsets[0][1] > 0
        _check_offsets(text, extraction, set())
        for token, (start, end) in zip(extraction.tokens, extraction.offsets):
            assert smollm.tokenizer.convert_tokens_to_string([token]).strip() == text[start:end]


@pytest.mark.slow
def test_tokenize_agrees_with_extraction(minilm):
    encoded = tokenize(minilm, TEXTS[:2])
    extracted = extract_attention(minilm, TEXTS[:2], progress=False)
    for (ids, tokens, offsets), extraction in zip(encoded, extracted):
        assert len(ids) == len(tokens) == extraction.attentions.shape[-1]
        assert tokens == extraction.tokens and offsets == extraction.offsets


@pytest.mark.slow
@pytest.mark.parametrize("which", ["minilm", "smollm"])
def test_batched_equals_one_by_one(which, request):
    model = request.getfixturevalue(which)
    batched = extract_attention(model, TEXTS, progress=False)
    for text, together in zip(TEXTS, batched):
        (alone,) = extract_attention(model, [text], progress=False)
        assert alone.tokens == together.tokens and alone.offsets == together.offsets
        assert alone.attentions.shape == together.attentions.shape
        assert torch.equal(alone.attentions, together.attentions)
    # Results are ordinary tensors the caller may edit in place.
    batched[0].attentions.mul_(1.0)


@pytest.mark.slow
def test_empty_text_names_index(minilm):
    with pytest.raises(ValueError, match=r"texts\[2\]"):
        extract_attention(minilm, ["fine", "also fine", "   \n"], progress=False)
    with pytest.raises(ValueError, match=r"texts\[0\]"):
        extract_attention(minilm, [""], progress=False)
    with pytest.raises(TypeError, match="single string"):
        extract_attention(minilm, "not a list", progress=False)


@pytest.mark.slow
def test_too_long_text_gives_lengths(minilm):
    text = "word " * 600
    with pytest.raises(ValueError, match=r"texts\[1\].*602.*512"):
        extract_attention(minilm, ["short", text], progress=False)


def test_attention_memory_budget_refuses_huge_texts(monkeypatch):
    model = SimpleNamespace(name="toy", num_layers=2, num_heads=4)  # 32 bytes per T^2 cell
    monkeypatch.setenv("OLACORE_ATTENTION_GB", str(32 * 100**2 / 2**30))  # room for one text of 100
    _check_memory(model, 100, 0)
    with pytest.raises(MemoryError, match=r"texts\[3\] \(101 tokens\)"):
        _check_memory(model, 101, 3)


def _texts(count: int) -> list[str]:
    """EWT chunks of 50 words, and short UD sentences (where even equal-length batches differed)."""
    from olacore.texts import similarity_texts
    from olacore.corpora import read_ewt_syntax

    short = [s.text for s in read_ewt_syntax("dev").items[:60] if len(s.words) <= 8]
    return [t.text for t in similarity_texts(count)] + short[:count]


@pytest.mark.slow
@pytest.mark.parametrize("which", ["minilm", "smollm"])
def test_a_texts_attention_does_not_depend_on_the_other_texts(which, request):
    """Issue #13: cached maps must not depend on which texts were missing from the cache.

    Extracting the texts at once, in two calls (as chapter 02 then chapter 03 do), in reverse
    order, and one by one gives bit-identical attention for every text.
    """
    model = request.getfixturevalue(which)
    texts = _texts(8)
    together = extract_attention(model, texts, progress=False)
    split = extract_attention(model, texts[:5], progress=False) + extract_attention(model, texts[5:], progress=False)
    backwards = extract_attention(model, texts[::-1], progress=False)[::-1]
    for index, text in enumerate(texts):
        (alone,) = extract_attention(model, [text], progress=False)
        for other in (together[index], split[index], backwards[index]):
            assert other.tokens == alone.tokens
            assert torch.equal(other.attentions, alone.attentions), f"text {index} differs in its last bits"


@pytest.mark.slow
def test_attention_does_not_depend_on_the_thread_count(minilm):
    texts = _texts(4)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = extract_attention(minilm, texts, progress=False)
        torch.set_num_threads(2)
        two = extract_attention(minilm, texts, progress=False)
    finally:
        torch.set_num_threads(before)
    assert all(torch.equal(a.attentions, b.attentions) for a, b in zip(one, two))


@pytest.mark.parametrize("model_type", ["llama", "bert", "gemma3_text", "mpnet"])
def test_tiny_models_give_each_text_the_same_bits_in_any_company(model_type):
    """The case that ruled out batches of equal length: in these small models a text's last bits
    changed with the number of texts beside it even without padding (three texts of 3 tokens)."""
    from test_alti import tiny_model

    model = tiny_model(model_type)
    texts = ["a dog ran", "a cat sat", "a cow ate", "the river rose over the old bridge"]
    together = extract_attention(model, texts, progress=False)
    for text, result in zip(texts, together):
        (alone,) = extract_attention(model, [text], progress=False)
        assert torch.equal(result.attentions, alone.attentions)


@pytest.mark.slow
def test_extraction_in_worker_processes_equals_in_process():
    from olacore.workers import per_text

    texts = [f"The {word} sat on the mat while the dog slept." for word in ("cat", "old fox", "bird", "child", "man")]
    here = extract_attention(load_model("minilm-l6", device="cpu"), texts, progress=False)
    there = per_text(extract_attention, "minilm-l6", texts, device="cpu", workers=2, progress=False)
    for a, b in zip(here, there):
        assert a.tokens == b.tokens and a.offsets == b.offsets
        assert torch.equal(a.attentions, b.attentions)  # bit for bit: each text alone, one thread


@pytest.fixture(scope="module")
def gemma() -> LoadedModel:
    return load_model("gemma-3-270m", device="cpu")


@pytest.mark.slow
@pytest.mark.parametrize("which, text, spelled", [
    ("minilm", "Press [SEP] to continue.", ["[SEP]"]),          # BERT WordPiece: CLS ... SEP
    ("gemma", "Type <bos> or <eos> here.", ["<bos>", "<eos>"]),  # Gemma SentencePiece: BOS ...
    ("smollm", "Say <|endoftext|> now.", ["<|endoftext|>"]),     # GPT-2 style BPE, no BOS
])
def test_a_special_tokens_spelling_in_the_text_is_text(which, text, spelled, request):
    model = request.getfixturevalue(which)
    special_ids = set(model.tokenizer.all_special_ids)
    (ids, tokens, offsets), (plain_ids, _, _) = tokenize(model, [text, "Press stop to continue."])
    # the tokenizer's own special tokens, exactly where it adds them for any text
    plain = [i in special_ids for i in plain_ids]
    lead, trail = plain.index(False), plain[::-1].index(False)  # e.g. 1, 1 for BERT; 1, 0 for Gemma
    assert [i in special_ids for i in ids] == [True] * lead + [False] * (len(ids) - lead - trail) + [True] * trail
    # the characters of each spelled token are covered by ordinary tokens of the text
    for word in spelled:
        start = text.index(word)
        covering = [k for k, (a, b) in enumerate(offsets) if a < start + len(word) and b > start]
        assert covering and all(ids[k] not in special_ids for k in covering)
    (extraction,) = extract_attention(model, [text], progress=False)
    assert extraction.tokens == tokens


@pytest.mark.slow
@pytest.mark.parametrize("which", ["minilm", "gemma", "smollm"])
def test_ordinary_texts_tokenize_as_the_tokenizer_does(which, request):
    model = request.getfixturevalue(which)
    for (ids, _, _), text in zip(tokenize(model, TEXTS), TEXTS):
        assert ids == model.tokenizer(text, add_special_tokens=True)["input_ids"]
