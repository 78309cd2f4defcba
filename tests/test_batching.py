"""Equal-length batches without padding (olacore.extraction.run_batched): the bits of one text a pass for
attention and ALTI, the self-test's fallback, the memory budget inside batches, and ONE forward pass per text
serving both ALTI and attention (issue #36)."""

from __future__ import annotations

import random
import warnings

import pytest
import torch

import olacore.alti as alti_module
import olacore.extraction as extraction
from olacore import pipeline
from olacore.alti import _alti_pass, alti
from olacore.extraction import extract_attention, tokenize
from olacore.loading import LoadedModel, load_model
from olacore.pipeline import cached_alti, cached_attention, cached_ola, token_maps
from olacore.store import TensorStore


@pytest.fixture(autouse=True)
def fresh_self_tests(monkeypatch):
    """Every test starts with no self-test verdict in this process."""
    monkeypatch.setattr(extraction, "_BATCHING", {})


@pytest.fixture(scope="module")
def models() -> dict[str, LoadedModel]:
    return {name: load_model(name, device="cpu") for name in ("minilm-l6", "smollm2-135m")}


@pytest.fixture(scope="module")
def pool() -> list[str]:
    from olacore.corpora import read_ewt_syntax

    return [s.text for s in read_ewt_syntax("dev").items[:250]]


def mixed_texts(model: LoadedModel, pool: list[str]) -> list[str]:
    """Real sentences in groups of one token length (short and long ones), a lone length, duplicates, texts of one
    and two tokens, shuffled."""
    by_length: dict[int, list[str]] = {}
    for text, (ids, _, _) in zip(pool, tokenize(model, pool)):
        by_length.setdefault(len(ids), []).append(text)
    groups = [length for length, members in by_length.items() if len(members) >= 3]
    short = [length for length in groups if 4 <= length < 12][:1]
    long = [length for length in groups if length >= 12][:1]
    lone = next(length for length, members in by_length.items() if len(members) == 1)
    texts = [t for length in short + long for t in by_length[length][:3]] + by_length[lone]
    texts += [texts[0], texts[-2], "Hi", "a"]
    random.Random(0).shuffle(texts)
    return texts


class BatchSpy:
    """Wraps extraction's forward pass to record the number of texts in each."""

    def __init__(self, monkeypatch):
        self.sizes: list[int] = []
        real = extraction._forward

        def forward(model, batch, **kwargs):
            self.sizes.append(len(batch))
            return real(model, batch, **kwargs)

        monkeypatch.setattr(extraction, "_forward", forward)
        monkeypatch.setattr(alti_module, "_forward", forward)


_ALONE: dict = {}  # (function, model, text) -> its result alone, computed once for the whole module


def one_at_a_time(compute, model, texts):
    for text in texts:
        if (compute, model.name, text) not in _ALONE:
            _ALONE[compute, model.name, text] = compute(model, [text], progress=False)[0]
    return [_ALONE[compute, model.name, text] for text in texts]


@pytest.mark.parametrize("name", ["minilm-l6", "smollm2-135m"])
def test_batched_attention_has_the_bits_of_one_text_a_pass(name, models, pool, monkeypatch):
    model = models[name]
    texts = mixed_texts(model, pool)
    spy = BatchSpy(monkeypatch)
    together = extract_attention(model, texts, progress=False)
    if name == "smollm2-135m":
        assert max(spy.sizes) > 1  # batches ran (minilm's self-test may fail at some lengths)
    alone = one_at_a_time(extract_attention, model, texts)
    assert [r.text for r in together] == texts  # input order
    for a, b in zip(together, alone):
        assert (a.tokens, a.offsets) == (b.tokens, b.offsets)
        assert torch.equal(a.attentions, b.attentions)
    again = extract_attention(model, texts[::-1], progress=False)[::-1]  # verdicts known now: batches straight away
    assert all(torch.equal(a.attentions, b.attentions) for a, b in zip(again, alone))
    together[0].attentions.mul_(1.0)  # ordinary tensors, editable


@pytest.mark.parametrize("name", ["minilm-l6", "smollm2-135m"])
def test_batched_alti_has_the_bits_of_one_text_a_pass(name, models, pool):
    model = models[name]
    texts = mixed_texts(model, pool)
    together = alti(model, texts, progress=False)
    alone = one_at_a_time(alti, model, texts)
    for a, b in zip(together, alone):
        assert a.text == b.text and a.tokens == b.tokens
        assert torch.equal(a.contributions, b.contributions) and torch.equal(a.rollout, b.rollout)


def test_a_failed_self_test_falls_back_warns_once_and_gives_single_pass_bits(models, pool, monkeypatch):
    model = models["minilm-l6"]
    texts = mixed_texts(model, pool)
    expected = one_at_a_time(extract_attention, model, texts)
    expected_alti = one_at_a_time(alti, model, texts)
    real = extraction._head_means

    def perturbed(model, outputs):  # a machine whose batched rows differ in the last bit
        maps = real(model, outputs)
        return [m + 1e-7 for m in maps] if len(maps) > 1 else maps

    monkeypatch.setattr(extraction, "_head_means", perturbed)
    monkeypatch.setattr(alti_module, "_head_means", perturbed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = extract_attention(model, texts, progress=False)
        second = extract_attention(model, texts, progress=False)
        passes = alti(model, texts, progress=False)
    fallbacks = [w for w in caught if issubclass(w.category, RuntimeWarning) and model.name in str(w.message)]
    assert len(fallbacks) == 1 and "cpu" in str(fallbacks[0].message)
    for a, b, c in zip(first, second, expected):
        assert torch.equal(a.attentions, c.attentions) and torch.equal(b.attentions, c.attentions)
    for a, b in zip(passes, expected_alti):
        assert torch.equal(a.contributions, b.contributions)


def test_texts_under_four_tokens_run_alone(models, monkeypatch):
    model = models["smollm2-135m"]
    texts = ["Hi", "a", "I", "Go now", "Yes sir"]
    assert {len(ids) for ids, _, _ in tokenize(model, texts)} <= {1, 2, 3}
    spy = BatchSpy(monkeypatch)
    together = extract_attention(model, texts, progress=False)
    assert spy.sizes == [1] * len(texts)
    for a, b in zip(together, one_at_a_time(extract_attention, model, texts)):
        assert torch.equal(a.attentions, b.attentions)


def test_the_attention_budget_caps_a_batch_and_refuses_a_text_inside_one(models, monkeypatch):
    model = models["smollm2-135m"]
    texts = [f"The {animal} sat on the old mat by the door." for animal in ("cat", "dog", "cow", "hen", "fox")]
    (length,) = {len(ids) for ids, _, _ in tokenize(model, texts)}
    per_text = model.num_layers * model.num_heads * 4 * length**2
    monkeypatch.setenv("OLACORE_ATTENTION_GB", str(2.5 * per_text / 2**30))  # room for two such texts at once
    spy = BatchSpy(monkeypatch)
    together = extract_attention(model, texts, progress=False)
    assert max(spy.sizes) == 2
    for a, b in zip(together, one_at_a_time(extract_attention, model, texts)):
        assert torch.equal(a.attentions, b.attentions)
    long = "The cat sat on the old mat by the door, and then it slept there all day long."
    with pytest.raises(MemoryError, match=r"texts\[2\]"):
        extract_attention(model, texts[:2] + [long] + texts[2:], progress=False)
    with pytest.raises(ValueError, match=r"texts\[1\].*context"):
        extract_attention(model, [texts[0], "word " * (model.max_length + 5), texts[1]], progress=False)


# ------------------------------------------------------------------------------------------
# One forward pass for ALTI and attention
# ------------------------------------------------------------------------------------------


def test_alti_stores_the_attention_its_pass_gave_as_cache_hits(models, pool, tmp_path, monkeypatch):
    model = models["minilm-l6"]
    texts = mixed_texts(model, pool)[:6]
    store = TensorStore(tmp_path)
    expected = one_at_a_time(extract_attention, model, texts)
    cached_alti(model, texts, store=store, progress=False)

    def no_forward(*args, **kwargs):
        raise AssertionError("a forward pass on a warm cache")

    monkeypatch.setattr(pipeline, "extract_attention", no_forward)
    stored = cached_attention(model, texts, store=store, progress=False)
    for a, b in zip(stored, expected):
        assert (a.tokens, a.offsets, a.is_causal) == (b.tokens, b.offsets, b.is_causal)
        assert torch.equal(a.attentions, b.attentions)
    cached_ola(model, texts, 2, store=store, progress=False)  # OLA is made from the stored attention


def test_token_maps_of_ola_and_alti_run_one_pass_per_text(models, pool, tmp_path, monkeypatch):
    model = models["smollm2-135m"]
    by_length = {len(ids): text for text, (ids, _, _) in zip(pool[:40], tokenize(model, pool[:40]))}
    texts = list(by_length.values())[:3]  # distinct lengths: no batch, no self-test
    spy = BatchSpy(monkeypatch)
    maps = token_maps(model, texts, ("order1", "rollout", "alti"), store=TensorStore(tmp_path), progress=False)
    assert sum(spy.sizes) == len(texts)
    ola = cached_ola(model, texts, 1, store=TensorStore(tmp_path / "other"), progress=False)
    for m, o in zip(maps, ola):
        assert torch.equal(m.maps[0], o.orders[1]) and torch.equal(m.maps[1], o.rollout)


def _attention_of_the_alti_pass_equals_extraction(model: LoadedModel, texts: list[str]) -> None:
    passes = _alti_pass(model, texts, progress=False)
    for result, reference in zip(passes, one_at_a_time(extract_attention, model, texts)):
        assert result.tokens == reference.tokens
        assert torch.equal(result.attentions, reference.attentions)


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "gemma3_text", "bert", "mpnet"])
def test_tiny_models_alti_pass_gives_extractions_attention(model_type):
    from test_alti import tiny_model

    _attention_of_the_alti_pass_equals_extraction(
        tiny_model(model_type), ["a dog ran", "a cat sat", "the river rose over the old bridge", "the sun set"])


@pytest.mark.parametrize("name", [
    "minilm-l6", "smollm2-135m",
    pytest.param("gemma-3-270m", marks=pytest.mark.slow), pytest.param("qwen2.5-0.5b", marks=pytest.mark.slow),
    pytest.param("mpnet-base", marks=pytest.mark.slow)])
def test_zoo_alti_pass_gives_extractions_attention(name, models, pool):
    """One family each: BERT, Llama, Gemma-3, Qwen2, MPNet (skipped where the model is not built)."""
    from olacore.zoo import is_built

    if name not in models and not is_built(name):
        pytest.skip(f"{name} is not built; build it with: python scripts/build_zoo.py {name}")
    model = models.get(name) or load_model(name, device="cpu")
    _attention_of_the_alti_pass_equals_extraction(model, mixed_texts(model, pool)[:8])
