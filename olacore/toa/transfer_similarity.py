"""Does similarity predict transfer? Order-1 retrieval Hits@1 of each source-target pair beside its transfer.

The TOA chapter's last reading (:mod:`olacore.toa.transfer_report` holds the others): if OLAS is
what carries an adapter across models, pairs whose maps are more alike should transfer better.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from olacore.profiles import TransferSettings
from olacore.toa.train import METRICS

__all__ = ["similarity_hits", "similarity_vs_transfer"]

_RETRIEVAL_KEY = re.compile(r"^retrieval/(causal|encoder)/(.+)->(.+)/order1/hits@1/official texts, whole row sink statistics$")


def similarity_hits(settings: TransferSettings, results: str | Path | None = None, *, profile: str | None = None,
                    workers: int = 1, store=None) -> tuple[pd.DataFrame, str]:
    """Order-1 SSIM retrieval Hits@1 (percent) of every ordered pair of models of one kind (paper section 4.1).

    Per kind, read from chapter 03's results (``03_quantitative.json`` in ``results``, default
    :func:`olacore.results.results_dir`: its official-protocol pairs) when that file was
    written at ``profile`` and holds pairs of that kind; every other kind is computed here with
    :func:`olacore.retrieval.retrieval_table` on the first ``settings.similarity_texts``
    official-recipe texts (:func:`olacore.texts.similarity_texts`), maps resized to 50 x 50,
    sinks cleaned with whole-row statistics (chapter 03's official protocol, at a smaller
    size). Source = gallery, target = queries.

    Args:
        settings: the chapter's models (``causal``, ``encoders``) and ``similarity_texts``.
        results: folder of chapter 03's results JSON.
        profile: the profile this chapter runs at; the JSON is used only if it was recorded at
            the same profile (``None``: never used, everything computed).
        workers, store: for the attention extraction when computing.

    Returns:
        ``(table, where)``: ``kind, source, target, hits@1`` (percent; empty when no kind has
        two models) and a sentence saying where each kind's numbers come from.

    Raises:
        json.JSONDecodeError (a ValueError): ``03_quantitative.json`` exists but is not JSON.
        KeyError: that file, recorded at ``profile``, lacks ``records`` or a record's ``key``
            / ``value``.
        FileNotFoundError: a kind is computed and the EWT train file is missing (the message
            names ``OLACORE_DATA``).
        ValueError: a kind is computed and EWT train holds fewer than
            ``settings.similarity_texts`` official-recipe chunks
            (:func:`olacore.texts.similarity_texts`), or a model is unknown (the message lists
            the zoo names).
        ModuleNotFoundError / ImportError: a zoo model's package is missing, on a cache miss.
    """
    from olacore.results import results_dir

    kinds = [(k, n) for k, n in (("causal", settings.causal), ("encoder", settings.encoders)) if len(n) >= 2]
    columns = ["kind", "source", "target", "hits@1"]
    if not kinds:
        return pd.DataFrame(columns=columns), "no similarity: no kind has two models (a pair is needed)"
    path = Path(results or results_dir()) / "03_quantitative.json"
    saved: dict[str, list[dict]] = {}
    skipped = ""
    if path.is_file():
        payload = json.loads(path.read_text(encoding="utf-8"))
        if profile is not None and payload.get("profile") == profile:
            for record in payload["records"]:
                match = _RETRIEVAL_KEY.match(record["key"])
                if match and all(m in settings.models for m in match.groups()[1:]):
                    saved.setdefault(match.group(1), []).append(
                        {"kind": match.group(1), "source": match.group(2), "target": match.group(3),
                         "hits@1": float(record["value"])})
        else:
            skipped = (f" ({path.name} was recorded at profile {payload.get('profile')!r}, "
                       f"this chapter runs at {profile!r}: not used)")
    frames, where = [], []
    missing = [(k, n) for k, n in kinds if k not in saved]
    for kind, _ in kinds:
        if kind in saved:
            frames.append(pd.DataFrame(saved[kind]))
            where.append(f"{kind}: chapter 03's saved results ({path.name})")
    if missing:
        from olacore.maps import make_maps
        from olacore.pipeline import token_maps
        from olacore.retrieval import retrieval_table
        from olacore.texts import similarity_texts

        texts = [t.text for t in similarity_texts(settings.similarity_texts)]
        for kind, names in missing:
            maps = {n: make_maps(token_maps(n, texts, ("order1",), workers=workers, progress=False, store=store),
                                 align="resize", sinks="clean", size=50, sink_stats="row") for n in names}
            table = retrieval_table(maps, ks=(1,))
            frames.append(table.assign(kind=kind, **{"hits@1": 100 * table["hits@1"]}))
            where.append(f"{kind}: computed here ({len(texts)} official-recipe EWT texts, order-1 OLA resized to "
                         "50 x 50, sinks cleaned with whole-row statistics)")
    return pd.concat(frames, ignore_index=True)[columns], "; ".join(where) + skipped


def similarity_vs_transfer(gaps: pd.DataFrame, hits: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Transfer beside Hits@1 for every off-diagonal pair, and Spearman's rho over the pairs.

    Per task the transfer score is ranked; pooled over tasks the share recovered is
    (scores of different tasks are not comparable; the recovered share is).

    Returns:
        ``(pairs, spearman)``: ``pairs`` = the gap rows with ``hits@1``; ``spearman`` =
        ``over, value, rho, p, pairs`` (rho NaN when a side is constant or fewer than 3 pairs).
    """
    from scipy.stats import spearmanr

    table = gaps.merge(hits, on=["kind", "source", "target"], how="left")
    rows = []
    groups = [(f"{task} ({METRICS[task]})", g, "transfer") for task, g in table.groupby("task", sort=False)]
    groups.append(("every task", table, "recovered"))
    for over, group, value in groups:
        group = group.dropna(subset=["hits@1", value])
        rho = p = np.nan
        if len(group) >= 3 and group["hits@1"].nunique() > 1 and group[value].nunique() > 1:
            rho, p = spearmanr(group["hits@1"], group[value])
        rows.append({"over": over, "value": value, "rho": float(rho), "p": float(p), "pairs": len(group)})
    return table, pd.DataFrame(rows)
