"""Attention sinks: removing them as the official preprocessing does, and mirroring causal maps.

DESIGN.md section 2. Causal models park much attention on the first token whatever the text
(Xiao et al., 2024); the official code zeroes such entries before comparing maps.
"""

from __future__ import annotations

import torch

__all__ = ["clean_sinks", "mirror_causal"]


def clean_sinks(maps: torch.Tensor, causal: bool, num_std: float = 3.0) -> torch.Tensor:
    """Remove attention sinks as the official preprocessing does (DESIGN.md section 2).

    In every row the largest entry and every entry above ``mean + num_std * std`` are
    zeroed, with mean and (population) standard deviation taken over the row's valid
    entries (the causal part ``j <= i`` for a causal model), and the row is renormalised.

    Args:
        maps: ``(..., T, T)`` float tensor of row-stochastic maps.
        causal: whether the maps come from a causal model (only ``j <= i`` is valid).
        num_std: threshold in standard deviations (paper: 3).

    Returns:
        ``(..., T, T)`` tensor, same dtype and device. A row whose whole mass was flagged
        (the first row of a causal map, say) becomes all zeros.

    Raises:
        ValueError: maps are not square.
    """
    if maps.ndim < 2 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(f"maps must be square (..., T, T); got shape {tuple(maps.shape)}")
    size = maps.shape[-1]
    valid = torch.ones(size, size, dtype=torch.bool, device=maps.device)
    if causal:
        valid = valid.tril()
    count = valid.sum(-1, keepdim=True).to(maps.dtype)
    values = maps * valid
    mean = values.sum(-1, keepdim=True) / count
    std = (((maps - mean) * valid) ** 2).sum(-1, keepdim=True).div(count).sqrt()
    flagged = (maps > mean + num_std * std) & valid
    argmax = values.masked_fill(~valid, float("-inf")).argmax(-1, keepdim=True)
    flagged = flagged.scatter(-1, argmax, True)
    kept = values.masked_fill(flagged, 0.0)
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
