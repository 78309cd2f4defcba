"""OLAS measured by retrieval: every target map queries the source maps of the same texts (paper 4.1).

Per channel, each map of a *target* model queries the gallery of a *source* model's maps of the same texts; it
is a hit when the map of the same text ranks first (Hits@1) or among the first five (Hits@5) by SSIM
(:func:`olacore.similarity.pairwise_ssim`). Causal models are only compared with causal models, encoders with
encoders, as the official code does (its README runs ``olas_retrieval.py`` on pairs of one kind; ``OLAModel`` in
the official ``models/ola_model.py`` asserts that its models are all of one kind).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import pandas as pd
import torch

from olacore.maps import Maps, make_maps
from olacore.similarity import chance_hits, hits_at_k, pairwise_ssim

if TYPE_CHECKING:  # pragma: no cover
    from olacore.pipeline import TokenMaps

__all__ = ["PAIRS_TABLE", "PAIRS_COLUMNS", "pairs_rows", "retrieval_table", "retrieval_grid", "hits_matrix", "mean_hits",
           "same_text_gap"]

#: The table chapter 03 keeps for later chapters (:meth:`olacore.results.ChapterResults.add_table`, rows made by
#: :func:`pairs_rows`): one row per (source, target) pair and channel it records, with these columns.
PAIRS_TABLE = "retrieval pairs"
PAIRS_COLUMNS = ("kind", "source", "target", "channel", "protocol", "hits@1", "hits@5")


def _check_comparable(maps: Mapping[str, Maps]) -> Maps:
    first = next(iter(maps.values()))
    for name, other in maps.items():
        if other.channels != first.channels or other.layout() != first.layout():
            raise ValueError(f"{name}: channels {other.layout()} differ from {first.layout()}")
        if other.texts != first.texts:
            raise ValueError(f"{name}: its maps are of other texts (or in another order) than {first.model}'s")
        if (other.align, other.size) != (first.align, first.size):
            raise ValueError(f"{name}: aligned by {other.align}/{other.size}, {first.model} by {first.align}/{first.size}")
    return first


def retrieval_table(
    maps: Mapping[str, Maps] | Sequence[Maps],
    *,
    pairs: Sequence[tuple[str, str]] | None = None,
    ks: Sequence[int] = (1, 5),
    data_range: float | None = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype = torch.float32,
) -> pd.DataFrame:
    """Hits@k of SSIM retrieval for every (source, target) pair and channel (module docstring).

    Args:
        maps: :class:`olacore.maps.Maps` per model (a dict by name, or a list keyed by each one's ``model``), all of
            the same texts in the same order, channels and alignment.
        pairs: ``(source, target)`` names; default every ordered pair of distinct models.
        data_range: passed to :func:`pairwise_ssim` (``None``: per pair, as torchmetrics).
        dtype: SSIM precision (float32: ~1e-7 from float64, about 3x faster on a CPU).

    Returns:
        Columns ``source, target, channel, sinks, hits@k..., chance@k...`` (fractions), one row per pair and channel
        (twice per channel for ``"raw+clean"``).

    Raises:
        ValueError: maps of other texts, channels or alignments; an unknown model in ``pairs``; no pair to compare.
    """
    if not isinstance(maps, Mapping):
        maps = {m.model: m for m in maps}
    if not maps:
        raise ValueError("no maps given")
    first = _check_comparable(maps)
    names = list(maps)
    pairs = list(itertools.permutations(names, 2)) if pairs is None else list(pairs)
    if not pairs:
        raise ValueError(f"no (source, target) pair to compare: maps of {names}; give two models or pairs=[...]")
    unknown = sorted({n for pair in pairs for n in pair} - set(names))
    if unknown:
        raise ValueError(f"pairs name models without maps: {unknown}; maps are of {names}")
    stacked = {name: maps[name].stack() for name in {n for pair in pairs for n in pair}}
    rows = []
    for source, target in pairs:
        for c, (channel, sinks) in enumerate(first.layout()):
            gallery = stacked[source][:, c].to(device=device or "cpu", dtype=dtype)
            queries = stacked[target][:, c].to(device=gallery.device, dtype=dtype)
            hits = hits_at_k(pairwise_ssim(queries, gallery, data_range), ks)
            row = {"source": source, "target": target, "channel": channel, "sinks": sinks}
            row.update({f"hits@{k}": hits[k] for k in ks})
            row.update({f"chance@{k}": chance_hits(gallery.shape[0], k) for k in ks})
            rows.append(row)
    return pd.DataFrame(rows)


def retrieval_grid(
    token_maps: Mapping[str, Sequence["TokenMaps"]],
    groups: Mapping[str, Sequence[str]],
    variants: Mapping[str, Mapping[str, Any]],
    *,
    words: Sequence[Any] | None = None,
    **table_options: Any,
) -> pd.DataFrame:
    """:func:`retrieval_table` within each group of models, for every way of making the maps: one tidy
    table, ``group, variant`` first.

    Args:
        token_maps: model name -> its :class:`olacore.pipeline.TokenMaps` of the texts.
        groups: group label -> model names compared with each other (e.g. ``{"causal": [...], "encoder": [...]}``;
            never mixing kinds: module docstring).
        variants: variant label -> keyword arguments of :func:`olacore.maps.make_maps` (e.g.
            ``{"resize, clean": {"align": "resize", "sinks": "clean", "size": 50}}``).
        words: the texts with word spans, for word-level alignments.
        **table_options: passed to :func:`retrieval_table`.
    """
    tables = []
    for variant, options in variants.items():
        for group, names in groups.items():
            maps = {n: make_maps(token_maps[n], words=words, **options) for n in names}
            table = retrieval_table(maps, **table_options)
            table.insert(0, "variant", variant)
            table.insert(0, "group", group)
            tables.append(table)
    return pd.concat(tables, ignore_index=True)


def pairs_rows(table: pd.DataFrame, protocol: str) -> list[dict[str, Any]]:
    """:data:`PAIRS_COLUMNS` rows of :func:`retrieval_grid` rows (``group`` as ``kind``; ``hits@k`` in percent) under
    ``protocol`` (:data:`olacore.results.OFFICIAL` or :data:`~olacore.results.HELD_OUT`)."""
    kept = table.rename(columns={"group": "kind"}).assign(protocol=protocol,
                                                          **{m: 100 * table[m] for m in ("hits@1", "hits@5")})
    return kept[list(PAIRS_COLUMNS)].to_dict("records")


def hits_matrix(table: pd.DataFrame, channel: str, metric: str = "hits@1") -> pd.DataFrame:
    """Model x model matrix (rows: source = gallery, columns: target = queries) of one metric for one channel."""
    rows = table[table["channel"] == channel]
    return rows.pivot(index="source", columns="target", values=metric)


def mean_hits(table: pd.DataFrame, metric: str = "hits@1", **where: Any) -> float:
    """Mean of ``metric`` over the rows matching every ``column=value`` in ``where`` (over pairs, say).

    Raises:
        ValueError: no row matches (so an empty table never passes as a number).
    """
    rows = table
    for column, value in where.items():
        rows = rows[rows[column] == value]
    if rows.empty:
        raise ValueError(f"no retrieval row with {where}")
    return float(rows[metric].mean())


def same_text_gap(maps: Mapping[str, Maps], groups: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Mean SSIM of a map with the other model's map of the *same* text against *other* texts.

    For every unordered pair of models within a group and every channel: ``SSIM same text`` (mean of the diagonal of
    the target x source SSIM matrix), ``SSIM different texts`` (mean off the diagonal) and their ``gap``, the effect
    retrieval turns into Hits@k (paper section 4.1). SSIM in float64, ``data_range`` per pair. Columns: ``group,
    model pair, channel``, then those three.

    Args:
        maps: resized :class:`olacore.maps.Maps` per model (same texts, channels and size).
        groups: group label -> model names.
    """
    rows = []
    for group, names in groups.items():
        _check_comparable({n: maps[n] for n in names})
        for source, target in itertools.combinations(names, 2):
            queries, gallery = maps[target].stack().double(), maps[source].stack().double()
            for c, (channel, _) in enumerate(maps[source].layout()):
                ssim = pairwise_ssim(queries[:, c], gallery[:, c], None)
                same = ssim.diagonal().mean().item()
                different = (ssim.sum() - ssim.diagonal().sum()).item() / (ssim.numel() - len(ssim))
                rows.append({"group": group, "model pair": f"{source} / {target}", "channel": channel,
                             "SSIM same text": same, "SSIM different texts": different, "gap": same - different})
    return pd.DataFrame(rows)
