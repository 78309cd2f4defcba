"""Attention sinks: removed as the official preprocessing does (``models/ola_utils.py``); causal maps mirrored.

Causal models park attention on the first token (Xiao et al., 2024). The official rule (``get_outliers_mask``,
``cal_maskes`` in ``models/ola_utils.py``, applied by ``preprocess_ola`` in ``models/ola_model.py``) flags in each
row every entry equal to the row maximum or above ``mean + 3 std`` (sample std, ``n - 1``), zeroes them and
renormalises the row. Mean and std are taken (:data:`SINK_STATS`) over the whole row, a causal map's zeros included
(``"row"``: the official ``olas_retrieval.py`` and ``olas_visual_model.py`` build ``ClassifyDataset`` with
``is_casual=False``), or over the causal part ``j <= i`` (``"causal"``: the official TOA path, ``OLAModel.forward``
in ``models/ola_model.py``, passes the causal flag). For a bidirectional map both are the whole row.
"""

from __future__ import annotations

import torch

__all__ = ["SINK_STATS", "stats_mask", "clean_sinks", "sink_flags", "mirror_causal"]

SINK_STATS = ("row", "causal")


def stats_mask(size: int, causal: bool, stats: str = "row", device: torch.device | str | None = None) -> torch.Tensor:
    """The entries a row's statistics cover: ``(T, T)`` bool, ``j <= i`` for a causal map with
    ``stats="causal"``, every entry otherwise (also where the official augmentations of :mod:`olacore.augment` act).

    Raises:
        ValueError: an unknown ``stats``.
    """
    if stats not in SINK_STATS:
        raise ValueError(f"stats must be one of {SINK_STATS} ('row': the official similarity scripts, 'causal': "
                         f"the official TOA path); got {stats!r}")
    valid = torch.ones(size, size, dtype=torch.bool, device=device)
    return valid.tril() if causal and stats == "causal" else valid


def sink_flags(maps: torch.Tensor, causal: bool, num_std: float = 3.0, stats: str = "row") -> torch.Tensor:
    """The entries the official rule flags as sinks (official ``get_outliers_mask``).

    ``(..., T, T)`` row-stochastic maps -> ``(..., T, T)`` bool: entries equal to their row's maximum over the covered
    entries (ties all flagged) or above ``mean + num_std * std`` (sample std; paper: 3); ``stats``: :data:`SINK_STATS`.

    Raises:
        ValueError: an unknown ``stats``.
    """
    valid = stats_mask(maps.shape[-1], causal, stats, maps.device)
    count = valid.sum(-1, keepdim=True).to(maps.dtype)
    values = maps * valid
    mean = values.sum(-1, keepdim=True) / count
    variance = (((maps - mean) * valid) ** 2).sum(-1, keepdim=True) / (count - 1).clamp_min(1e-10)
    above = values > mean + num_std * variance.sqrt()
    at_max = values == values.amax(-1, keepdim=True)
    return (above | at_max) & valid


def clean_sinks(maps: torch.Tensor, causal: bool, num_std: float = 3.0, stats: str = "row") -> torch.Tensor:
    """Remove attention sinks by the official rule (``models/ola_utils.py``).

    Zeroes every entry :func:`sink_flags` flags and every entry outside the statistics' support (above the diagonal
    with ``stats="causal"``: the official TOA path; ``"row"``: the official ``olas_retrieval.py`` and
    ``olas_visual_model.py``), then renormalises each row: ``(..., T, T)``, same dtype and device; a row whose whole
    mass was flagged becomes all zeros.

    Raises:
        ValueError: maps are not square, or ``stats`` is unknown.
    """
    flagged = sink_flags(maps, causal, num_std, stats)
    valid = stats_mask(maps.shape[-1], causal, stats, maps.device)
    kept = (maps * valid).masked_fill(flagged, 0.0)
    mass = kept.sum(-1, keepdim=True)
    return kept / torch.where(mass > 0, mass, torch.ones_like(mass))


def mirror_causal(maps: torch.Tensor) -> torch.Tensor:
    """Fill the upper triangle of causal maps with the transpose of the lower one (TOA input).

    ``(..., T, T)`` lower-triangular ``L`` -> symmetric ``L + L^T - diag(L)``.
    """
    lower = maps.tril()
    return lower + lower.transpose(-1, -2).triu(1)
