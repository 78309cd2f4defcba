"""Appendix a1, the official protocol's runs read: the table "official vs held-out, and each quirk", curves, selection."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from chapter_code.proxy import mean_std_text

__all__ = ["protocol_table", "learning_curves", "selection_figure"]


def protocol_table(official: pd.DataFrame, held_out: pd.DataFrame, order: Sequence[str],
                   held_out_label: str = "held-out protocol") -> pd.DataFrame:
    """Target accuracy (%) per protocol variant: mean ± std over seeds per target, mean, and points vs official.

    Per-target columns are ``"mean ± std"`` text (the mean alone for one seed); ``"mean over targets"`` and
    ``"points vs <first variant>"`` are numbers.

    Args:
        official: :func:`olacore.proxy.official_proxy_experiment` rows (``variant, target, seed, reported``).
        held_out: :func:`olacore.proxy.proxy_experiment` rows, same targets, channel and seeds (``target, seed,
            test_acc``); its row comes last.
        order: the variants, in row order; the first is the reference of the points column.
    """
    frames = [official[official["variant"].isin(order)].assign(value=100 * official["reported"]),
              held_out.assign(variant=held_out_label, value=100 * held_out["test_acc"])]
    runs = pd.concat(frames, ignore_index=True)[["variant", "target", "seed", "value"]]
    rows = [*order, held_out_label]
    table = mean_std_text(runs, "variant", "value", sort=False).reindex(rows)
    table["mean over targets"] = runs.groupby("variant")["value"].mean().reindex(rows)
    table[f"points vs {order[0]}"] = table["mean over targets"] - table.loc[order[0], "mean over targets"]
    return table


def learning_curves(histories: Mapping[tuple, list[dict]], variants: Sequence[str], targets: Sequence[str], seed: int,
                    *, chance: float | None = None, title: str = ""):
    """Learning curves of official-protocol runs, a matplotlib ``Figure``: per target, the training loss
    (top) and the accuracy on the clean source maps and on the target maps (bottom), per evaluation.

    Args:
        histories: ``(variant, target, seed) -> history`` of :func:`olacore.proxy.official_proxy_experiment`.
        variants: the variants drawn (solid: the first, dashed: the next ones).
        chance: chance accuracy (fraction): a dotted line, and ``ln(1 / chance)`` on the loss panels.
    """
    fig, axes = plt.subplots(2, len(targets), figsize=(3.4 * len(targets), 5.2), sharex=True, sharey="row",
                             squeeze=False, constrained_layout=True)
    styles = ["-", "--", ":", "-."]
    for column, target in enumerate(targets):
        top, bottom = axes[0][column], axes[1][column]
        for style, variant in zip(styles, variants):
            history = pd.DataFrame(histories[(variant, target, seed)])
            top.plot(history["step"], history["train_loss"], style, color="black", label=variant)
            for key, colour, what in (("train_acc", "tab:green", "source maps (trained on)"),
                                      ("test_acc", "tab:red", "target, re-augmented"),
                                      ("test_acc_clean", "tab:blue", "target, clean")):
                bottom.plot(history["step"], 100 * history[key], style, color=colour, label=f"{what}, {variant}")
        if chance is not None:
            top.axhline(np.log(1 / chance), color="grey", ls=":", lw=1, label="uniform guess")
            bottom.axhline(100 * chance, color="grey", ls=":", lw=1, label="chance")
        top.set_title(target, fontsize=10)
        bottom.set_xlabel("step")
    axes[0][0].set_ylabel("training loss")
    axes[1][0].set_ylabel("accuracy (%)")
    axes[0][-1].legend(fontsize=7, loc="best")
    axes[1][-1].legend(fontsize=6, loc="best")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def selection_figure(official: pd.DataFrame, histories: Mapping[tuple, list[dict]], held_out: pd.DataFrame,
                     variant: str, *, chance: float | None = None, title: str = ""):
    """The selection effect (a matplotlib ``Figure``): every target evaluation, the reported maximum, the held-out number.

    Per target: grey dots (and a box) are every evaluation of every seed, on re-augmented target maps as the
    official script evaluates; red diamonds each seed's reported maximum; blue circles its held-out protocol's test-once accuracy.

    Args:
        official, histories: the two results of :func:`olacore.proxy.official_proxy_experiment`.
        held_out: :func:`olacore.proxy.proxy_experiment` rows of the same targets and seeds.
    """
    rows = official[official["variant"] == variant]
    targets = list(dict.fromkeys(rows["target"]))
    fig, axes = plt.subplots(1, len(targets), figsize=(3.2 * len(targets), 3.4), sharey=True, squeeze=False,
                             constrained_layout=True)
    rng = np.random.default_rng(0)  # jitter only
    for ax, target in zip(axes[0], targets):
        chosen = rows[rows["target"] == target]
        values = [100 * h["test_acc"] for seed in chosen["seed"] for h in histories[(variant, target, seed)]]
        ax.boxplot(values, positions=[0], widths=0.5, showfliers=False)
        ax.scatter(rng.uniform(-0.18, 0.18, len(values)), values, s=8, color="grey", alpha=0.5,
                   label="every evaluation")
        ax.scatter(np.full(len(chosen), 0.45), 100 * chosen["reported"], marker="D", color="tab:red",
                   label="reported (max over evaluations)")
        mine = held_out[held_out["target"] == target]
        ax.scatter(np.full(len(mine), 0.75), 100 * mine["test_acc"], marker="o", color="tab:blue",
                   label="held-out (test once)")
        if chance is not None:
            ax.axhline(100 * chance, color="black", linestyle=":", linewidth=1, label="chance")
        ax.set_xticks([0, 0.45, 0.75], ["every\nevaluation", "reported", "held-out"], fontsize=8)
        ax.set_xlim(-0.5, 1.0)
        ax.set_title(target, fontsize=10)
    axes[0][0].set_ylabel("target accuracy (%)")
    axes[0][-1].legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig
