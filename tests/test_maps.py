"""The typed maps (olacore.maps): every alignment x sink handling of make_maps, channel layout,
selection, and the errors; model_maps on a real model."""

from __future__ import annotations

import pytest
import torch

from conftest import random_attention, store_in
from olacore import pipeline
from olacore.texts import WordText, first_subtoken_maps, pool_to_words, resize_maps
from olacore.maps import ALIGNMENTS, SINKS, Maps, make_maps, model_maps
from olacore.pipeline import TokenMaps
from olacore.maps import clean_sinks

CHANNELS = ("order1", "order2", "rollout")
SIZE = 16


def _text(num_words: int) -> WordText:
    return WordText.of(" ".join(f"w{i}" for i in range(num_words)))


def _token_maps(words: WordText, seed: int, *, causal: bool = False, model: str = "toy",
                channels=CHANNELS) -> TokenMaps:
    """One special token, then each word "wN" split in two tokens "w" + "N"; different maps per channel."""
    offsets, tokens = [(0, 0)], ["<s>"]
    for (start, end), word in zip(words.spans, words.words):
        offsets += [(start, start + 1), (start + 1, end)]
        tokens += [word[:1], word[1:]]
    size = len(offsets)
    maps = random_attention(torch.Generator().manual_seed(seed), 1, len(channels), size, causal, torch.float32)[0]
    maps = maps ** torch.arange(1, len(channels) + 1, dtype=torch.float32).view(-1, 1, 1)  # channels differ in kind
    maps = maps / maps.sum(-1, keepdim=True)
    return TokenMaps(text=words.text, tokens=tokens, offsets=offsets, causal=causal, model=model,
                     channels=tuple(channels), maps=maps)


def _inputs(causal: bool = False, counts=(9, 12, 7)):
    words = [_text(n) for n in counts]
    return [_token_maps(w, seed, causal=causal) for seed, w in enumerate(words)], words


def _align(maps: torch.Tensor, item: TokenMaps, words: WordText, align: str) -> torch.Tensor:
    if align == "resize":
        return resize_maps(maps, SIZE)
    if align == "words":
        return pool_to_words(maps, item.offsets, words.spans)
    return first_subtoken_maps(maps, item.offsets, words.spans)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("sinks", SINKS)
@pytest.mark.parametrize("align", ALIGNMENTS)
def test_channel_i_is_the_named_token_channel_after_sinks_and_alignment(align, sinks, causal):
    items, words = _inputs(causal)
    maps = make_maps(items, align=align, sinks=sinks, size=SIZE, words=words)
    assert isinstance(maps, Maps) and len(maps) == len(items)
    assert (maps.channels, maps.causal, maps.model, maps.align, maps.sinks) == (CHANNELS, causal, "toy", align, sinks)
    assert maps.size == (SIZE if align == "resize" else None)
    assert maps.texts == tuple(w.text for w in words)
    copies = ("raw", "clean") if sinks == "raw+clean" else (sinks,)
    assert maps.layout() == [(c, s) for s in copies for c in CHANNELS]
    for tensor, item, text in zip(maps.tensors, items, words):
        side = SIZE if align == "resize" else len(text.words)
        assert tensor.shape == (len(copies) * len(CHANNELS), side, side) and tensor.dtype == torch.float32
        for position, (name, handling) in enumerate(maps.layout()):
            token_level = item.maps[item.channels.index(name)]
            if handling == "clean":
                token_level = clean_sinks(token_level, causal=causal, stats="row")
            expected = _align(token_level, item, text, align)
            torch.testing.assert_close(tensor[position], expected, atol=1e-7, rtol=0)
            for other in range(tensor.shape[0]):  # and no other entry of the axis would pass
                if other != position:
                    assert not torch.allclose(tensor[other], expected, atol=1e-7, rtol=0)


def test_labels_and_panels_follow_the_layout():
    items, words = _inputs()
    raw = make_maps(items, sinks="raw", size=SIZE)
    assert raw.labels() == ["order 1", "order 2", "rollout"]
    both = make_maps(items, sinks="raw+clean", size=SIZE)
    assert both.labels() == ["order 1 (raw)", "order 2 (raw)", "rollout (raw)",
                             "order 1 (clean)", "order 2 (clean)", "rollout (clean)"]
    panels = both.panels(1)
    assert list(panels) == both.labels()
    assert torch.equal(panels["rollout (clean)"], both.tensors[1][5])


@pytest.mark.parametrize("sinks", SINKS)
def test_select_by_name_keeps_the_right_data(sinks):
    items, words = _inputs()
    maps = make_maps(items, align="words", sinks=sinks, words=words)
    picked = maps.select("rollout", "order1")
    assert picked.channels == ("rollout", "order1")
    copies = ("raw", "clean") if sinks == "raw+clean" else (sinks,)
    assert picked.layout() == [(c, s) for s in copies for c in ("rollout", "order1")]
    source_position = {entry: i for i, entry in enumerate(maps.layout())}
    for full, small in zip(maps.tensors, picked.tensors):
        assert small.shape[0] == len(picked.layout())
        for position, entry in enumerate(picked.layout()):
            assert torch.equal(small[position], full[source_position[entry]])
    assert (picked.align, picked.sinks, picked.texts, picked.model) == (maps.align, maps.sinks, maps.texts, maps.model)
    with pytest.raises(ValueError, match="order3"):
        maps.select("order3")
    with pytest.raises(ValueError):
        maps.select()


def test_stack():
    items, words = _inputs()
    resized = make_maps(items, size=SIZE)
    assert resized.stack().shape == (3, 3, SIZE, SIZE)
    pooled = make_maps(items, align="words", words=words)
    with pytest.raises(ValueError, match="different sizes"):
        pooled.stack()


@pytest.mark.parametrize("sinks", ["clean", "raw+clean"])
def test_make_maps_cleans_with_the_statistics_it_is_given_and_records_them(sinks):
    items, words = _inputs(causal=True)
    row, causal = make_maps(items, sinks=sinks, size=SIZE), make_maps(items, sinks=sinks, size=SIZE, sink_stats="causal")
    assert (row.sink_stats, causal.sink_stats) == ("row", "causal")  # the default: the official similarity scripts
    cleaned = 1 if sinks == "clean" else 2  # the cleaned copies sit after the raw ones
    for item, tensor in zip(items, causal.tensors):
        expected = resize_maps(clean_sinks(item.maps, causal=True, stats="causal"), SIZE)
        torch.testing.assert_close(tensor[-len(CHANNELS) * 1:] if cleaned == 2 else tensor, expected, atol=1e-7, rtol=0)
    assert any(not torch.allclose(a, b) for a, b in zip(row.tensors, causal.tensors))
    with pytest.raises(ValueError, match="sink_stats"):
        make_maps(items, sink_stats="lower")


def test_make_maps_refuses_what_it_cannot_build():
    items, words = _inputs()
    with pytest.raises(ValueError, match="align"):
        make_maps(items, align="bilinear")
    with pytest.raises(ValueError, match="sinks"):
        make_maps(items, sinks="cleaned")
    for align in ("words", "first"):
        with pytest.raises(ValueError, match="words"):
            make_maps(items, align=align)
        with pytest.raises(ValueError, match="words"):
            make_maps(items, align=align, words=words[:2])
        with pytest.raises(ValueError, match="spans"):
            make_maps(items, align=align, words=[w.text for w in words])


# ------------------------------------------------------------------------------------------
# On a real model
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_model_maps_on_minilm_is_token_maps_then_make_maps(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "TensorStore", store_in(tmp_path))
    texts = [WordText.of(t) for t in ("The cat sat on the mat.", "Unbelievably, tokenizers split words.", "Short one.")]
    channels = ("order1", "rollout")
    tokens = pipeline.token_maps("minilm-l6", [t.text for t in texts], channels, progress=False)
    for align in ("words", "first", "resize"):
        got = model_maps("minilm-l6", texts, channels, align=align, sinks="raw", size=SIZE, progress=False)
        assert got.texts == tuple(t.text for t in texts) and got.model == "minilm-l6" and not got.causal
        expected = make_maps(tokens, align=align, sinks="raw", size=SIZE, words=texts)
        assert all(torch.equal(a, b) for a, b in zip(got.tensors, expected.tensors))
        if align != "resize":
            assert [tuple(t.shape) for t in got.tensors] == [(2, len(t.words), len(t.words)) for t in texts]
        if align == "words":  # pooled rows stay stochastic
            torch.testing.assert_close(got.tensors[0].sum(-1), torch.ones(2, len(texts[0].words)), atol=1e-5, rtol=0)
