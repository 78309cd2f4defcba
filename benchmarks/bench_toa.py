"""Benchmark: TOA adapter training throughput (sentences per second, forward + backward + step).

Usage::

    python benchmarks/bench_toa.py [--sentences 160] [--threads 1 2] [--batch 8]

Trains the default adapter (:class:`olacore.toa.model.AdapterConfig`, 4 input channels:
the official order 1+2 raw + clean stack) for one pass over random row-stochastic maps whose
token counts follow those of the default syntax chapter (minilm-l6 on the first 500 EWT
train sentences: mean 29 tokens, cut at 64), in length-bucketed batches, once per task head
and torch thread count, all in one run; the official ``axial-attention`` backbone at the
same width and depth is timed alongside (ratio printed). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from olacore.toa.data import collate, length_batches
from olacore.toa.model import AdapterConfig, ToaModel


def _targets(kind: str, size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    if kind == "tokens":
        return {"labels": rng.integers(0, 40, size)}
    if kind == "relation":
        return {"spans": np.array([0, 1, size - 1, size]), "label": rng.integers(0, 19, 1)}
    words = np.arange(size)
    return {"words": words, "heads": rng.integers(0, size, size), "rels": rng.integers(0, 40, size)}


def throughput(kind: str, config: AdapterConfig, maps: list[torch.Tensor], batch: int, seed: int = 0) -> float:
    """Sentences per second of one training pass (after a one-batch warm-up)."""
    from olacore.toa.train import adapter_loss

    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    model = ToaModel(kind, maps[0].shape[0], 40, config)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3)
    targets = [_targets(kind, m.shape[-1], rng) for m in maps]
    batches = list(length_batches([m.shape[-1] for m in maps], batch, torch.Generator().manual_seed(seed)))

    def step(index):
        x, lengths, t = collate([maps[i] for i in index], [targets[i] for i in index], kind)
        extra = {"spans": t["spans"]} if kind == "relation" else {}
        loss = adapter_loss(kind, model(x, lengths, **extra), t)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()

    step(batches[0])
    start = time.perf_counter()
    for index in batches:
        step(index)
    return len(maps) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=160)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    lengths = np.clip(rng.normal(29, 13, args.sentences).round(), 4, 64).astype(int)
    maps = [torch.softmax(torch.randn(4, n, n) * 2, -1) for n in lengths]
    config = AdapterConfig()
    print(f"{args.sentences} sentences, mean {lengths.mean():.1f} tokens (max {lengths.max()}), batch {args.batch}; "
          f"adapter dim {config.dim}, depth {config.depth}, heads {config.heads}")
    for threads in args.threads:
        torch.set_num_threads(threads)
        for kind in ("dependency", "tokens", "relation"):
            rate = throughput(kind, config, maps, args.batch)
            print(f"{kind:10s} head, {threads} thr: {rate:7.1f} sentences/s")
        masked = throughput("tokens", config, maps, args.batch)
        package = throughput("tokens", AdapterConfig(backbone="package"), maps, args.batch)
        print(f"official axial-attention backbone (no mask, 3x3-conv feed-forwards), {threads} thr: "
              f"{package:7.1f} sentences/s; the masked adapter is {masked / package:.1f}x faster")


if __name__ == "__main__":
    main()
