"""Benchmark: the OLA recurrence against enumeration and against its bare products,
and attention extraction throughput per model. Run: ``make bench`` or
``python benchmarks/bench_ola.py [--threads 2] [--skip-extraction]``.

Reports ratios measured in one run (same inputs, same threads); asserts nothing.
"""

from __future__ import annotations

import argparse
import time

import torch

from olacore.benchmark import time_ola


def extraction_throughput(names: list[str], texts: list[str]) -> None:
    from olacore.extraction import extract_attention
    from olacore.loading import load_model

    for name in names:
        model = load_model(name, device="cpu")
        extract_attention(model, texts[:2], progress=False)  # warm-up
        start = time.perf_counter()
        results = extract_attention(model, texts, progress=False)
        seconds = time.perf_counter() - start
        tokens = sum(len(r.tokens) for r in results)
        print(f"  {name:14s} {tokens / seconds:8.0f} tokens/s  ({len(texts)} texts, {tokens} tokens, {seconds:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-extraction", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, CPU")

    timing = time_ola(num_layers=24, max_order=3, size=70, batch=16, repeats=3)
    print("OLA at N=24, K=3, T=70, batch 16:")
    print(f"  recurrence      {timing.recurrence_s * 1e3:9.1f} ms")
    print(f"  enumeration     {timing.bruteforce_s * 1e3:9.1f} ms  -> recurrence is "
          f"{timing.speedup_over_bruteforce:.0f}x faster (goal >= 30x)")
    print(f"  bare N*K products {timing.bare_products_s * 1e3:7.1f} ms  -> recurrence takes "
          f"{timing.overhead_over_bare_products:.2f}x their time (goal <= 2x)")

    if not args.skip_extraction:
        from olacore.texts import similarity_texts
        from olacore.profiles import CAUSAL_ZOO, ENCODER_ZOO

        texts = [t.text for t in similarity_texts(32)]
        print("Attention extraction, 32 EWT chunks of 50 words, batch 8:")
        extraction_throughput(CAUSAL_ZOO + ENCODER_ZOO, texts)


if __name__ == "__main__":
    main()
