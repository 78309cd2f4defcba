"""Tests of the on-disk tensor store and the attention / OLA caches (olacore.cache).

Every store here lives in ``tmp_path``; model weights come from ``$OLACORE_CACHE`` as it is
(see tests/test_models.py).
"""

from __future__ import annotations

import warnings

import pytest
import torch

from olacore import cache
from olacore.cache import (
    CacheCorruptionWarning,
    OLAResult,
    TensorStore,
    cached_attention,
    cached_ola,
)
from olacore.models import LoadedModel, extract_attention, load_model
from olacore.ola import attention_rollout, order_level_attention

TEXTS = [
    "The cat sat on the mat.",
    "Caching makes warm notebooks fast.",
    "A third, slightly longer sentence for the batch.",
]


# ------------------------------------------------------------------------------------------
# TensorStore
# ------------------------------------------------------------------------------------------


def _entry():
    generator = torch.Generator().manual_seed(0)
    return {
        "attentions": torch.rand(3, 5, 5, generator=generator),
        "ids": torch.arange(7),
    }, {"tokens": ["a", "b"], "offsets": [[0, 1], [2, 3]], "is_causal": True}


def test_key_is_canonical_and_sensitive():
    key = TensorStore.key(model="m", text="t", settings={"a": 1, "b": [1, 2]})
    assert key == TensorStore.key(settings={"b": [1, 2], "a": 1}, text="t", model="m")
    assert len(key) == 64 and int(key, 16) >= 0
    assert key != TensorStore.key(model="m", text="t ", settings={"a": 1, "b": [1, 2]})
    assert key != TensorStore.key(model="m2", text="t", settings={"a": 1, "b": [1, 2]})
    assert key != TensorStore.key(model="m", text="t", settings={"a": 2, "b": [1, 2]})
    with pytest.raises(TypeError):
        TensorStore.key(model=object())


def test_round_trip_and_no_temporary_files(tmp_path):
    store = TensorStore(tmp_path)
    tensors, meta = _entry()
    key = store.key(test="round trip")
    assert store.get(key) is None and key not in store
    path = store.put(key, tensors, meta)
    assert path == store.path(key) and path.is_file() and key in store
    got, got_meta = store.get(key)
    assert got_meta == meta
    assert set(got) == set(tensors)
    for name in tensors:
        assert torch.equal(got[name], tensors[name]) and got[name].dtype == tensors[name].dtype
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p != path]
    store.delete(key)
    assert store.get(key) is None


def test_default_root_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("OLACORE_CACHE", str(tmp_path / "somewhere"))
    assert TensorStore().root == tmp_path / "somewhere" / "tensors"


def _corrupt_truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corrupt_flip_data(path):
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # inside the tensor bytes: only the checksum can tell
    path.write_bytes(bytes(data))


def _corrupt_header(path):
    data = bytearray(path.read_bytes())
    data[8:20] = b"not json!!!!"
    path.write_bytes(bytes(data))


def _corrupt_empty(path):
    path.write_bytes(b"")


def _corrupt_huge_header(path):
    data = bytearray(path.read_bytes())
    data[:8] = (10**12).to_bytes(8, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "corrupt", [_corrupt_truncate, _corrupt_flip_data, _corrupt_header, _corrupt_empty, _corrupt_huge_header]
)
def test_corrupt_entry_is_detected_and_deleted(tmp_path, corrupt):
    store = TensorStore(tmp_path)
    tensors, meta = _entry()
    key = store.key(test="corrupt")
    path = store.put(key, tensors, meta)
    corrupt(path)
    with pytest.warns(CacheCorruptionWarning, match="corrupt or partial"):
        assert store.get(key) is None
    assert not path.exists()
    store.put(key, tensors, meta)  # and it can be written again
    assert torch.equal(store.get(key)[0]["attentions"], tensors["attentions"])


def test_entry_without_checksum_is_not_trusted(tmp_path):
    from safetensors.torch import save_file

    store = TensorStore(tmp_path)
    key = store.key(test="foreign")
    store.path(key).parent.mkdir(parents=True)
    save_file({"x": torch.zeros(2)}, store.path(key))  # valid safetensors, but not ours
    with pytest.warns(CacheCorruptionWarning):
        assert store.get(key) is None


# ------------------------------------------------------------------------------------------
# Cached attention and OLA on a real model (minilm loads in seconds)
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> LoadedModel:
    return load_model("minilm-l6", device="cpu")


class _Counter:
    """Wrap load_model / extract_attention to count calls, or forbid them."""

    def __init__(self, function, allowed=True):
        self.function, self.allowed, self.calls, self.texts = function, allowed, 0, 0

    def __call__(self, *args, **kwargs):
        if not self.allowed:
            raise AssertionError(f"{self.function.__name__} called on a warm cache")
        self.calls += 1
        if len(args) > 1:
            self.texts += len(args[1])
        return self.function(*args, **kwargs)


def _spy(monkeypatch, allowed=True):
    loads = _Counter(load_model, allowed)
    extracts = _Counter(extract_attention, allowed)
    monkeypatch.setattr(cache, "load_model", loads)
    monkeypatch.setattr(cache, "extract_attention", extracts)
    return loads, extracts


@pytest.mark.slow
def test_cached_attention_warm_run_loads_nothing(tmp_path, monkeypatch, minilm):
    store = TensorStore(tmp_path)
    loads, extracts = _spy(monkeypatch)
    cold = cached_attention("minilm-l6", TEXTS, store=store, progress=False, device="cpu")
    assert (loads.calls, extracts.calls, extracts.texts) == (1, 1, len(TEXTS))
    direct = extract_attention(minilm, TEXTS, progress=False)
    for a, b in zip(cold, direct):
        assert a.tokens == b.tokens and a.offsets == b.offsets
        torch.testing.assert_close(a.attentions, b.attentions, atol=1e-6, rtol=0)

    _spy(monkeypatch, allowed=False)
    warm = cached_attention("minilm-l6", TEXTS, store=store, progress=False)
    for a, b in zip(cold, warm):
        assert (a.text, a.tokens, a.offsets) == (b.text, b.tokens, b.offsets)
        assert torch.equal(a.attentions, b.attentions)
        assert isinstance(b.offsets[0], tuple)

    # A LoadedModel with the same fingerprint shares the entries; a new text alone is computed.
    loads, extracts = _spy(monkeypatch)
    more = cached_attention(minilm, TEXTS + ["A new text."], store=store, progress=False)
    assert (loads.calls, extracts.texts) == (0, 1)
    assert torch.equal(more[0].attentions, cold[0].attentions)


@pytest.mark.slow
def test_cached_attention_duplicates_and_order(tmp_path, minilm):
    texts = [TEXTS[1], TEXTS[0], TEXTS[1]]
    results = cached_attention(minilm, texts, store=TensorStore(tmp_path), progress=False)
    assert [r.text for r in results] == texts
    assert torch.equal(results[0].attentions, results[2].attentions)
    assert results[0].attentions is not results[2].attentions


@pytest.mark.slow
def test_corrupt_attention_entry_is_rebuilt(tmp_path, monkeypatch, minilm):
    store = TensorStore(tmp_path)
    first = cached_attention(minilm, TEXTS, store=store, progress=False)
    files = sorted(tmp_path.rglob("*.safetensors"))
    assert len(files) == len(TEXTS)
    _corrupt_truncate(files[0])
    _corrupt_flip_data(files[1])
    loads, extracts = _spy(monkeypatch)
    with pytest.warns(CacheCorruptionWarning):
        second = cached_attention(minilm, TEXTS, store=store, progress=False)
    assert extracts.texts == 2
    for a, b in zip(first, second):
        torch.testing.assert_close(a.attentions, b.attentions, atol=1e-6, rtol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheCorruptionWarning)
        cached_attention(minilm, TEXTS, store=store, progress=False)  # clean again


@pytest.mark.slow
def test_cached_ola_matches_ola_and_is_self_sufficient(tmp_path, monkeypatch, minilm):
    store = TensorStore(tmp_path)
    results = cached_ola("minilm-l6", TEXTS, 3, store=store, progress=False, device="cpu")
    attention = cached_attention("minilm-l6", TEXTS, store=store, progress=False)
    for result, extraction in zip(results, attention):
        assert isinstance(result, OLAResult)
        assert (result.text, result.tokens, result.offsets) == (extraction.text, extraction.tokens, extraction.offsets)
        assert result.is_causal is False and result.num_layers == 6
        size = len(result.tokens)
        assert result.orders.shape == (4, size, size) and result.orders.dtype == torch.float32
        assert result.rollout.shape == (size, size) and result.rollout.dtype == torch.float32
        expected = order_level_attention(extraction.attentions.double(), 3).float()
        torch.testing.assert_close(result.orders, expected, atol=1e-6, rtol=0)
        torch.testing.assert_close(result.rollout, attention_rollout(extraction.attentions.double()).float(), atol=1e-6, rtol=0)
        torch.testing.assert_close(result.orders.sum(-1), torch.ones(4, size), atol=1e-5, rtol=0)

    # Warm: no model, no extraction, and no attention entry read.
    for path in list(tmp_path.rglob("*.safetensors")):
        meta = TensorStore(tmp_path).get(path.stem)[1]
        if "num_layers" not in meta:  # an attention entry
            path.unlink()
    _spy(monkeypatch, allowed=False)
    monkeypatch.setattr(cache, "cached_attention", _Counter(cached_attention, allowed=False))
    warm = cached_ola("minilm-l6", TEXTS, 3, store=store, progress=False)
    lower = cached_ola("minilm-l6", TEXTS, 1, store=store, progress=False)  # sliced from the entry
    for a, b, c in zip(results, warm, lower):
        assert torch.equal(a.orders, b.orders) and torch.equal(a.rollout, b.rollout)
        assert torch.equal(c.orders, a.orders[:2])
    with pytest.raises(ValueError, match="N=6"):
        cached_ola("minilm-l6", TEXTS, 7, store=store, progress=False)


@pytest.mark.slow
def test_cached_ola_higher_order_recomputes(tmp_path, minilm):
    store = TensorStore(tmp_path)
    low = cached_ola(minilm, TEXTS[:1], 1, store=store, progress=False)
    high = cached_ola(minilm, TEXTS[:1], 4, store=store, progress=False)
    assert high[0].orders.shape[0] == 5
    torch.testing.assert_close(high[0].orders[:2], low[0].orders, atol=1e-6, rtol=0)
    again = cached_ola(minilm, TEXTS[:1], 2, store=store, progress=False)
    assert torch.equal(again[0].orders, high[0].orders[:3])


@pytest.mark.slow
def test_cached_ola_causal_model(tmp_path):
    # By name: is_causal comes from the zoo, the maps are lower-triangular.
    (result,) = cached_ola("smollm2-135m", ["Short causal text."], 2, store=TensorStore(tmp_path), progress=False)
    assert result.is_causal is True and result.num_layers == 30
    assert torch.triu(result.orders[1:], diagonal=1).abs().max() == 0
    assert torch.triu(result.rollout, diagonal=1).abs().max() == 0


def test_errors_before_any_model_is_loaded(tmp_path, monkeypatch):
    _spy(monkeypatch, allowed=False)
    store = TensorStore(tmp_path)
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        cached_attention("minilm-l6", ["ok", " "], store=store)
    with pytest.raises(ValueError, match=r"texts\[0\]"):
        cached_ola("minilm-l6", [""], 1, store=store)
    with pytest.raises(ValueError, match="minilm-l6"):
        cached_attention("not a model!", ["ok"], store=store)
    with pytest.raises(ValueError, match=">= 0"):
        cached_ola("minilm-l6", ["ok"], -1, store=store)
    with pytest.raises(TypeError):
        cached_ola("minilm-l6", ["ok"], 1.5, store=store)
    with pytest.raises(TypeError, match="single string"):
        cached_attention("minilm-l6", "ok", store=store)
