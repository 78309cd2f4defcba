"""Heatmaps of OLA maps, shared by the command line and the notebooks."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import torch


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
        title: figure title.
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
                ax.set_xticks(range(len(ticks)), ticks, rotation=90, fontsize=6)
                ax.set_yticks(range(len(ticks)), ticks, fontsize=6)
            else:
                ax.set_xticks([])
                ax.set_yticks([])
            if r == 0:
                ax.set_title(panel, fontsize=10)
            if c == 0:
                ax.set_ylabel(row_name, fontsize=10)
    if title:
        fig.suptitle(title)
    return fig
