"""Profile settings of the TOA experiments (smoke / default / paper), validated.

:func:`toa_settings` gives a :class:`ToaSettings` per profile; the chapters (syntax, transfer)
take their sizes from it, so that a notebook cell names a profile and calls a few functions
of :mod:`olacore.toa.experiments`. The default was sized by measurement on the 2-core
machine (see the report of issue #9 and the notes below); ``paper`` is the official setting
for a GPU with a model hub.

Sizing notes for ``default`` (measured on the 2-core machine, EWT first 500 train / first 150
dev / 300 test sentences, cut at 64 tokens, seed 0, DP, ``torch.set_num_threads(1)``; UAS with
punctuation on test):

- The official-shaped adapter (diagonal features only, maps fed as they are, token grid) on
  minilm-l6 reached 32.8 UAS at order 1+2 after 10 epochs, no better than its distance-only
  twin (30.6). Reading arc scores also from the pair cell (``pair_scores``) and feeding
  ``log1p(T m)`` (``input_transform``) took it to 56.9 (250 sentences x 6 epochs: 32 -> 40
  -> 49 for none -> pair -> pair + scaling).
- The word grid (first sub-tokens only) against the token grid, order 1, 10 epochs:
  smollm2-135m 46.6 vs 40.1, minilm-l6 55.4 vs 56.6; the distance-only twin gets 34.6 on
  words (29.9 on tokens, where it cannot tell word-initial tokens); 20 % cheaper.
- 3x3 convolutions in the feed-forward (``ffn_kernel=3``, as the official one) instead of a
  position-wise one, words, 8 epochs: minilm-l6 58.2 vs 55.0, smollm2-135m 47.5 vs 45.0,
  distance unchanged (34.5), at 5 % more time.
- No gain from: a learned offset embedding (smollm2-135m, tokens: 38.8 vs 40.1), leaving
  CLM maps unmirrored (39.2), a larger adapter (dim 48, depth 3: 42.2, 2.4x the time;
  words, k=3, depth 3: 48.1 vs 47.5), 20 epochs instead of 10 (41.8), lr 4e-3 (41.5),
  dim 16 (words, k=3: minilm-l6 54.9 vs 58.2, smollm2-135m 46.2 vs 47.5).
- Cost (single thread, no other load): about 85-90 sentences/s training, 47 s per adapter
  at 8 epochs; the 30 adapters of the default grid took 17 minutes on 2 workers (8 epochs,
  a shared machine); with attention extraction (about 6.5 minutes for the 1,047 texts and
  five models) that overran the 20-minute budget, hence 6 epochs (see the report of issue #9).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from olacore.toa.adapter import AdapterConfig
from olacore.augment import Augmentation
from olacore.toa.inputs import InputSpec
from olacore.toa.tasks import GRIDS
from olacore.toa.train import TrainConfig

__all__ = ["PROFILES", "ToaSettings", "toa_settings", "SYNTAX_GRID", "input_spec", "DataSet"]

PROFILES = ("smoke", "default", "paper")
CAUSAL_ZOO = ("smollm2-135m", "gemma-3-270m", "qwen2.5-0.5b")
ENCODER_ZOO = ("minilm-l6", "mpnet-base")
PAPER_ENCODERS = ("bert-base-cased", "roberta-base", "google/electra-base-generator")

#: The inputs of the syntax grid by display name: the paper's table (1st, 2nd, 3rd order,
#: rollout), ALTI (the paper's second baseline, issue #12), 1+2 (the official TOA input) and
#: the distance-only baseline. A single raw attention layer is ``"layer <n>"`` (:func:`input_spec`).
SYNTAX_GRID: dict[str, InputSpec] = {
    "order 1": InputSpec(("order1",)),
    "order 2": InputSpec(("order2",)),
    "order 3": InputSpec(("order3",)),
    "rollout": InputSpec(("rollout",)),
    "ALTI": InputSpec(("alti",)),
    "order 1+2": InputSpec(("order1", "order2")),
    "distance": InputSpec(("distance",)),
}
_LAYER = re.compile(r"^layer (\d+)$")


def input_spec(name: str) -> InputSpec:
    """The :class:`InputSpec` of an input name: a key of :data:`SYNTAX_GRID` or ``"layer <n>"``
    (the head-averaged raw attention of layer ``n``, 1 nearest the input: channel ``layer<n>``).

    Raises:
        KeyError: an unknown name (lists the known ones).
    """
    if name in SYNTAX_GRID:
        return SYNTAX_GRID[name]
    match = _LAYER.match(str(name))
    if match and int(match.group(1)) > 0:
        return InputSpec((f"layer{int(match.group(1))}",))
    raise KeyError(f"unknown input {name!r}; known: {list(SYNTAX_GRID)} and 'layer <n>'")


@dataclass(frozen=True)
class DataSet:
    """One data set of the syntax grid: a model's EWT splits at some size, from some map sources.

    Attributes:
        name: the key of the data set in :func:`olacore.toa.experiments.syntax_datasets`'s
            result and the ``model`` column of the grid's table (``"minilm-l6"``,
            ``"minilm-l6 [ALTI subset]"``, ``"minilm-l6 [train 125]"``, ``"minilm-l6 [random init]"``).
        model: the zoo model (name, id or folder).
        num_train, num_dev, num_test: sentences of each split (``None``: the chapter's split;
            a smaller test is spread evenly over the chapter's, see
            :func:`olacore.toa.experiments.subset_splits`).
        sources: the channel sources whose records it carries (``"ola"`` always; ``"alti"``,
            ``"attention"``).
        random_init: the model's randomly initialised twin instead of the model.
    """

    name: str
    model: str
    num_train: int | None = None
    num_dev: int | None = None
    num_test: int | None = None
    sources: tuple[str, ...] = ("ola",)
    random_init: bool = False


def _positive(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value > 0


@dataclass(frozen=True)
class ToaSettings:
    """Sizes of the TOA syntax experiments for one profile: the data, the adapter, the grid.

    Attributes:
        num_train, num_dev, num_test: EWT sentences (:func:`olacore.ud.ewt_splits`;
            ``None``: the whole split).
        max_tokens: the length cut (official 64).
        grid: ``"words"`` (each word's first sub-token: the maps the parser scores) or
            ``"tokens"`` (official: every token, special ones included); see
            :mod:`olacore.toa.tasks`.
        long_sentences: also score the test sentences of more than 30 words (``test_long``
            of :func:`olacore.ud.ewt_splits`; their maps cost extraction time).
        adapter, training: the adapter's sizes and its training.
        seeds: seeds of the cells that are repeated (``seed_inputs`` x ``full_grid``).
        models: every model of the chapter: ``basic_inputs`` run on each.
        basic_inputs: inputs run on every model.
        full_grid: models that also run every other input of :data:`SYNTAX_GRID`.
        seed_inputs: inputs that run with every seed on the ``full_grid`` models (the
            order 1 / order 3 / rollout comparison); everything else runs on ``seeds[0]``.
        alti_models: models whose ALTI maps are computed: ALTI beside order 1 on the
            ``alti_subset`` sentences.
        alti_subset: ``(train, dev, test)`` sentences of the ALTI comparison (ALTI costs about
            one more forward pass per sentence); ``None``: the chapter's splits (ALTI then runs
            on the main data, as a cell of the grid).
        layer_models: models of the best-single-layer baseline (a layer chosen on dev by
            :func:`olacore.toa.experiments.layer_screen`, then an adapter trained on it).
        random_init: models whose random-initialised twin runs order 1 (a control).
        pos_models: models of the POS-from-OLA check (order 1+2, XPOS).
        curve_models, curve_sizes: models that also train order 1 on the first ``curve_sizes``
            training sentences (a learning curve; dev and test unchanged).
        workers: training processes (``None``: one per core on a CPU).

    Raises:
        ValueError: a non-positive size, no seed, an unknown input name, or a model of
            ``full_grid`` / ``alti_models`` / ``layer_models`` / ``random_init`` /
            ``pos_models`` / ``curve_models`` missing from ``models``.
    """

    num_train: int | None = 500
    num_dev: int | None = 150
    num_test: int | None = 300
    max_tokens: int | None = 64
    grid: str = "words"
    long_sentences: bool = False
    adapter: AdapterConfig = field(default_factory=AdapterConfig)
    training: TrainConfig = field(default_factory=TrainConfig)
    seeds: tuple[int, ...] = (0, 1, 2)
    models: tuple[str, ...] = CAUSAL_ZOO + ENCODER_ZOO
    basic_inputs: tuple[str, ...] = ("order 1", "order 1+2", "distance")
    full_grid: tuple[str, ...] = ("smollm2-135m", "minilm-l6")
    seed_inputs: tuple[str, ...] = ("order 1", "order 3", "rollout")
    alti_models: tuple[str, ...] = CAUSAL_ZOO + ENCODER_ZOO
    alti_subset: tuple[int, int, int] | None = (250, 100, 150)
    layer_models: tuple[str, ...] = ("smollm2-135m", "minilm-l6")
    random_init: tuple[str, ...] = ("minilm-l6",)
    pos_models: tuple[str, ...] = ("minilm-l6",)
    curve_models: tuple[str, ...] = ("smollm2-135m", "minilm-l6")
    curve_sizes: tuple[int, ...] = (125, 250)
    workers: int | None = None

    def __post_init__(self) -> None:
        for name in ("num_train", "num_dev", "num_test", "max_tokens", "workers"):
            value = getattr(self, name)
            if value is not None and not _positive(value):
                raise ValueError(f"ToaSettings.{name} must be a positive int or None; got {value!r}")
        if self.grid not in GRIDS:
            raise ValueError(f"ToaSettings.grid must be one of {GRIDS}; got {self.grid!r}")
        if not self.seeds:
            raise ValueError("ToaSettings.seeds needs at least one seed")
        for name in ("basic_inputs", "seed_inputs"):
            unknown = [i for i in getattr(self, name) if i not in SYNTAX_GRID]
            if unknown:
                raise ValueError(f"ToaSettings.{name}: unknown inputs {unknown}; known: {list(SYNTAX_GRID)}")
        for name in ("full_grid", "alti_models", "layer_models", "random_init", "pos_models", "curve_models"):
            missing = [m for m in getattr(self, name) if m not in self.models]
            if missing:
                raise ValueError(f"ToaSettings.{name}: {missing} are not in models {list(self.models)}")
        sizes = [("alti_subset", v) for v in (self.alti_subset or ())] + [("curve_sizes", v) for v in self.curve_sizes]
        bad = [(name, v) for name, v in sizes if not _positive(v)]
        if bad or (self.alti_subset is not None and len(self.alti_subset) != 3):
            raise ValueError(f"ToaSettings.alti_subset must be None or three positive ints (train, dev, test) and "
                             f"curve_sizes positive ints; got {self.alti_subset!r}, {self.curve_sizes!r}")

    def datasets(self) -> dict[str, DataSet]:
        """Every data set the grid trains on, by name (see :class:`DataSet`), in a stable order."""
        out: dict[str, DataSet] = {}
        for model in self.models:
            sources = ("ola",)
            if model in self.alti_models and self.alti_subset is None:
                sources += ("alti",)
            if model in self.layer_models:
                sources += ("attention",)
            out[model] = DataSet(model, model, sources=sources)
        for model in self.alti_models:
            if self.alti_subset is not None:
                name = f"{model} [ALTI subset]"
                out[name] = DataSet(name, model, *self.alti_subset, sources=("ola", "alti"))
        for model in self.curve_models:
            for size in self.curve_sizes:
                if self.num_train is None or size < self.num_train:
                    out[f"{model} [train {size}]"] = DataSet(f"{model} [train {size}]", model, num_train=size)
        for model in self.random_init:
            out[f"{model} [random init]"] = DataSet(f"{model} [random init]", model, random_init=True)
        return out

    def cells(self) -> list[tuple[str, str, int]]:
        """Every ``(data set, input name, seed)`` of the syntax grid, in a stable order; the
        best-layer cells are added once the layer is chosen on dev
        (:func:`olacore.toa.experiments.layer_cells`)."""
        first = self.seeds[0]
        out = []
        for model in self.models:
            inputs = [i for i in SYNTAX_GRID if i != "ALTI"] if model in self.full_grid else list(self.basic_inputs)
            if model in self.alti_models and self.alti_subset is None:
                inputs.append("ALTI")
            for name in inputs:
                seeds = self.seeds if model in self.full_grid and name in self.seed_inputs else self.seeds[:1]
                out += [(model, name, seed) for seed in seeds]
        for name, dataset in self.datasets().items():
            if name == dataset.model:
                continue
            inputs = ["order 1", "ALTI"] if "alti" in dataset.sources else ["order 1"]
            out += [(name, i, first) for i in inputs]
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON-able summary (for a notebook's settings table)."""
        return {"num_train": self.num_train, "num_dev": self.num_dev, "num_test": self.num_test,
                "max_tokens": self.max_tokens, "grid": self.grid, "adapter": self.adapter.as_dict(),
                "training": self.training.as_dict(), "seeds": list(self.seeds), "models": list(self.models),
                "full_grid": list(self.full_grid), "alti_subset": self.alti_subset, "cells": len(self.cells())}


# Sized for the 20-minute cold budget of the chapter (see ``olacore.toa.config`` notes above and the
# syntax chapter): every model runs order 1, 1+2 and distance on 500 sentences; the full order grid
# for one CLM and one encoder; a second seed for the order-1 / order-3 / rollout comparison; ALTI
# (one more forward pass per sentence) beside order 1 on 150 / 60 / 100 sentences; one CLM's learning curve.
_DEFAULT = ToaSettings(training=TrainConfig(epochs=6), seeds=(0, 1), alti_subset=(150, 60, 100),
                       curve_models=("smollm2-135m",))

_PROFILES: dict[str, ToaSettings] = {
    "smoke": ToaSettings(num_train=40, num_dev=20, num_test=20, seeds=(0,),
                         adapter=AdapterConfig(dim=16, depth=1, heads=2, arc_dim=32, rel_dim=16),
                         training=TrainConfig(epochs=2), models=("minilm-l6", "smollm2-135m"),
                         full_grid=("minilm-l6",), alti_models=("minilm-l6", "smollm2-135m"), alti_subset=(20, 10, 10),
                         layer_models=("minilm-l6",), random_init=("minilm-l6",), pos_models=("minilm-l6",),
                         curve_models=("smollm2-135m",), curve_sizes=(20,)),
    "default": _DEFAULT,
    # The official adapter and training (models/adapters.py, configs/train_*_udewt_dp.json): token grid,
    # diagonal features only, maps as they are, the official axial-attention network (backbone "package",
    # no padding mask; 448 M backbone parameters at 2 input channels, as the official ~450 M).
    "paper": ToaSettings(num_train=None, num_dev=None, num_test=None, grid="tokens", long_sentences=True,
                         adapter=AdapterConfig(dim=768, depth=5, heads=8, ffn_mult=4, ffn_kernel=3, arc_dim=512,
                                               rel_dim=128, pair_scores=False, input_transform="none",
                                               backbone="package", local_mix=False),
                         training=TrainConfig(epochs=15, lr=3e-5, batch_size=2, warmup=0.0, augment=Augmentation()),
                         models=PAPER_ENCODERS, full_grid=PAPER_ENCODERS, alti_models=PAPER_ENCODERS, alti_subset=None,
                         layer_models=PAPER_ENCODERS, random_init=PAPER_ENCODERS, pos_models=PAPER_ENCODERS,
                         curve_models=(), workers=1),
}


def toa_settings(profile: str, **overrides: Any) -> ToaSettings:
    """The TOA settings of ``profile``, with ``overrides`` replacing fields.

    Raises:
        ValueError: unknown profile (lists the known ones) or an invalid override.
    """
    if profile not in _PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    return replace(_PROFILES[profile], **overrides)
