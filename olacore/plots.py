"""Figures shared by the command line and the notebooks: grids of OLA heatmaps, dependency arcs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import torch

if TYPE_CHECKING:  # pragma: no cover
    from olacore.ud import UDSentence

__all__ = ["draw_maps", "draw_arcs", "hits_heatmaps", "training_curve"]

#: Keyword arguments for every matplotlib text that shows the user's words (titles, tick
#: labels, row names): drawn as typed, never parsed as mathtext (``$5 and $10`` stays text).
TEXT = {"parse_math": False}


def _wrapped(title: str, width_inches: float, fontsize: float) -> str:
    """``title`` broken into lines that fit ``width_inches`` at ``fontsize`` points (a character
    is taken as 0.6 em wide, a safe bound for the default sans-serif font)."""
    per_line = max(int(width_inches * 72 / (0.6 * fontsize)), 10)
    return "\n".join(textwrap.wrap(title, per_line)) or title


def draw_maps(
    rows: Mapping[str, Mapping[str, torch.Tensor]],
    *,
    labels: Mapping[str, Sequence[str]] | None = None,
    title: str | None = None,
    panel_size: float = 2.6,
    cmap: str = "viridis",
    robust: bool = True,
):
    """Draw a grid of square maps: one row per entry of ``rows``, one column per panel.

    Args:
        rows: ``{row name: {panel name: (T, T) tensor}}``; every row should have the same
            panel names (e.g. models x orders). Maps may differ in size between rows.
        labels: optional ``{row name: T tick labels}`` (tokens or words), shown when short.
        title: figure title, drawn as plain text (no mathtext) and wrapped to the figure's width.
        panel_size: inches per panel.
        cmap: matplotlib colormap.
        robust: clip the colour scale of each panel at its 99th percentile, so a sink column
            does not wash out the rest of the map.

    Returns:
        The matplotlib ``Figure``.
    """
    panels = list(next(iter(rows.values())).keys())
    fig, axes = plt.subplots(
        len(rows), len(panels), figsize=(panel_size * len(panels), panel_size * len(rows)),
        squeeze=False, constrained_layout=True,
    )
    for r, (row_name, maps) in enumerate(rows.items()):
        for c, panel in enumerate(panels):
            ax = axes[r, c]
            image = maps[panel].detach().float().cpu()
            vmax = torch.quantile(image.flatten(), 0.99).item() if robust else image.max().item()
            ax.imshow(image.numpy(), cmap=cmap, vmin=0.0, vmax=max(vmax, 1e-12), interpolation="nearest")
            ticks = labels.get(row_name) if labels else None
            if ticks is not None and len(ticks) <= 24:
                ax.set_xticks(range(len(ticks)), [str(t) for t in ticks], rotation=90, fontsize=6, **TEXT)
                ax.set_yticks(range(len(ticks)), [str(t) for t in ticks], fontsize=6, **TEXT)
            else:
                ax.set_xticks([])
                ax.set_yticks([])
            if r == 0:
                ax.set_title(panel, fontsize=10, **TEXT)
            if c == 0:
                ax.set_ylabel(row_name, fontsize=10, **TEXT)
    if title:
        fontsize = plt.rcParams["figure.titlesize"]
        fontsize = fontsize if isinstance(fontsize, (int, float)) else 1.2 * plt.rcParams["font.size"]
        fig.suptitle(_wrapped(title, fig.get_figwidth(), fontsize), fontsize=fontsize, **TEXT)
    return fig


def draw_arcs(
    ax,
    word_map: torch.Tensor | np.ndarray,
    sentence: "UDSentence",
    predicted_heads: Sequence[int],
    title: str | None = None,
    cmap: str = "Greys",
):
    """Draw gold and predicted dependency arcs over a word-level OLA heatmap.

    The heatmap shows ``word_map[i, j]`` (row: dependent / query ``i``, column: key ``j``).
    For each word ``i`` with head ``h > 0`` a marker sits at cell ``(i, h - 1)``: a green
    circle for the gold head, an orange cross for the predicted head (both on one cell when
    the prediction is right); root attachments are listed in the title. A good OLA parser
    has its crosses in circles; the grey cells show what it had to go on.

    Args:
        ax: a matplotlib Axes.
        word_map: ``(W, W)`` map (one channel).
        sentence: the gold sentence (words, heads).
        predicted_heads: ``W`` predicted heads (1-based, 0 = root).
        title: axes title (the root words are appended).
        cmap: colormap of the heatmap.

    Returns:
        the Axes.
    """
    m = np.asarray(word_map, dtype=float)
    n = len(sentence)
    if m.shape != (n, n) or len(predicted_heads) != n:
        raise ValueError(f"map {m.shape} / {len(predicted_heads)} heads do not fit a {n}-word sentence")
    ax.imshow(m, cmap=cmap, vmin=0, vmax=max(float(np.quantile(m, 0.98)), 1e-9))
    gold = [(i, h - 1) for i, h in enumerate(sentence.heads) if h > 0]
    pred = [(i, h - 1) for i, h in enumerate(predicted_heads) if h > 0]
    if gold:
        ax.scatter([j for _, j in gold], [i for i, _ in gold], s=60, facecolors="none", edgecolors="tab:green", linewidths=1.5, label="gold head")
    if pred:
        ax.scatter([j for _, j in pred], [i for i, _ in pred], s=30, marker="x", color="tab:orange", linewidths=1.5, label="predicted head")
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xticklabels(sentence.words, rotation=90, fontsize=7, **TEXT)
    ax.set_yticklabels(sentence.words, fontsize=7, **TEXT)
    ax.set_xlabel("head (key word)")
    ax.set_ylabel("dependent (query word)")
    gold_root = [sentence.words[i] for i, h in enumerate(sentence.heads) if h == 0]
    pred_root = [sentence.words[i] for i, h in enumerate(predicted_heads) if h == 0]
    ax.set_title(f"{title + ': ' if title else ''}root gold={gold_root} pred={pred_root}", fontsize=8, **TEXT)
    ax.legend(loc="upper right", fontsize=7)
    return ax


def hits_heatmaps(table, groups: Mapping[str, Sequence[str]], channels: Sequence[str], *, metric: str = "hits@1",
                  title: str | None = None):
    """Model x model heatmaps of a retrieval metric (%): one row of panels per group, one panel per channel.

    Args:
        table: a :func:`olacore.retrieval.retrieval_table` (or one variant of a grid) with a
            ``group`` column.
        groups: group label -> model names (rows of panels).
        channels: channel names (columns of panels).
        metric: ``"hits@1"`` or ``"hits@5"``.
        title: figure title.

    Returns:
        The matplotlib ``Figure`` (rows of each panel: source = gallery; columns: target = queries).
    """
    import seaborn as sns

    from olacore.channels import label
    from olacore.retrieval import hits_matrix

    fig, axes = plt.subplots(len(groups), len(channels), figsize=(3.2 * len(channels), 3 * len(groups)), squeeze=False)
    for row, group in enumerate(groups):
        rows = table[table["group"] == group]
        for col, channel in enumerate(channels):
            sns.heatmap(100 * hits_matrix(rows, channel, metric), annot=True, fmt=".0f", vmin=0, vmax=100,
                        cmap="viridis", cbar=False, ax=axes[row, col])
            axes[row, col].set_title(f"{group}: {label(channel)}")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def training_curve(history, *, title: str = "", chance: float | None = None):
    """Loss and accuracy of one training run (a proxy's ``history``: step, train_loss, train_acc, val_acc).

    Returns:
        The matplotlib ``Figure``.
    """
    import pandas as pd

    history = pd.DataFrame(history)
    fig, ax = plt.subplots(1, 2, figsize=(9, 3))
    ax[0].plot(history["step"], history["train_loss"])
    ax[0].set(xlabel="step", ylabel="training loss", title=title)
    ax[1].plot(history["step"], history["train_acc"], label="training batches")
    ax[1].plot(history["step"], history["val_acc"], label="held-out source maps")
    if chance is not None:
        ax[1].axhline(chance, color="grey", ls=":", label="chance")
    ax[1].set(xlabel="step", ylabel="accuracy")
    ax[1].legend()
    fig.tight_layout()
    return fig
