"""Shared test helpers."""

from __future__ import annotations

import torch

torch.set_num_threads(max(1, min(2, torch.get_num_threads())))


def random_attention(generator: torch.Generator, batch: int, layers: int, size: int,
                     causal: bool, dtype=torch.float64) -> torch.Tensor:
    """Random row-stochastic ``(batch, layers, size, size)`` maps, lower-triangular if causal."""
    logits = torch.randn(batch, layers, size, size, generator=generator, dtype=dtype) * 2
    if causal:
        logits = logits.masked_fill(~torch.ones(size, size, dtype=torch.bool).tril(), float("-inf"))
    return logits.softmax(-1)
