"""Run profiles: one ``profile`` parameter sets every size a chapter uses.

The book's introduction tells readers how to use them ("Re-running a chapter with other parameters").

- ``smoke``: seconds to a few minutes per notebook on real models, tiny sizes; tests and CI.
- ``default``: the published book on a 2-core CPU (whole book under an hour cold).
- ``paper``: the paper's models and sizes, for a GPU machine with a model hub.

Each chapter has one settings class, validated when it is made; :func:`settings` returns the
instance of a chapter and profile, with a notebook's own parameters applied on top.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from olacore.augment import BatchAugmentation
from olacore.proxy import ProxyConfig

__all__ = [
    "PROFILES", "CAUSAL_ZOO", "ENCODER_ZOO", "settings", "DerivationSettings", "QualitativeSettings",
    "QuantitativeSettings", "ControlsSettings",
]

PROFILES = ("smoke", "default", "paper")

CAUSAL_ZOO = ("smollm2-135m", "gemma-3-270m", "qwen2.5-0.5b")
ENCODER_ZOO = ("minilm-l6", "mpnet-base")
PAPER_CAUSAL = ("Qwen/Qwen2-1.5B-Instruct", "google/gemma-2-2b-it", "meta-llama/Llama-3.2-3B-Instruct")
PAPER_ENCODERS = ("bert-base-cased", "roberta-base", "google/electra-base-generator")


class _Validated:
    """Checks every field when an instance is made: ints positive (``seed`` may be 0), model
    lists and seed lists non-empty, noise scales and orders non-negative."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            where = f"{type(self).__name__}.{f.name}"
            if isinstance(value, bool):
                continue
            if isinstance(value, int) and value < (0 if f.name == "seed" else 1):
                raise ValueError(f"{where} must be {'>= 0' if f.name == 'seed' else 'positive'}; got {value}")
            if isinstance(value, tuple) and f.name in ("causal", "encoders", "models", "seeds") and not value:
                raise ValueError(f"{where} must not be empty")
            if isinstance(value, tuple) and any(isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0
                                                for v in value):
                raise ValueError(f"{where} holds a negative value: {value}")


@dataclass(frozen=True)
class DerivationSettings(_Validated):
    """Chapter "From rollout to OLA": the model whose attention checks the identities, and the
    recurrence-vs-enumeration benchmark grid (``N`` layers x ``K`` orders, ``T`` tokens, batch), and
    the models whose ALTI is drawn beside their OLA orders."""

    model: str
    bench_layers: tuple[int, ...]
    bench_orders: tuple[int, ...]
    bench_size: int
    bench_batch: int
    bench_repeats: int
    alti_models: tuple[str, ...] = ("smollm2-135m", "minilm-l6")


@dataclass(frozen=True)
class QualitativeSettings(_Validated):
    """Chapter "OLAS by eye": the models, the number of similarity texts for the first SSIM
    number, the highest order drawn and the resize side."""

    causal: tuple[str, ...]
    encoders: tuple[str, ...]
    num_texts: int
    max_order: int
    size: int


@dataclass(frozen=True)
class QuantitativeSettings(_Validated):
    """Chapter "Quantitative OLAS": retrieval over ``num_texts`` texts at ``size``; the visual
    proxy on the first ``proxy_num_texts`` texts (classes), maps resized to ``proxy_size``; the
    official proxy protocol (:mod:`olacore.proxy.official`: first order, causal targets, the same
    ``proxy`` sizes and ``seeds``) evaluates the target every ``official_eval_every`` steps
    (the official ``olas_visual_model.py``: every 100 of 100k steps).

    The default's 400 proxy steps were chosen on held-out *source* maps only (target
    gemma-3-270m, order 1, seed 0; best validation accuracy): 60 steps 22 %, 200 44 %, 400 54 %,
    800 50 %, 1600 54 %; width 16 (48 %) and 32 px (48 %) did no better at 400 steps.
    """

    causal: tuple[str, ...]
    encoders: tuple[str, ...]
    num_texts: int
    max_order: int
    size: int
    proxy_num_texts: int
    proxy_size: int
    proxy: ProxyConfig
    seeds: tuple[int, ...]
    official_eval_every: int

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.proxy_num_texts > self.num_texts:
            raise ValueError(f"proxy_num_texts ({self.proxy_num_texts}) cannot exceed num_texts ({self.num_texts})")
        if self.official_eval_every > self.proxy.iterations:
            raise ValueError(f"official_eval_every ({self.official_eval_every}) exceeds the proxy's "
                             f"{self.proxy.iterations} steps: the official protocol would never evaluate")


@dataclass(frozen=True)
class ControlsSettings(_Validated):
    """Chapter "Where OLAS comes from": the target model gets the controls and queries a trained
    source; the encoder pair carries the full noise sweep (cheap to extract)."""

    encoder_target: str
    encoder_source: str
    encoder_texts: int
    encoder_noise: tuple[float, ...]
    causal_target: str
    causal_source: str
    causal_texts: int
    causal_noise: tuple[float, ...]
    max_order: int
    size: int
    seed: int
    proxy_size: int
    proxy: ProxyConfig
    seeds: tuple[int, ...]


_CPU_PROXY = dict(batch_size=20, lr=0.05, width=8, augment=BatchAugmentation(), cosine=True)
_PAPER_PROXY = ProxyConfig(iterations=100_000, batch_size=20, lr=0.007, width=64, eval_every=1000, augment=BatchAugmentation())

_PROFILES: dict[str, dict[str, Any]] = {
    "derivation": {
        "smoke": DerivationSettings("minilm-l6", (4, 8), (1, 2), 16, 2, 1),
        "default": DerivationSettings("smollm2-135m", (6, 12, 18, 24), (1, 2, 3), 70, 16, 3),
        "paper": DerivationSettings("Qwen/Qwen2-1.5B-Instruct", (6, 12, 18, 24, 28), (1, 2, 3, 4), 70, 16, 5,
                                   alti_models=("Qwen/Qwen2-1.5B-Instruct", "minilm-l6")),
    },
    "qualitative": {
        "smoke": QualitativeSettings(CAUSAL_ZOO, ENCODER_ZOO, num_texts=4, max_order=3, size=50),
        "default": QualitativeSettings(CAUSAL_ZOO, ENCODER_ZOO, num_texts=40, max_order=3, size=50),
        "paper": QualitativeSettings(PAPER_CAUSAL, PAPER_ENCODERS, num_texts=200, max_order=3, size=50),
    },
    "quantitative": {
        "smoke": QuantitativeSettings(("gemma-3-270m", "qwen2.5-0.5b"), ENCODER_ZOO, num_texts=8, max_order=3, size=50,
                                      proxy_num_texts=8, proxy_size=24, seeds=(0,), official_eval_every=5,
                                      proxy=ProxyConfig(iterations=10, eval_every=5, **{**_CPU_PROXY, "batch_size": 8})),
        "default": QuantitativeSettings(CAUSAL_ZOO, ENCODER_ZOO, num_texts=100, max_order=3, size=50,
                                        proxy_num_texts=50, proxy_size=24, seeds=(0, 1, 2), official_eval_every=20,
                                        proxy=ProxyConfig(iterations=400, eval_every=50, **_CPU_PROXY)),
        "paper": QuantitativeSettings(PAPER_CAUSAL, PAPER_ENCODERS, num_texts=1000, max_order=3, size=50,
                                      proxy_num_texts=1000, proxy_size=50, seeds=(0, 1, 2), official_eval_every=100,
                                      proxy=_PAPER_PROXY),
    },
    "controls": {
        "smoke": ControlsSettings("minilm-l6", "mpnet-base", 8, (0.1, 1.0), "gemma-3-270m", "qwen2.5-0.5b", 8, (),
                                  max_order=3, size=50, seed=0, proxy_size=24, seeds=(0,),
                                  proxy=ProxyConfig(iterations=10, eval_every=5, **{**_CPU_PROXY, "batch_size": 8})),
        "default": ControlsSettings("minilm-l6", "mpnet-base", 100, (0.01, 0.03, 0.1, 0.3, 1.0),
                                    "gemma-3-270m", "qwen2.5-0.5b", 40, (0.1, 1.0),
                                    max_order=3, size=50, seed=0, proxy_size=24, seeds=(0, 1, 2),
                                    proxy=ProxyConfig(iterations=400, eval_every=50, **_CPU_PROXY)),
        "paper": ControlsSettings("roberta-base", "bert-base-cased", 1000, (0.01, 0.03, 0.1, 0.3, 1.0),
                                  "Qwen/Qwen2-1.5B-Instruct", "google/gemma-2-2b-it", 1000, (0.01, 0.03, 0.1, 0.3, 1.0),
                                  max_order=3, size=50, seed=0, proxy_size=50, seeds=(0, 1, 2), proxy=_PAPER_PROXY),
    },
}


def settings(chapter: str, profile: str, **overrides: Any):
    """The validated settings of ``chapter`` under ``profile``, with ``overrides`` applied.

    Args:
        chapter: ``"derivation"``, ``"qualitative"``, ``"quantitative"``, ``"controls"`` (the syntax
            chapter's sizes are :func:`olacore.toa.config.toa_settings`).
        profile: ``"smoke"``, ``"default"`` or ``"paper"``.
        **overrides: fields to replace (a notebook's own parameters, e.g. ``seeds=[0]``);
            ``None`` values are ignored, lists become tuples.

    Returns:
        The chapter's settings dataclass (frozen).

    Raises:
        ValueError: unknown chapter, profile or field (the message lists the known ones), or a
            value that fails validation.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    if chapter not in _PROFILES:
        raise ValueError(f"unknown chapter {chapter!r}; known: {', '.join(sorted(_PROFILES))}")
    base = _PROFILES[chapter][profile]
    names = {f.name for f in dataclasses.fields(base)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"{type(base).__name__} has no field {', '.join(unknown)}; its fields: {', '.join(sorted(names))}")
    changes = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items() if v is not None}
    return dataclasses.replace(base, **changes)
