"""Run profiles: one ``profile`` parameter sets every size a notebook uses (DESIGN.md section 6).

- ``smoke``: seconds to a few minutes per notebook on real models, tiny sizes; tests and CI.
- ``default``: the published book on a 2-core CPU (whole book under an hour cold).
- ``paper``: the paper's models and sizes, for a GPU machine with a model hub.

Each chapter owns one entry of :data:`CHAPTERS`; notebooks call :func:`settings`.
"""

from __future__ import annotations

from typing import Any

PROFILES = ("smoke", "default", "paper")

CAUSAL_ZOO = ["smollm2-135m", "gemma-3-270m", "qwen2.5-0.5b"]
ENCODER_ZOO = ["minilm-l6", "mpnet-base"]
PAPER_CAUSAL = [
    "Qwen/Qwen2-1.5B-Instruct",
    "google/gemma-2-2b-it",
    "meta-llama/Llama-3.2-3B-Instruct",
]
PAPER_ENCODERS = ["bert-base-cased", "roberta-base", "google/electra-base-generator"]

CHAPTERS: dict[str, dict[str, dict[str, Any]]] = {
    "derivation": {
        "smoke": {"model": "minilm-l6", "bench_layers": [4, 8], "bench_orders": [1, 2], "bench_size": 16, "bench_batch": 2, "bench_repeats": 1},
        "default": {"model": "smollm2-135m", "bench_layers": [6, 12, 18, 24], "bench_orders": [1, 2, 3], "bench_size": 70, "bench_batch": 16, "bench_repeats": 3},
        "paper": {"model": "Qwen/Qwen2-1.5B-Instruct", "bench_layers": [6, 12, 18, 24, 28], "bench_orders": [1, 2, 3, 4], "bench_size": 70, "bench_batch": 16, "bench_repeats": 5},
    },
    "qualitative": {
        "smoke": {"causal": CAUSAL_ZOO, "encoders": ENCODER_ZOO, "num_texts": 4, "max_order": 3, "size": 50},
        "default": {"causal": CAUSAL_ZOO, "encoders": ENCODER_ZOO, "num_texts": 40, "max_order": 3, "size": 50},
        "paper": {"causal": PAPER_CAUSAL, "encoders": PAPER_ENCODERS, "num_texts": 200, "max_order": 3, "size": 50},
    },
}


def settings(chapter: str, profile: str) -> dict[str, Any]:
    """Return the sizes of ``chapter`` under ``profile`` (a fresh dict the caller may edit).

    Raises:
        ValueError: unknown chapter or profile; the message lists the known ones.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    if chapter not in CHAPTERS:
        raise ValueError(f"unknown chapter {chapter!r}; known: {', '.join(sorted(CHAPTERS))}")
    return dict(CHAPTERS[chapter][profile])
