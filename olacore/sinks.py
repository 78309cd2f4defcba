"""Attention sinks: removing them as the official preprocessing does (``models/ola_utils.py``), and mirroring causal maps.

Causal models park much attention on the first token whatever the text
(Xiao et al., 2024). The official code zeroes such entries before comparing maps, by this rule
(``get_outliers_mask`` and ``cal_maskes`` in the official ``models/ola_utils.py``, applied by
``preprocess_ola`` in ``models/ola_model.py``): in each row flag every entry equal to the row
maximum and every entry above ``mean + 3 std`` (sample standard deviation, ``n - 1``), zero them
and renormalise the row. Where mean and std are taken is the one choice that differs between
experiments (:data:`SINK_STATS`):

- ``"row"``: over the whole row, the structural zeros above the diagonal of a causal map
  included. The official similarity scripts (``olas_retrieval.py``, ``olas_visual_model.py``)
  build their ``ClassifyDataset`` without the causal flag (``is_casual=False`` is its default),
  so this is what their retrieval and visual proxy do for causal models.
- ``"causal"``: over the causal part ``j <= i`` of a causal map. The official TOA path
  (``OLAModel.forward`` in ``models/ola_model.py``) passes the model's causal flag.

For a bidirectional (encoder) map both are the whole row.
"""

from __future__ import annotations

import torch

__all__ = ["SINK_STATS", "stats_mask", "clean_sinks", "sink_flags", "mirror_causal"]

SINK_STATS = ("row", "causal")


def stats_mask(size: int, causal: bool, stats: str = "row", device: torch.device | str | None = None) -> torch.Tensor:
    """The entries a row's statistics cover: ``(T, T)`` bool, ``j <= i`` for a causal map with
    ``stats="causal"``, every entry otherwise (module docstring; also where the official
    augmentations of :mod:`olacore.augment` act).

    Raises:
        ValueError: an unknown ``stats`` (the message lists both).
    """
    if stats not in SINK_STATS:
        raise ValueError(f"stats must be one of {SINK_STATS} ('row': the official similarity scripts, 'causal': "
                         f"the official TOA path); got {stats!r}")
    valid = torch.ones(size, size, dtype=torch.bool, device=device)
    return valid.tril() if causal and stats == "causal" else valid


def sink_flags(maps: torch.Tensor, causal: bool, num_std: float = 3.0, stats: str = "row") -> torch.Tensor:
    """The entries the official rule flags as sinks (module docstring; official ``get_outliers_mask``).

    Args:
        maps: ``(..., T, T)`` float tensor of row-stochastic maps.
        causal: whether the maps come from a causal model.
        num_std: threshold in (sample) standard deviations (paper: 3).
        stats: ``"row"`` or ``"causal"``: where mean and std are taken (:data:`SINK_STATS`).

    Returns:
        ``(..., T, T)`` bool tensor: every entry equal to its row's maximum (over the entries
        the statistics cover; ties are all flagged) or above ``mean + num_std * std``.

    Raises:
        ValueError: an unknown ``stats`` (the message lists both).
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
    """Remove attention sinks by the official rule (``models/ola_utils.py``; module docstring).

    Every entry :func:`sink_flags` flags is zeroed, entries outside the statistics' support
    (above the diagonal with ``stats="causal"``) are zeroed too, and each row is renormalised.

    Args:
        maps: ``(..., T, T)`` float tensor of row-stochastic maps.
        causal: whether the maps come from a causal model.
        num_std: threshold in sample standard deviations (paper: 3).
        stats: ``"row"`` (default: the official similarity scripts ``olas_retrieval.py`` and
            ``olas_visual_model.py``) or ``"causal"`` (the official TOA path, ``models/ola_model.py``).

    Returns:
        ``(..., T, T)`` tensor, same dtype and device. A row whose whole mass was flagged
        (the first row of a causal map, say) becomes all zeros.

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

    Args:
        maps: ``(..., T, T)`` lower-triangular tensor.

    Returns:
        ``(..., T, T)`` symmetric tensor ``L + L^T - diag(L)``.
    """
    lower = maps.tril()
    return lower + lower.transpose(-1, -2).triu(1)
