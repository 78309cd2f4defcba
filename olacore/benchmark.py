"""Timing the OLA recurrence against enumeration and against its bare matrix products.

Used by ``benchmarks/bench_ola.py`` and the derivation chapter. Ratios are measured in one run, on
the same random inputs and thread count; they are reported, never asserted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from olacore.ola import order_level_attention, order_level_attention_bruteforce


@dataclass(frozen=True)
class OLATiming:
    """Seconds per call (best of ``repeats``) for one ``(N, K, T, batch)`` setting."""

    num_layers: int
    max_order: int
    size: int
    batch: int
    recurrence_s: float
    bruteforce_s: float
    bare_products_s: float

    @property
    def speedup_over_bruteforce(self) -> float:
        return self.bruteforce_s / self.recurrence_s

    @property
    def overhead_over_bare_products(self) -> float:
        return self.recurrence_s / self.bare_products_s


def _best_of(repeats: int, function) -> float:
    """The best of ``repeats`` timed calls, after one untimed call that pays the one-time costs (first use of a
    kernel or a shape, the allocator's first blocks): a single timed call would otherwise measure those."""
    function()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def random_row_stochastic(batch: int, num_layers: int, size: int, causal: bool = True,
                          seed: int = 0, dtype=torch.float32, device="cpu") -> torch.Tensor:
    """``(batch, N, T, T)`` random row-stochastic maps (lower-triangular if ``causal``)."""
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, num_layers, size, size, generator=generator, dtype=dtype)
    if causal:
        logits = logits.masked_fill(~torch.ones(size, size, dtype=torch.bool).tril(), float("-inf"))
    return logits.softmax(-1).to(device)


def time_ola(num_layers: int, max_order: int, size: int, batch: int, repeats: int = 3,
             device="cpu") -> OLATiming:
    """Time the recurrence, brute-force enumeration and the ``N * K`` bare products.

    Args:
        num_layers, max_order, size, batch: ``N``, ``K``, ``T`` and the batch of maps.
        repeats: calls per method (enumeration: ``repeats // 3``, at least 1); the best time is kept.
    """
    attn = random_row_stochastic(batch, num_layers, size, device=device)
    recurrence = _best_of(repeats, lambda: order_level_attention(attn, max_order))
    enumeration = _best_of(max(1, repeats // 3), lambda: order_level_attention_bruteforce(attn, max_order))
    operand = attn[:, 0]

    def bare_products():
        out = operand
        for _ in range(num_layers * max_order):
            out = operand @ out
        return out

    bare = _best_of(repeats, bare_products)
    return OLATiming(num_layers, max_order, size, batch, recurrence, enumeration, bare)
