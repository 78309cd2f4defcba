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
    "syntax": {
        # models: every model of the grid; first_subtoken: models also run on first-sub-token maps;
        # random_init / raw_layers: models of those baselines; seeds: extra probe seeds (order 1).
        "smoke": {"models": ["minilm-l6", "smollm2-135m"], "first_subtoken": ["minilm-l6"], "random_init": ["minilm-l6"],
                  "raw_layers": ["minilm-l6"], "seed_models": [], "num_train": 40, "num_dev": 20, "num_test": 20,
                  "epochs": 3, "seeds": [0], "max_len": 64, "batch_size": 8},
        "default": {"models": CAUSAL_ZOO + ENCODER_ZOO, "first_subtoken": ["minilm-l6"], "random_init": ["minilm-l6"],
                    "raw_layers": ["minilm-l6"], "seed_models": ["minilm-l6"], "num_train": 500, "num_dev": 150,
                    "num_test": 300, "epochs": 5, "seeds": [0, 1, 2], "max_len": 64, "batch_size": 8},
        "paper": {"models": PAPER_ENCODERS, "first_subtoken": PAPER_ENCODERS, "random_init": PAPER_ENCODERS,
                  "raw_layers": PAPER_ENCODERS, "seed_models": PAPER_ENCODERS, "num_train": None, "num_dev": None,
                  "num_test": None, "epochs": 30, "seeds": [0, 1, 2], "max_len": 128, "batch_size": 32},
    },
    # Chapter "Quantitative OLAS" (issue 3): SSIM retrieval and the ResNet-18 visual proxy.
    # proxy_*: the proxy trains on the first proxy_num_texts texts (classes), maps resized to
    # proxy_size; width 64 = ResNet-18; the paper: SGD lr 0.007, momentum 0.9, wd 5e-4, batch 20, 100k steps.
    # The default's 400 steps were chosen on held-out *source* maps only (target gemma-3-270m,
    # order 1, seed 0; best validation accuracy): 60 steps 22 %, 200 44 %, 400 54 %, 800 50 %,
    # 1600 54 %; width 16 (48 %) and 32 px (48 %) did no better at 400 steps.
    "quantitative": {
        "smoke": {"causal": ["gemma-3-270m", "qwen2.5-0.5b"], "encoders": ENCODER_ZOO, "num_texts": 8, "max_order": 3, "size": 50,
                  "proxy_num_texts": 8, "proxy_size": 24, "proxy_width": 8, "proxy_iterations": 10, "proxy_batch": 8,
                  "proxy_lr": 0.05, "proxy_eval_every": 5, "proxy_cosine": True, "seeds": [0]},
        "default": {"causal": CAUSAL_ZOO, "encoders": ENCODER_ZOO, "num_texts": 100, "max_order": 3, "size": 50,
                    "proxy_num_texts": 50, "proxy_size": 24, "proxy_width": 8, "proxy_iterations": 400, "proxy_batch": 20,
                    "proxy_lr": 0.05, "proxy_eval_every": 50, "proxy_cosine": True, "seeds": [0, 1, 2]},
        "paper": {"causal": PAPER_CAUSAL, "encoders": PAPER_ENCODERS, "num_texts": 1000, "max_order": 3, "size": 50,
                  "proxy_num_texts": 1000, "proxy_size": 50, "proxy_width": 64, "proxy_iterations": 100_000, "proxy_batch": 20,
                  "proxy_lr": 0.007, "proxy_eval_every": 1000, "proxy_cosine": False, "seeds": [0, 1, 2]},
    },
    # Chapter "Where OLAS comes from" (issue 3): controls. The target model gets the controls and
    # queries a trained source; the encoder pair carries the full noise sweep (cheap to extract).
    "controls": {
        "smoke": {"encoder_target": "minilm-l6", "encoder_source": "mpnet-base", "encoder_texts": 8, "encoder_noise": [0.1, 1.0],
                  "causal_target": "gemma-3-270m", "causal_source": "qwen2.5-0.5b", "causal_texts": 8, "causal_noise": [],
                  "max_order": 3, "size": 50, "seed": 0, "proxy_size": 24, "proxy_width": 8, "proxy_iterations": 10,
                  "proxy_batch": 8, "proxy_lr": 0.05, "proxy_eval_every": 5, "seeds": [0]},
        "default": {"encoder_target": "minilm-l6", "encoder_source": "mpnet-base", "encoder_texts": 100,
                    "encoder_noise": [0.01, 0.03, 0.1, 0.3, 1.0],
                    "causal_target": "gemma-3-270m", "causal_source": "qwen2.5-0.5b", "causal_texts": 40, "causal_noise": [0.1, 1.0],
                    "max_order": 3, "size": 50, "seed": 0, "proxy_size": 24, "proxy_width": 8, "proxy_iterations": 400,
                    "proxy_batch": 20, "proxy_lr": 0.05, "proxy_eval_every": 50, "seeds": [0, 1, 2]},
        "paper": {"encoder_target": "roberta-base", "encoder_source": "bert-base-cased", "encoder_texts": 1000,
                  "encoder_noise": [0.01, 0.03, 0.1, 0.3, 1.0],
                  "causal_target": "Qwen/Qwen2-1.5B-Instruct", "causal_source": "google/gemma-2-2b-it", "causal_texts": 1000,
                  "causal_noise": [0.01, 0.03, 0.1, 0.3, 1.0],
                  "max_order": 3, "size": 50, "seed": 0, "proxy_size": 50, "proxy_width": 64, "proxy_iterations": 100_000,
                  "proxy_batch": 20, "proxy_lr": 0.007, "proxy_eval_every": 1000, "seeds": [0, 1, 2]},
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
