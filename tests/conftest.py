"""Shared test helpers."""

from __future__ import annotations

import pytest
import torch

torch.set_num_threads(max(1, min(2, torch.get_num_threads())))


@pytest.fixture
def one_thread():
    """Small networks on a shared 2-core machine train fastest on one thread."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def random_attention(generator: torch.Generator, batch: int, layers: int, size: int,
                     causal: bool, dtype=torch.float64) -> torch.Tensor:
    """Random row-stochastic ``(batch, layers, size, size)`` maps, lower-triangular if causal."""
    logits = torch.randn(batch, layers, size, size, generator=generator, dtype=dtype) * 2
    if causal:
        logits = logits.masked_fill(~torch.ones(size, size, dtype=torch.bool).tril(), float("-inf"))
    return logits.softmax(-1)
