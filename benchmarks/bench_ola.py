"""Benchmark: the OLA recurrence against enumeration and against its bare products.
Run: ``python benchmarks/bench_ola.py [--threads 2]``.

Reports ratios measured in one run (same inputs, same threads); asserts nothing. Extraction's cost per model is
measured against the machine by ``benchmarks/bench_phases.py`` (``make bench``).
"""

from __future__ import annotations

import argparse

import torch

from measure import time_ola  # benchmarks/measure.py, beside this script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
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


if __name__ == "__main__":
    main()
