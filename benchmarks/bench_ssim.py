"""Benchmark: batched :func:`olacore.pairwise_ssim` against scikit-image pair by pair.

Usage::

    python benchmarks/bench_ssim.py [--queries 100] [--gallery 100] [--size 50] [--threads 1 2]

Times one ``Q x G`` SSIM matrix of ``size x size`` float64 maps both ways and prints how
far apart they are and the speed-up (goal: at least 100x), in float64 and in float32 (the
dtype the attention cache stores), once per torch thread count. The defaults are the
book's default retrieval (100 texts, maps resized to 50 x 50). scikit-image is timed once,
in the same run; it uses one thread whatever torch is set to. A last line checks the
low-contrast case of issue #13 (float32 maps ``0.5 + 1e-4 * noise``, ``data_range=None``),
where uncentred moments gave SSIM values near 100.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
import torch
from skimage.metrics import structural_similarity

from olacore import pairwise_ssim


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--gallery", type=int, default=100)
    parser.add_argument("--size", type=int, default=50)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts to time")
    parser.add_argument("--repeats", type=int, default=7, help="best of this many runs of the batched version")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    queries = rng.random((args.queries, args.size, args.size)) ** 4
    gallery = rng.random((args.gallery, args.size, args.size)) ** 4

    start = time.perf_counter()
    reference = np.array([
        [structural_similarity(q, g, gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=1.0) for g in gallery]
        for q in queries
    ])
    skimage_seconds = time.perf_counter() - start

    pairs = args.queries * args.gallery
    print(f"{pairs} pairs of {args.size}x{args.size} maps")
    print(f"scikit-image, pair by pair (float64)   : {skimage_seconds:8.3f} s ({1e3 * skimage_seconds / pairs:.3f} ms per pair)")
    for threads, dtype in itertools.product(args.threads, (torch.float64, torch.float32)):
        torch.set_num_threads(threads)
        q, g = torch.from_numpy(queries).to(dtype), torch.from_numpy(gallery).to(dtype)
        pairwise_ssim(q[:2], g[:2], 1.0)  # warm-up
        batched_seconds = float("inf")
        for _ in range(args.repeats):
            start = time.perf_counter()
            ours = pairwise_ssim(q, g, 1.0)
            batched_seconds = min(batched_seconds, time.perf_counter() - start)
        error = float(np.abs(ours.double().numpy() - reference).max())
        name = str(dtype).replace("torch.", "")
        print(
            f"olacore.pairwise_ssim ({name:7s}, {threads} thr): {batched_seconds:8.3f} s "
            f"({1e6 * batched_seconds / pairs:.1f} us per pair), max |diff| {error:.1e}, "
            f"speed-up {skimage_seconds / batched_seconds:.0f}x"
        )
    low = 0.5 + 1e-4 * rng.random((10, args.size, args.size))
    low32 = torch.from_numpy(low).float()
    low64 = low32.double().numpy()
    reference = np.array([[structural_similarity(q, g, gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
                                                 data_range=max(np.ptp(q), np.ptp(g))) for g in low64] for q in low64])
    ours = pairwise_ssim(low32, low32, None).double().numpy()
    print(f"low-contrast float32 maps (0.5 + 1e-4 noise, data_range=None): values {ours.min():.3f}..{ours.max():.3f}, "
          f"max |diff| to scikit-image {np.abs(ours - reference).max():.1e}")


if __name__ == "__main__":
    main()
