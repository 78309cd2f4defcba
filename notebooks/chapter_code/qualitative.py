"""Chapter 02's first number: how much more alike two models' maps of the same text are than of other texts."""

from __future__ import annotations

import itertools
from typing import Mapping, Sequence

import pandas as pd

from olacore.maps import Maps
from olacore.similarity import pairwise_ssim

__all__ = ["same_text_gap"]


def same_text_gap(maps: Mapping[str, Maps], groups: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Mean SSIM of a map with the other model's map of the *same* text against *other* texts, per pair of
    models within a group and channel: ``group, model pair, channel, SSIM same text, SSIM different texts, gap``."""
    rows = []
    for group, names in groups.items():
        for source, target in itertools.combinations(names, 2):
            queries, gallery = maps[target].stack().double(), maps[source].stack().double()
            for c, (channel, _) in enumerate(maps[source].layout()):
                ssim = pairwise_ssim(queries[:, c], gallery[:, c], None)
                same = ssim.diagonal().mean().item()
                different = (ssim.sum() - ssim.diagonal().sum()).item() / (ssim.numel() - len(ssim))
                rows.append({"group": group, "model pair": f"{source} / {target}", "channel": channel,
                             "SSIM same text": same, "SSIM different texts": different, "gap": same - different})
    return pd.DataFrame(rows)
