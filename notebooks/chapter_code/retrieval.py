"""Chapter 03's model x model Hits@1 heatmaps (appendix a3 draws its encoders' the same way) and the retrieval
pairs table it keeps for chapter 07 and appendix a5 (read by :func:`chapter_code.transfer.similarity_hits`)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from olacore.channels import label
from olacore.similarity import hits_matrix

__all__ = ["hits_heatmaps", "PAIRS_TABLE", "PAIRS_COLUMNS", "pairs_rows"]

#: The table chapter 03 keeps for later chapters (rows: :func:`pairs_rows`).
PAIRS_TABLE = "retrieval pairs"
PAIRS_COLUMNS = ("kind", "source", "target", "channel", "protocol", "hits@1", "hits@5")


def pairs_rows(table: pd.DataFrame, protocol: str) -> list[dict[str, Any]]:
    """:data:`PAIRS_COLUMNS` rows (hits in percent) of :func:`olacore.similarity.retrieval_grid` rows under
    ``protocol``."""
    kept = table.rename(columns={"group": "kind"}).assign(protocol=protocol,
                                                          **{m: 100 * table[m] for m in ("hits@1", "hits@5")})
    return kept[list(PAIRS_COLUMNS)].to_dict("records")


def hits_heatmaps(table, groups: Mapping[str, Sequence[str]], channels: Sequence[str], *, title: str | None = None):
    """Model x model Hits@1 (%) heatmaps of a retrieval table with a ``group`` column: one column of panels per
    group, one row per channel (rows: source = gallery; columns: target = queries)."""
    widths = [max(len(models), 2) for models in groups.values()]
    fig, axes = plt.subplots(len(channels), len(groups), figsize=(1.1 * sum(widths) + 1.8, 2.3 * len(channels)),
                             squeeze=False, constrained_layout=True, gridspec_kw={"width_ratios": widths})
    drawn = None
    for col, group in enumerate(groups):
        rows = table[table["group"] == group]
        for row, channel in enumerate(channels):
            ax = axes[row, col]
            sns.heatmap(100 * hits_matrix(rows, channel), annot=True, fmt=".0f", vmin=0, vmax=100,
                        cmap="viridis", cbar=False, ax=ax, annot_kws={"fontsize": 8}, square=True)
            drawn = ax.collections[0]
            ax.set_title(f"{group}: {label(channel)}", fontsize=9)
            ax.tick_params(labelsize=8)
            ax.set_xticklabels(ax.get_xticklabels(), rotation=30, ha="right")
            ax.set_yticklabels(ax.get_yticklabels(), rotation=0)
            ax.set_xlabel("target (queries)" if row == len(channels) - 1 else "", fontsize=8)
            ax.set_ylabel("source (gallery)" if col == 0 else "", fontsize=8)
    if drawn is not None:
        fig.colorbar(drawn, ax=axes, shrink=0.5, label="Hits@1 (%)")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig
