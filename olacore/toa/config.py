"""Profile settings of the TOA experiments (smoke / default / paper), validated.

:func:`toa_settings` gives a :class:`ToaSettings` per profile; the chapters (syntax, transfer)
take their sizes from it, so that a notebook cell names a profile and calls a few functions
of :mod:`olacore.toa.experiments`. The default was sized by measurement on the 2-core
machine (see the report of issue #9 and the notes below); ``paper`` is the official setting
for a GPU with a model hub.

Sizing notes for ``default`` (EWT, first 500 train / first 150 dev / 300 test sentences,
cut at 64 tokens, order 1, seed 0, 10 epochs, ``torch.set_num_threads(1)``):

- The official-shaped adapter reading only the diagonal (no pair scores, no input scaling)
  reached 32.8 UAS on minilm-l6 (distance-only twin 30.6): reading the arc score also from
  the pair cell ``(i, j)`` (``pair_scores``) and feeding ``log1p(T m)`` instead of ``m``
  (``input_transform``) raised order 1+2 to 56.9 UAS (250 sentences x 6 epochs: 32 -> 40
  -> 49 UAS for none -> pair -> pair + scaling).
- A learned embedding of the cell offset ``j - i`` (``offset_embedding``) did not help
  (smollm2-135m order 1: 40.1 without, 38.8 with), nor did leaving CLM maps unmirrored (39.2).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from olacore.toa.adapter import AdapterConfig
from olacore.toa.augment import Augmentation
from olacore.toa.inputs import InputSpec
from olacore.toa.tasks import GRIDS
from olacore.toa.train import TrainConfig

__all__ = ["PROFILES", "ToaSettings", "toa_settings", "SYNTAX_GRID"]

PROFILES = ("smoke", "default", "paper")
CAUSAL_ZOO = ("smollm2-135m", "gemma-3-270m", "qwen2.5-0.5b")
ENCODER_ZOO = ("minilm-l6", "mpnet-base")
PAPER_ENCODERS = ("bert-base-cased", "roberta-base", "google/electra-base-generator")

#: The inputs of the full syntax grid (paper Table: 1st, 2nd, 3rd order, rollout), plus 1+2
#: (the official TOA input) and the distance-only baseline.
SYNTAX_GRID: dict[str, InputSpec] = {
    "order 1": InputSpec(("order1",)),
    "order 2": InputSpec(("order2",)),
    "order 3": InputSpec(("order3",)),
    "rollout": InputSpec(("rollout",)),
    "order 1+2": InputSpec(("order1", "order2")),
    "distance": InputSpec(("distance",)),
}


@dataclass(frozen=True)
class ToaSettings:
    """Sizes of the TOA syntax experiments for one profile.

    Attributes:
        num_train, num_dev, num_test: EWT sentences (:func:`olacore.syntax.ewt_splits`;
            ``None``: the whole split).
        max_tokens: the length cut (official 64).
        grid: ``"words"`` (each word's first sub-token: the maps the parser scores) or
            ``"tokens"`` (official: every token, special ones included); see
            :mod:`olacore.toa.tasks`.
        long_sentences: also score the test sentences of more than 30 words (``test_long``
            of :func:`olacore.syntax.ewt_splits`).
        adapter, training: the adapter's sizes and its training.
        seeds: seeds of the cells that are repeated (``seed_inputs`` x ``full_grid``).
        models: every model of the chapter: ``basic_inputs`` run on each.
        basic_inputs: inputs run on every model (order 1, order 1+2, distance).
        full_grid: models that also run every input of :data:`SYNTAX_GRID`.
        seed_inputs: inputs that run with every seed on the ``full_grid`` models (the
            order 1 / order 3 / rollout comparison); everything else runs on ``seeds[0]``.
        random_init: models whose random-initialised twin runs order 1 (a control).
        pos_models: models of the POS-from-OLA check (order 1+2, XPOS).
        workers: training processes (``None``: one per core on a CPU).

    Raises:
        ValueError: a non-positive size, no seed, an unknown input name, or a model of
            ``full_grid`` / ``random_init`` / ``pos_models`` missing from ``models``.
    """

    num_train: int | None = 500
    num_dev: int | None = 150
    num_test: int | None = 300
    max_tokens: int | None = 64
    grid: str = "words"
    long_sentences: bool = True
    adapter: AdapterConfig = field(default_factory=AdapterConfig)
    training: TrainConfig = field(default_factory=TrainConfig)
    seeds: tuple[int, ...] = (0, 1, 2)
    models: tuple[str, ...] = CAUSAL_ZOO + ENCODER_ZOO
    basic_inputs: tuple[str, ...] = ("order 1", "order 1+2", "distance")
    full_grid: tuple[str, ...] = ("smollm2-135m", "minilm-l6")
    seed_inputs: tuple[str, ...] = ("order 1", "order 3", "rollout")
    random_init: tuple[str, ...] = ("minilm-l6",)
    pos_models: tuple[str, ...] = ("minilm-l6",)
    workers: int | None = None

    def __post_init__(self) -> None:
        for name in ("num_train", "num_dev", "num_test", "max_tokens", "workers"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise ValueError(f"ToaSettings.{name} must be a positive int or None; got {value!r}")
        if self.grid not in GRIDS:
            raise ValueError(f"ToaSettings.grid must be one of {GRIDS}; got {self.grid!r}")
        if not self.seeds:
            raise ValueError("ToaSettings.seeds needs at least one seed")
        for name in ("basic_inputs", "seed_inputs"):
            unknown = [i for i in getattr(self, name) if i not in SYNTAX_GRID]
            if unknown:
                raise ValueError(f"ToaSettings.{name}: unknown inputs {unknown}; known: {list(SYNTAX_GRID)}")
        for name in ("full_grid", "random_init", "pos_models"):
            missing = [m for m in getattr(self, name) if m not in self.models]
            if missing:
                raise ValueError(f"ToaSettings.{name}: {missing} are not in models {list(self.models)}")

    def cells(self) -> list[tuple[str, str, int]]:
        """Every ``(model, input name, seed)`` of the syntax grid, in a stable order."""
        out = []
        for model in self.models:
            inputs = list(SYNTAX_GRID) if model in self.full_grid else list(self.basic_inputs)
            for name in inputs:
                seeds = self.seeds if model in self.full_grid and name in self.seed_inputs else self.seeds[:1]
                out += [(model, name, seed) for seed in seeds]
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON-able summary (for a notebook's settings table)."""
        return {"num_train": self.num_train, "num_dev": self.num_dev, "num_test": self.num_test,
                "max_tokens": self.max_tokens, "grid": self.grid, "adapter": self.adapter.as_dict(), "training": self.training.as_dict(),
                "seeds": list(self.seeds), "models": list(self.models), "full_grid": list(self.full_grid),
                "cells": len(self.cells())}


_DEFAULT = ToaSettings(training=TrainConfig(epochs=8))

_PROFILES: dict[str, ToaSettings] = {
    "smoke": ToaSettings(num_train=40, num_dev=20, num_test=20, seeds=(0,),
                         adapter=AdapterConfig(dim=16, depth=1, heads=2, arc_dim=32, rel_dim=16),
                         training=TrainConfig(epochs=2), models=("minilm-l6", "smollm2-135m"),
                         full_grid=("minilm-l6",), random_init=("minilm-l6",), pos_models=("minilm-l6",)),
    "default": _DEFAULT,
    "paper": ToaSettings(num_train=None, num_dev=None, num_test=None,
                         adapter=AdapterConfig(dim=768, depth=5, heads=8, ffn_mult=4, arc_dim=512, rel_dim=128),
                         training=TrainConfig(epochs=15, lr=3e-5, batch_size=2, warmup=0.0, augment=Augmentation()),
                         models=PAPER_ENCODERS, full_grid=PAPER_ENCODERS, random_init=PAPER_ENCODERS,
                         pos_models=PAPER_ENCODERS, workers=1),
}


def toa_settings(profile: str, **overrides: Any) -> ToaSettings:
    """The TOA settings of ``profile``, with ``overrides`` replacing fields.

    Raises:
        ValueError: unknown profile (lists the known ones) or an invalid override.
    """
    if profile not in _PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    return replace(_PROFILES[profile], **overrides)
