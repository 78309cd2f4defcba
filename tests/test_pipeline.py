"""The cached pipeline (olacore.pipeline): attention, OLA and token maps of named channels.

Every store here lives in ``tmp_path``; model weights come from ``$OLACORE_CACHE`` as it is
(see tests/test_loading.py).
"""

from __future__ import annotations

import warnings

import pytest
import torch

from olacore import channels, pipeline
from olacore.extraction import extract_attention
from olacore.loading import LoadedModel, load_model
from olacore.ola import attention_rollout, order_level_attention
from olacore.pipeline import OLAResult, TokenMaps, cached_attention, cached_ola, token_maps
from olacore.store import CacheCorruptionWarning, TensorStore

TEXTS = [
    "The cat sat on the mat.",
    "Caching makes warm notebooks fast.",
    "A third, slightly longer sentence for the batch.",
]


def _corrupt_truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corrupt_flip_data(path):
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))


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
    monkeypatch.setattr("olacore.loading.load_model", loads)  # olacore.workers.per_text loads through it
    monkeypatch.setattr(pipeline, "extract_attention", extracts)
    return loads, extracts


# ------------------------------------------------------------------------------------------
# cached_attention and cached_ola on a real model (minilm loads in seconds)
# ------------------------------------------------------------------------------------------


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
    monkeypatch.setattr(pipeline, "cached_attention", _Counter(cached_attention, allowed=False))
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


# ------------------------------------------------------------------------------------------
# token_maps: each named channel taken from its source
# ------------------------------------------------------------------------------------------


def test_token_maps_refuses_bad_channels_before_any_model_is_loaded(tmp_path, monkeypatch):
    _spy(monkeypatch, allowed=False)
    store = TensorStore(tmp_path)
    with pytest.raises(ValueError, match=r"order<k>.*layer<n>.*rollout"):
        token_maps("minilm-l6", ["ok"], ["order1", "attention"], store=store)
    with pytest.raises(ValueError, match="repeated"):
        token_maps("minilm-l6", ["ok"], ["order1", "order1"], store=store)
    with pytest.raises(ValueError, match="no channel"):
        token_maps("minilm-l6", ["ok"], [], store=store)
    with pytest.raises(ValueError, match=r"texts\[0\]"):
        token_maps("minilm-l6", [" "], ["order1"], store=store)
    # a channel whose source nobody produces
    monkeypatch.setitem(channels._REGISTRY, "orphan", channels.Channel("orphan", "orphan", "nowhere", lambda r: r.maps))
    with pytest.raises(ValueError, match="nowhere"):
        token_maps("minilm-l6", ["ok"], ["orphan"], store=store)


@pytest.mark.slow
def test_token_maps_take_every_channel_from_its_source(tmp_path, monkeypatch, minilm):
    store = TensorStore(tmp_path)
    names = ("layer2", "order3", "rollout", "order1")  # mixed sources, not in order
    maps = token_maps(minilm, TEXTS, names, store=store, progress=False)
    ola = cached_ola(minilm, TEXTS, 3, store=store, progress=False)
    attention = cached_attention(minilm, TEXTS, store=store, progress=False)
    for item, result, extraction in zip(maps, ola, attention):
        assert isinstance(item, TokenMaps)
        assert (item.text, item.tokens, item.offsets) == (result.text, result.tokens, result.offsets)
        assert item.channels == names and item.model == "minilm-l6" and item.causal is False
        size = len(item.tokens)
        assert item.maps.shape == (4, size, size) and item.maps.dtype == torch.float32
        assert torch.equal(item.maps[0], extraction.attentions[1])  # layer 2: the second layer
        assert torch.equal(item.maps[1], result.orders[3])
        assert torch.equal(item.maps[2], result.rollout)
        assert torch.equal(item.maps[3], result.orders[1])
    # warm: by name, nothing loaded
    _spy(monkeypatch, allowed=False)
    again = token_maps("minilm-l6", TEXTS, names, store=store, progress=False)
    assert all(torch.equal(a.maps, b.maps) for a, b in zip(maps, again))
    with pytest.raises(ValueError, match="layer 7 does not exist"):
        token_maps("minilm-l6", TEXTS[:1], ["layer7"], store=store, progress=False)


@pytest.mark.slow
def test_token_maps_refuses_an_order_above_the_depth(tmp_path, minilm):
    with pytest.raises(ValueError, match="N=6"):
        token_maps(minilm, TEXTS[:1], ["order7"], store=TensorStore(tmp_path), progress=False)


def test_ola_entries_are_keyed_by_how_attention_was_extracted(minilm, tmp_path, monkeypatch):
    """OLA is made of attention: an extraction change (e.g. issue #13's unpadded batches) must miss."""
    store = TensorStore(tmp_path)
    (before,) = cached_ola(minilm, TEXTS[:1], 1, store=store, progress=False)
    monkeypatch.setitem(pipeline.EXTRACTION_SETTINGS, "batches", "some other rule")
    calls = []
    real = pipeline.extract_attention
    monkeypatch.setattr(pipeline, "extract_attention", lambda *a, **k: calls.append(1) or real(*a, **k))
    (after,) = cached_ola(minilm, TEXTS[:1], 1, store=store, progress=False)
    assert calls == [1]  # recomputed, not read back
    assert torch.equal(before.orders, after.orders)  # (the same numbers: the rule changed only the key here)


@pytest.mark.slow
def test_cached_maps_do_not_depend_on_which_texts_were_missing(minilm, tmp_path):
    """Issue #13: chapter 02 caches some texts, chapter 03 the rest; a cold run caches all at once."""
    from olacore.texts import similarity_texts

    texts = [t.text for t in similarity_texts(12)]
    cold = cached_ola(minilm, texts, 2, store=TensorStore(tmp_path / "cold"), progress=False)
    staged = TensorStore(tmp_path / "staged")
    cached_ola(minilm, texts[:5], 2, store=staged, progress=False)
    warm = cached_ola(minilm, texts, 2, store=staged, progress=False)
    for a, b in zip(cold, warm):
        assert torch.equal(a.orders, b.orders) and torch.equal(a.rollout, b.rollout)


@pytest.mark.parametrize("call", ["attention", "ola", "maps"])
@pytest.mark.parametrize("change, error, named", [
    ({"texts": ["fine", "caf\udce9 au lait"]}, ValueError, "texts[1]"),  # an undecodable byte, as Python reads it
    ({"workers": "2"}, TypeError, "workers"),
    ({"workers": 0}, ValueError, "workers"),
    ({"device": "gpu"}, RuntimeError, "'gpu'"),
])
def test_inputs_that_failed_late_are_refused_where_handed_in_naming_the_argument(tmp_path, call, change, error, named):
    """Each was found only by an internal step (the cache key's JSON, a pool, torch), or not at all
    on a cache hit; now the public function names the argument before any model is loaded."""
    arguments = {"texts": ["fine", "also fine"], "workers": 1, "device": "cpu", **change}
    store = TensorStore(tmp_path)
    run = {"attention": lambda: cached_attention("no-such-model", arguments["texts"], workers=arguments["workers"],
                                                 device=arguments["device"], progress=False, store=store),
           "ola": lambda: cached_ola("no-such-model", arguments["texts"], 1, workers=arguments["workers"],
                                     device=arguments["device"], progress=False, store=store),
           "maps": lambda: token_maps("no-such-model", arguments["texts"], ("order1",), workers=arguments["workers"],
                                      device=arguments["device"], progress=False, store=store)}[call]
    with pytest.raises(error) as refused:  # an unknown model would be a ValueError naming the zoo
        run()
    assert named in str(refused.value) and "zoo" not in str(refused.value)
