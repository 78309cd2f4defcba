"""SSIM retrieval (olacore.similarity) on hand-made maps whose right answer depends on which model
is the gallery and which channel is compared, so a swapped pair or a mixed-up channel fails."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from olacore.texts import WordText
from olacore.maps import Maps
from olacore.pipeline import TokenMaps
from chapter_code.qualitative import same_text_gap
from chapter_code.retrieval import PAIRS_COLUMNS, pairs_rows
from olacore.similarity import hits_matrix, mean_hits, retrieval_grid, retrieval_table

SIZE = 16
CHANNELS = ("order1", "order2", "rollout")
TEXTS = tuple(f"text {i}" for i in range(4))


def _peaky(generator: torch.Generator) -> torch.Tensor:
    maps = torch.rand(SIZE, SIZE, generator=generator) ** 4
    return maps / maps.sum(-1, keepdim=True)


def _maps(model: str, tensors: torch.Tensor, channels=CHANNELS, sinks: str = "raw", texts=TEXTS) -> Maps:
    return Maps(tensors=tuple(tensors), channels=tuple(channels), causal=False, model=model, align="resize",
                sinks=sinks, size=SIZE, texts=tuple(texts))


def _gallery(seed: int = 0, channels: int = 3) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.stack([torch.stack([_peaky(generator) for _ in range(channels)]) for _ in TEXTS])


def _asymmetric_pair():
    """Model A, and model B built from A's maps so that each channel has its own answer:

    - order1: B's maps of texts 0 and 1 are both A's map of text 0. B querying A: text 1
      misses (3/4). A querying B: texts 0 and 1 tie between B's two equal maps, and ties count
      against the query (2/4).
    - order2: B's maps of texts 2 and 3 are A's, swapped: 2/4 either way.
    - rollout: B's maps are A's: 4/4 either way.
    Every channel of A is its own random pattern, so comparing two different channels finds nothing.
    """
    a = _gallery()
    b = a.clone()
    b[1, 0] = a[0, 0]
    b[2, 1], b[3, 1] = a[3, 1], a[2, 1]
    return _maps("A", a), _maps("B", b)


def _hits(table, *columns: str) -> dict:
    """Hits@1 of every row, keyed by the given columns."""
    return dict(zip(zip(*(table[c] for c in columns)), table["hits@1"]))


EXPECTED = {  # (source = gallery, target = queries, channel) -> Hits@1
    ("A", "B", "order1"): 0.75, ("B", "A", "order1"): 0.5,
    ("A", "B", "order2"): 0.5, ("B", "A", "order2"): 0.5,
    ("A", "B", "rollout"): 1.0, ("B", "A", "rollout"): 1.0,
}


def test_each_target_queries_the_source_gallery_channel_by_channel():
    a, b = _asymmetric_pair()
    table = retrieval_table({"A": a, "B": b}, ks=(1, 5))
    got = _hits(table, "source", "target", "channel")
    assert list(table.columns) == ["source", "target", "channel", "sinks", "hits@1", "hits@5", "chance@1", "chance@5"]
    assert got == pytest.approx(EXPECTED)
    assert (table["sinks"] == "raw").all() and (table["hits@5"] == 1.0).all()
    assert np.allclose(table["chance@1"], 1 / 4) and np.allclose(table["chance@5"], 1.0)
    # the source is the gallery: rows of the matrix are sources, columns targets
    matrix = hits_matrix(table, "order1")
    assert matrix.loc["A", "B"] == 0.75 and matrix.loc["B", "A"] == 0.5
    assert mean_hits(table, channel="order1", source="A") == 0.75
    assert mean_hits(table, channel="order2") == 0.5
    with pytest.raises(ValueError, match="no retrieval row"):
        mean_hits(table, channel="order7")


def test_pairs():
    a, b = _asymmetric_pair()
    only = retrieval_table({"A": a, "B": b}, pairs=[("B", "A")], ks=(1,))
    assert list(only["source"]) == ["B"] * 3 and list(only["target"]) == ["A"] * 3
    assert dict(zip(only["channel"], only["hits@1"])) == pytest.approx({c: EXPECTED[("B", "A", c)] for c in CHANNELS})
    with pytest.raises(ValueError, match="without maps"):
        retrieval_table({"A": a, "B": b}, pairs=[("A", "C")])


def test_raw_and_clean_copies_are_compared_as_laid_out():
    a, b = _asymmetric_pair()
    # one channel, two copies: the raw copy is order1's construction, the clean copy rollout's
    both_a = _maps("A", a.stack()[:, [0, 2]], channels=("order1",), sinks="raw+clean")
    both_b = _maps("B", b.stack()[:, [0, 2]], channels=("order1",), sinks="raw+clean")
    table = retrieval_table({"A": both_a, "B": both_b}, ks=(1,))
    got = _hits(table, "source", "target", "channel", "sinks")
    assert got == pytest.approx({
        ("A", "B", "order1", "raw"): 0.75, ("A", "B", "order1", "clean"): 1.0,
        ("B", "A", "order1", "raw"): 0.5, ("B", "A", "order1", "clean"): 1.0,
    })


def test_maps_that_are_not_comparable_are_refused():
    a, b = _asymmetric_pair()
    with pytest.raises(ValueError, match="other texts"):
        retrieval_table({"A": a, "B": _maps("B", b.stack(), texts=TEXTS[::-1])})
    with pytest.raises(ValueError, match="channels"):
        retrieval_table({"A": a, "B": b.select("order2", "order1", "rollout")})
    with pytest.raises(ValueError, match="channels"):
        retrieval_table({"A": a, "B": _maps("B", b.stack(), sinks="clean")})
    with pytest.raises(ValueError, match="aligned"):
        retrieval_table({"A": a, "B": Maps(b.tensors, b.channels, False, "B", "resize", "raw", SIZE + 1, b.texts)})
    with pytest.raises(ValueError, match="pair"):
        retrieval_table({})
    with pytest.raises(ValueError, match="pair"):  # never an empty table
        retrieval_table({"A": a})
    with pytest.raises(ValueError, match="pair"):
        retrieval_table({"A": a, "B": b}, pairs=[])


def _token_maps(model: str, seed: int) -> list[TokenMaps]:
    """12-word texts of one token per word plus a special token; the same maps for every model."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    for index in range(5):
        words = WordText.of(" ".join(f"t{index}w{i}" for i in range(12)))
        maps = torch.rand(2, 13, 13, generator=generator) ** 4
        out.append(TokenMaps(words.text, ["<s>", *words.words], [(0, 0), *words.spans], False, model,
                             ("order1", "rollout"), maps / maps.sum(-1, keepdim=True)))
    return out


def test_retrieval_grid_makes_the_maps_of_every_variant_within_each_group():
    tokens = {name: _token_maps(name, seed=0) for name in ("a", "b", "c")}
    words = [WordText(t.text, tuple(t.tokens[1:]), tuple(t.offsets[1:])) for t in tokens["a"]]
    variants = {"resize, raw": {"align": "resize", "sinks": "raw", "size": SIZE},
                "words, clean": {"align": "words", "sinks": "clean"}}
    grid = retrieval_grid(tokens, {"two": ["a", "b"], "three": ["a", "b", "c"]}, variants, words=words, ks=(1,))
    assert list(grid.columns[:2]) == ["group", "variant"]
    sizes = grid.groupby(["variant", "group"]).size().to_dict()
    assert sizes == {(v, "two"): 2 * 2 for v in variants} | {(v, "three"): 6 * 2 for v in variants}
    assert (grid["hits@1"] == 1.0).all()  # every model gives the same maps of a text


def test_same_text_gap():
    a, b = _asymmetric_pair()
    gap = same_text_gap({"A": a, "B": b}, {"pair": ["A", "B"]})
    assert list(gap["channel"]) == list(CHANNELS) and (gap["model pair"] == "A / B").all()
    rollout = gap[gap["channel"] == "rollout"].iloc[0]
    assert rollout["SSIM same text"] == pytest.approx(1.0)
    assert rollout["gap"] == pytest.approx(1.0 - rollout["SSIM different texts"]) and rollout["gap"] > 0.5


def test_pairs_rows_keep_each_pair_typed_in_percent_through_json():
    a, b = _asymmetric_pair()
    table = retrieval_table({"A": a, "B": b}, ks=(1, 5)).assign(group="causal")
    rows = pairs_rows(table, "official")
    assert rows == json.loads(json.dumps(rows, allow_nan=False))  # plain values, the same bits after a save
    assert all(tuple(row) == PAIRS_COLUMNS and row["kind"] == "causal" and row["protocol"] == "official" for row in rows)
    assert {(r["source"], r["target"], r["channel"]): r["hits@1"] for r in rows} == pytest.approx(
        {k: 100 * v for k, v in EXPECTED.items()})
    assert all(r["hits@5"] == 100.0 for r in rows)
