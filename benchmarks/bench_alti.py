"""Benchmark: ALTI (:func:`olacore.alti.alti`) against plain attention extraction
(:func:`olacore.extraction.extract_attention`) of the same texts, per model.

Usage::

    python benchmarks/bench_alti.py [--models minilm-l6 smollm2-135m] [--texts 100] [--threads 1]

Both run on the same EWT chunks of 50 words (``olacore.texts.similarity_texts``), one text per pass, with
the torch thread count pinned, each after a two-text warm-up, alternated ``--repeats`` times
(best of each reported), in one run: the ratio
ALTI / extraction is what to read (goal: at most 2x). ALTI holds one layer's tensors at a time
and ``T x T x d`` transformed values per block of key tokens, never all layers'.

As a sanity check of the maps it also prints, per model, the mean Spearman correlation (over
texts; entries on and below the diagonal for causal models, all entries for encoders) of the
ALTI rollout with the first-order OLA and with attention rollout of the same texts. Asserts
nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from scipy.stats import spearmanr

from olacore.alti import alti
from olacore.texts import similarity_texts
from olacore.extraction import extract_attention
from olacore.loading import load_model
from olacore.ola import attention_rollout, order_level_attention
from olacore.profiles import CAUSAL_ZOO, ENCODER_ZOO


def _spearman(a: torch.Tensor, b: torch.Tensor, causal: bool) -> float:
    size = a.shape[-1]
    keep = torch.ones(size, size, dtype=torch.bool)
    if causal:
        keep = keep.tril()
    return float(spearmanr(a[keep].numpy(), b[keep].numpy()).statistic)


def bench_model(name: str, texts: list[str], repeats: int) -> dict:
    model = load_model(name, device="cpu")
    extract_attention(model, texts[:2], progress=False)  # warm-up
    alti(model, texts[:2], progress=False)
    extraction_s = alti_s = float("inf")
    for _ in range(repeats):  # alternated, best of each: the machine may be shared
        start = time.perf_counter()
        extractions = extract_attention(model, texts, progress=False)
        extraction_s = min(extraction_s, time.perf_counter() - start)
        start = time.perf_counter()
        results = alti(model, texts, progress=False)
        alti_s = min(alti_s, time.perf_counter() - start)
    tokens = sum(len(r.tokens) for r in results)
    ola_rho, rollout_rho = [], []
    for extraction, result in zip(extractions, results):
        attentions = extraction.attentions.double()
        first = order_level_attention(attentions, 1)[1]
        ola_rho.append(_spearman(result.rollout.double(), first, model.is_causal))
        rollout_rho.append(_spearman(result.rollout.double(), attention_rollout(attentions), model.is_causal))
    return {
        "name": name,
        "tokens": tokens,
        "mean_T": tokens / len(texts),
        "extraction_s": extraction_s,
        "alti_s": alti_s,
        "ola_rho": float(np.mean(ola_rho)),
        "rollout_rho": float(np.mean(rollout_rho)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=CAUSAL_ZOO + ENCODER_ZOO)
    parser.add_argument("--texts", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1, help="alternated runs of each; the best is reported")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = [t.text for t in similarity_texts(args.texts)]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), float32, CPU; "
          f"{len(texts)} EWT chunks of 50 words, one text per pass, best of {args.repeats}")
    print(f"{'model':14s} {'mean T':>6s} {'extract s':>9s} {'ALTI s':>8s} {'ratio':>6s}  "
          f"{'rho(ALTI, OLA1)':>15s} {'rho(ALTI, rollout)':>18s}")
    for name in args.models:
        row = bench_model(name, texts, args.repeats)
        print(f"{name:14s} {row['mean_T']:6.1f} {row['extraction_s']:9.2f} {row['alti_s']:8.2f} "
              f"{row['alti_s'] / row['extraction_s']:5.2f}x  {row['ola_rho']:15.3f} {row['rollout_rho']:18.3f}",
              flush=True)


if __name__ == "__main__":
    main()
