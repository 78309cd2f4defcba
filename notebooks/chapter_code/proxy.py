"""Chapter 04's readings of the visual-proxy runs: the summary table (also appendix a1's ``mean ± std`` cells) and
one run's training curve."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

__all__ = ["mean_std_text", "proxy_summary", "training_curve"]


def mean_std_text(runs: pd.DataFrame, rows: str, value: str, *, sort: bool = True) -> pd.DataFrame:
    """``"mean ± std"`` of ``value`` over seeds (the mean alone for one seed): one row per ``rows`` value, one
    column per target."""
    stats = runs.groupby([rows, "target"], sort=sort)[value].agg(["mean", "std"])
    text = stats.apply(lambda r: f"{r['mean']:.1f}" if np.isnan(r["std"]) else f"{r['mean']:.1f} ± {r['std']:.1f}",
                       axis=1)
    return text.unstack("target")


def proxy_summary(runs: pd.DataFrame, groups: Mapping[str, Sequence[str]], order: Sequence[str] | None = None) -> pd.DataFrame:
    """Target accuracy (%) per channel set: ``"mean ± std"`` over seeds per target, and the mean per group.

    Args:
        runs: the first result of :func:`olacore.proxy.proxy_experiment`.
        groups: group label -> target names; one ``"mean over <group> targets"`` column each.
        order: row order (channel-set labels); default as they appear in ``runs``.
    """
    order = list(order) if order is not None else list(dict.fromkeys(runs["channels"]))
    acc = runs.assign(test_acc=100 * runs["test_acc"])
    table = mean_std_text(acc, "channels", "test_acc").reindex(order)
    for group, targets in groups.items():
        chosen = acc[acc["target"].isin(targets)]
        table[f"mean over {group} targets"] = chosen.groupby("channels")["test_acc"].mean().reindex(order).round(1)
    return table


def training_curve(history, *, title: str, chance: float):
    """A ``Figure`` of loss and accuracy of one proxy run's ``history`` (step, train_loss, train_acc, val_acc)."""
    history = pd.DataFrame(history)
    fig, ax = plt.subplots(1, 2, figsize=(9, 3))
    ax[0].plot(history["step"], history["train_loss"])
    ax[0].set(xlabel="step", ylabel="training loss", title=title)
    ax[1].plot(history["step"], history["train_acc"], label="training batches")
    ax[1].plot(history["step"], history["val_acc"], label="held-out source maps")
    ax[1].axhline(chance, color="grey", ls=":", label="chance")
    ax[1].set(xlabel="step", ylabel="accuracy")
    ax[1].legend()
    fig.tight_layout()
    return fig
