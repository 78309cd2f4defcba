"""The paper's published numbers, in one place: every chapter and the report page read them here.

Liang et al., NeurIPS 2025 (arXiv 2511.05064). Typed in once from the paper's tables (retrieval and
visual proxy: section 4.1; syntax: 4.3; TOA transfer: 4.4); the book puts its own numbers beside
these, never instead. Model names are the paper's (Q = Qwen2, G = Gemma-2, L = Llama-3.x; BERT,
RoBERTa, ELECTRA).
"""

from __future__ import annotations

import pandas as pd

__all__ = ["retrieval", "proxy", "syntax", "toa_relation_extraction", "CAUSAL_PROXY_TARGETS"]

# SSIM retrieval, first-order OLA, Hits@1 / Hits@5 % (1000 texts).
_RETRIEVAL = [
    ("Qwen2-1.5B", "gemma-2-2b", 83.6, 89.4),
    ("Qwen2-1.5B", "Llama-3.2-3B", 95.9, 97.0),
    ("Llama-3.2-3B", "Qwen2-1.5B", 92.9, 96.1),
    ("Llama-3.2-3B", "gemma-2-2b", 94.1, 96.5),
]

#: Targets of the paper's causal visual-proxy table, in its column order.
CAUSAL_PROXY_TARGETS = ("Q-1b5", "Q-7b", "G-2b", "G-9b", "L-3b", "L-8b")
# Visual proxy, causal models, target accuracy % (1000 classes, 100k steps), per channel.
_PROXY = {
    "rollout": (27.9, 7.7, 52.6, 26.0, 66.1, 59.7),
    "order1": (52.6, 49.2, 93.1, 92.4, 94.6, 94.1),
    "order2": (67.1, 49.9, 89.3, 86.2, 90.7, 91.9),
    "alti": (22.6, 15.5, 69.3, 71.8, 85.6, 79.8),
}

# Dependency parsing from OLA alone (UD EWT), UAS / LAS % per channel.
_SYNTAX = {
    "BERT-base": {"order1": (81.29, 72.16), "order2": (72.86, 61.05), "order3": (66.44, 53.17), "rollout": (46.20, 30.69)},
    "RoBERTa-base": {"order1": (80.00, 70.44), "order2": (72.68, 60.10), "order3": (36.99, 18.67), "rollout": (35.77, 17.94)},
    "ELECTRA-base": {"order1": (81.23, 72.63), "order2": (77.47, 66.78), "order3": (50.72, 33.90), "rollout": (50.35, 34.02)},
}

# TOA relation extraction (SemEval-2010 Task 8), accuracy %: source -> targets, and zero-shot.
_TOA_RE_TARGETS = ("Qwen2-1.5B", "Gemma-2-2B", "Llama-3.2-3B")
_TOA_RE = {
    "Llama-3.2-3B": (30.49, 33.49, 35.57),
    "Qwen2-1.5B": (34.90, 30.95, 31.08),
    "zero-shot prompting": (7.69, 5.01, 14.65),
}


def retrieval() -> pd.DataFrame:
    """SSIM retrieval, first order: ``source, target, hits@1, hits@5`` (percent)."""
    return pd.DataFrame(_RETRIEVAL, columns=["source", "target", "hits@1", "hits@5"])


def proxy() -> pd.DataFrame:
    """Visual proxy, causal targets: rows = channel (``order1``, ``order2``, ``rollout``, ``alti``),
    columns = the paper's targets, values = accuracy %; plus ``mean``."""
    table = pd.DataFrame(_PROXY, index=list(CAUSAL_PROXY_TARGETS)).T
    table["mean"] = table.mean(axis=1)
    return table


def syntax() -> pd.DataFrame:
    """Dependency parsing from OLA: ``model, channel, uas, las`` (percent)."""
    rows = [(m, c, uas, las) for m, by in _SYNTAX.items() for c, (uas, las) in by.items()]
    return pd.DataFrame(rows, columns=["model", "channel", "uas", "las"])


def toa_relation_extraction() -> pd.DataFrame:
    """TOA transfer for relation extraction: rows = source (or zero-shot), columns = targets, accuracy %."""
    return pd.DataFrame(_TOA_RE, index=list(_TOA_RE_TARGETS)).T
