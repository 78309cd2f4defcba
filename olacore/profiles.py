"""Run profiles: one ``profile`` parameter sets every size a chapter uses.

- ``smoke``: seconds to a few minutes per notebook on real models, tiny sizes; tests and CI.
- ``default``: the published book on a 2-core CPU (cost: ``book/compute.md``; sizes: ``book/design.md``).
- ``paper``: the paper's models and sizes, for a GPU machine with a model hub.

Each chapter (the syntax and transfer chapters' TOA adapters included) has one settings class, validated
when it is made; :func:`settings` returns the instance of a chapter and profile, with a notebook's own
parameters applied on top.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import numbers
import os
import types
import typing
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from olacore.augment import Augmentation, BatchAugmentation
from olacore.proxy import OfficialQuirks, ProxyConfig
from olacore.toa.data import GRIDS, SYNTAX_GRID
from olacore.toa.model import AdapterConfig
from olacore.toa.train import TRANSFER_TASKS, TrainConfig
from olacore.zoo import BOOK_ZOO, ZOO

__all__ = [
    "PROFILES", "CAUSAL_ZOO", "ENCODER_ZOO", "settings", "DerivationSettings", "QualitativeSettings",
    "QuantitativeSettings", "ControlsSettings", "SyntaxSettings", "DataSet", "TaskSizes", "TransferSettings",
]

PROFILES = ("smoke", "default", "paper")

#: Environment variable: JSON ``{chapter: {field: value}}`` of overrides applied by :func:`settings` under
#: every profile, before a notebook's own parameters; a nested settings object takes an object of its own
#: fields (``{"syntax": {"adapter": {"dim": 16}}}``); lists become tuples.
SETTINGS_OVERRIDES_ENV = "OLACORE_SETTINGS_OVERRIDES"

#: The zoo models of the chapters' grids, by kind (:data:`olacore.zoo.BOOK_ZOO`, in its order); zoo models
#: with ``in_book=False`` enter only the sections that name them (``size_models``, ``extra_encoders``,
#: ``extra_models``).
CAUSAL_ZOO = tuple(name for name, spec in BOOK_ZOO.items() if spec.kind == "causal")
ENCODER_ZOO = tuple(name for name, spec in BOOK_ZOO.items() if spec.kind == "encoder")
PAPER_CAUSAL = ("Qwen/Qwen2-1.5B-Instruct", "google/gemma-2-2b-it", "meta-llama/Llama-3.2-3B-Instruct")
PAPER_ENCODERS = ("bert-base-cased", "roberta-base", "google/electra-base-generator")


def _check_lists(settings: Any) -> None:
    """Every field declared as a tuple holds a tuple (a bare string would be read as a list of its characters)."""
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        declared = str(f.type)
        if declared.startswith("tuple") and not isinstance(value, tuple) and not (value is None and "None" in declared):
            hint = f": give [{value!r}] for one value" if isinstance(value, str) else " ([] for none)"
            raise ValueError(f"{type(settings).__name__}.{f.name} must be a list (a tuple in Python); got {value!r}{hint}")


def _check_zoo_extras(where: str, models: tuple, kind: str | None = None, grid: tuple = (), grid_name: str = "") -> None:
    """Zoo models a chapter reads outside its grid (``size_models``, ``extra_encoders``,
    ``extra_models``): each a zoo model (of ``kind`` where given), none in ``grid``, none listed twice."""
    for model in models:
        if not isinstance(model, str) or model not in ZOO:
            close = difflib.get_close_matches(str(model), list(ZOO), n=1, cutoff=0.6)
            raise ValueError(f"{where}: {model!r} is not a zoo model{f' (did you mean {close[0]!r}?)' if close else ''}"
                             f"; the zoo: {', '.join(sorted(ZOO))} (`olacore models` lists them)")
        if kind is not None and ZOO[model].kind != kind:
            raise ValueError(f"{where}: {model!r} is {'an' if ZOO[model].kind == 'encoder' else 'a'} {ZOO[model].kind} "
                             f"model; it takes {kind} models")
    in_grid = [m for m in models if m in grid]
    if in_grid:
        raise ValueError(f"{where}: {in_grid} already in {grid_name} {list(grid)}; a model listed twice would run twice")
    if len(set(models)) != len(models):
        raise ValueError(f"{where} lists a model twice: {list(models)}")


class _Validated:
    """Checks every field when an instance is made: lists are lists, ints positive (``seed`` may
    be 0), model lists and seed lists non-empty, noise scales and orders non-negative."""

    def __post_init__(self) -> None:
        _check_lists(self)
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
    (the official ``olas_visual_model.py``: every 100 of 100k steps) and trains one variant per
    quirk of ``official_quirk_rows`` switched off (``None``: every quirk).

    Two sections read zoo models outside ``CAUSAL_ZOO`` / ``ENCODER_ZOO`` (``in_book=False``), only
    through these fields; empty, a section does not run:

    - ``size_models``: ``(smaller, larger)``, two causal models of one family ("Does model size change
      OLAS?"): the smaller one of ``causal``, the larger one not; the larger one gets first-order OLA
      (extracted in one process: 6 GB), retrieval against ``causal`` and the held-out proxy trained on
      ``causal`` less the smaller one.
    - ``extra_encoders``: encoders added to ``encoders`` ("A third encoder family"): retrieval and the
      held-out first-order proxy over every ordered pair.

    Default sizes: measured on the book's design page (``book/design.md``).
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
    official_quirk_rows: tuple[str, ...] | None = None
    size_models: tuple[str, ...] = ()
    extra_encoders: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_extra_models()
        unknown = [q for q in self.official_quirk_rows or () if q not in OfficialQuirks.names()]
        if unknown:
            raise ValueError(f"official_quirk_rows names no quirk {unknown}; the quirks: {', '.join(OfficialQuirks.names())}")
        if self.proxy_num_texts > self.num_texts:
            raise ValueError(f"proxy_num_texts ({self.proxy_num_texts}) cannot exceed num_texts ({self.num_texts})")
        if self.official_eval_every > self.proxy.iterations:
            raise ValueError(f"official_eval_every ({self.official_eval_every}) exceeds the proxy's "
                             f"{self.proxy.iterations} steps: the official protocol would never evaluate")

    def _check_extra_models(self) -> None:
        """``size_models`` and ``extra_encoders`` name zoo models of the right kind, outside the grid."""
        _check_zoo_extras("QuantitativeSettings.size_models", self.size_models, "causal")
        _check_zoo_extras("QuantitativeSettings.extra_encoders", self.extra_encoders, "encoder", self.encoders, "encoders")
        if self.size_models:
            if len(self.size_models) != 2:
                raise ValueError("QuantitativeSettings.size_models must be empty or (smaller, larger), two models; "
                                 f"got {list(self.size_models)}")
            smaller, larger = self.size_models
            if smaller not in self.causal or larger in self.causal:
                raise ValueError(f"QuantitativeSettings.size_models: the smaller model ({smaller!r}) must be one of "
                                 f"causal {list(self.causal)} and the larger ({larger!r}) must not")
            from olacore.report import paper_family

            if paper_family(smaller) != paper_family(larger):
                raise ValueError(f"QuantitativeSettings.size_models: {smaller!r} and {larger!r} are of two families; "
                                 "the size table compares two sizes of one family (e.g. qwen2.5-0.5b, qwen2.5-1.5b)")
            if len(self.causal) < 2:
                raise ValueError("QuantitativeSettings.size_models needs a second model in causal to train the "
                                 f"proxy on; causal is {list(self.causal)}")


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


@dataclass(frozen=True)
class DataSet:
    """One data set of the syntax grid: a model's EWT splits at some size, from some map sources.

    Attributes:
        name: its key in :func:`olacore.toa.syntax.syntax_datasets` and the ``model`` column of the
            grid's table (``"minilm-l6"``, ``"minilm-l6 [ALTI subset]"``, ``"minilm-l6 [random init]"``).
        model: the zoo model (name, id or folder).
        num_train, num_dev, num_test: sentences of each split (``None``: the chapter's split; a
            smaller test is spread evenly over it, :func:`olacore.toa.data.subset_splits`).
        sources: the channel sources whose records it carries (``"ola"`` always; ``"alti"``, ``"attention"``).
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
class SyntaxSettings:
    """Chapter "Syntax in OLA": the EWT data, the TOA adapter and its training, the grid of inputs.

    Default sizes: measured on the book's design page (``book/design.md``).

    Attributes:
        num_train, num_dev, num_test: EWT sentences (:func:`olacore.ud.ewt_splits`; ``None``: the whole split).
        max_tokens: the length cut (official 64).
        grid: ``"words"`` (each word's first sub-token: the maps the parser scores) or ``"tokens"``
            (official: every token, special ones included); see :mod:`olacore.toa.data`.
        long_sentences: also score the test sentences of more than 30 words (``test_long`` of
            :func:`olacore.ud.ewt_splits`).
        seeds: seeds of the repeated cells (``seed_inputs`` x ``full_grid``).
        models: every model of the chapter; ``basic_inputs`` run on each.
        full_grid: models that also run every other input of :data:`SYNTAX_GRID`.
        seed_inputs: inputs run with every seed on ``full_grid`` (everything else: ``seeds[0]``).
        alti_models, alti_subset: models whose ALTI runs beside order 1 on ``(train, dev, test)``
            sentences (``None``: the chapter's splits, ALTI then a cell of the grid). The profile table
            sets it (``default``: ``(150, 60, 100)``); the class default ``(250, 100, 150)`` is only a
            bare ``SyntaxSettings()``'s.
        layer_models: models of the best-single-layer baseline (layer chosen on dev by
            :func:`olacore.toa.syntax.layer_screen`).
        random_init: models whose random-initialised twin runs order 1 (a control).
        pos_models: models of the POS-from-OLA check (order 1+2, XPOS).
        curve_models, curve_sizes: models that also train order 1 on the first ``curve_sizes``
            training sentences (a learning curve; dev and test unchanged).
        workers: training processes (``None``: one per core on a CPU).
        extra_models: zoo models outside ``models`` that run only order 1 and the distance-only twin,
            in a section of their own (new record keys: every other table stays as it is), extracted
            in one process; empty: the section says it did not run.

    Raises:
        ValueError: a non-positive size, no seed, an unknown input name, a model of a sub-list
            (``full_grid`` ... ``curve_models``) missing from ``models``, or an ``extra_models``
            name that is no zoo model or is already in ``models``.
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
    extra_models: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_lists(self)
        for name in ("num_train", "num_dev", "num_test", "max_tokens", "workers"):
            value = getattr(self, name)
            if value is not None and not _positive(value):
                raise ValueError(f"SyntaxSettings.{name} must be a positive int or None; got {value!r}")
        if self.grid not in GRIDS:
            raise ValueError(f"SyntaxSettings.grid must be one of {GRIDS}; got {self.grid!r}")
        if not self.seeds:
            raise ValueError("SyntaxSettings.seeds needs at least one seed")
        for name in ("basic_inputs", "seed_inputs"):
            unknown = [i for i in getattr(self, name) if i not in SYNTAX_GRID]
            if unknown:
                raise ValueError(f"SyntaxSettings.{name}: unknown inputs {unknown}; known: {list(SYNTAX_GRID)}")
        for name in ("full_grid", "alti_models", "layer_models", "random_init", "pos_models", "curve_models"):
            missing = [m for m in getattr(self, name) if m not in self.models]
            if missing:
                raise ValueError(f"SyntaxSettings.{name}: {missing} are not in models {list(self.models)}")
        _check_zoo_extras("SyntaxSettings.extra_models", self.extra_models, grid=self.models, grid_name="models")
        sizes = [("alti_subset", v) for v in (self.alti_subset or ())] + [("curve_sizes", v) for v in self.curve_sizes]
        bad = [(name, v) for name, v in sizes if not _positive(v)]
        if bad or (self.alti_subset is not None and len(self.alti_subset) != 3):
            raise ValueError(f"SyntaxSettings.alti_subset must be None or three positive ints (train, dev, test) and "
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
        """Every ``(data set, input name, seed)`` of the syntax grid, in a stable order; best-layer
        cells are added once the layer is chosen (:func:`olacore.toa.syntax.layer_cells`)."""
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


@dataclass(frozen=True)
class TaskSizes:
    """Examples per split of one corpus task (``re``: SemEval-2010 Task 8; ``ner``: UNER
    English-EWT; ``wnut``: WNUT-17).

    ``re`` / ``wnut``: ``train`` and ``dev`` are the first examples of their split (SemEval dev:
    every 10th TRAIN example, :func:`olacore.corpora.read_semeval`); ``test`` is spread evenly
    over the test split (:func:`olacore.ud.evenly_spread`): the fixed subset the zero-shot
    baseline answers. ``ner``: ``train`` and ``dev`` both come from UNER dev (dev spread evenly,
    train the first of the rest), ``test`` from UNER test (:func:`olacore.toa.transfer.task_splits`).

    ``epochs`` and ``o_weight`` (entity tasks: the loss weight of the ``O`` tag) replace the syntax
    chapter's training where set (``None``: its ``epochs``; ``TrainConfig.ner_o_weight``, the
    official 0.5 of ``models/adapters.py``).

    Raises:
        ValueError: a size that is not a positive int (``epochs``: a positive int or ``None``;
            ``o_weight``: a positive number or ``None``).
    """

    train: int
    dev: int
    test: int
    epochs: int | None = None
    o_weight: float | None = None

    def __post_init__(self) -> None:
        for name in ("train", "dev", "test", "epochs"):
            value = getattr(self, name)
            if name == "epochs" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"TaskSizes.{name} must be a positive int; got {value!r}")
        if self.o_weight is not None and (isinstance(self.o_weight, bool) or not isinstance(self.o_weight, (int, float))
                                          or not 0 < self.o_weight < float("inf")):
            raise ValueError(f"TaskSizes.o_weight must be a positive number or None; got {self.o_weight!r}")

    def training(self, base: TrainConfig) -> TrainConfig:
        """``base`` with this task's ``epochs`` and ``o_weight`` where they are set."""
        changes = {"epochs": self.epochs, "ner_o_weight": self.o_weight}
        changes = {name: value for name, value in changes.items() if value is not None}
        return replace(base, **changes) if changes else base


@dataclass(frozen=True)
class TransferSettings:
    """Chapter "TOA: adapters that move between models" (paper section 4.4): tasks, corpora, models, bounds.

    Default sizes: measured on the book's design page (``book/design.md``).

    Attributes:
        syntax: the syntax chapter's settings (:class:`SyntaxSettings` of the same profile): its EWT
            splits serve ``dp`` and ``pos``, its adapter, training, length cut and grid every task here,
            so DP adapters are shared.
        tasks: tasks to run (subset of :data:`olacore.toa.train.TRANSFER_TASKS`).
        re, ner, wnut: corpus sizes and epochs (:class:`TaskSizes`); ``default`` weights the ``O`` tag
            of ``ner`` / ``wnut`` 0.1 (ours; the official 0.5 stays at the paper profile).
        causal, encoders: the models of each kind; each is a target, and each trains the
            adapter of its own diagonal cell, so each is also a source.
        extra_encoders: encoders outside the book's grid (zoo models) that join the ``dp`` and ``pos``
            tasks only, as source and target, so the EWT tasks' encoder matrices hold a third family.
            A model of no task of ``tasks`` is left out.
        seeds: training seeds (mean and std where more than one).
        augment: the augmentation of this chapter's own adapters (``re``, ``ner``, ``wnut``): the official
            fake sinks and noise (:class:`olacore.augment.Augmentation`, made for transfer);
            ``None``: the syntax chapter's (none at ``default``). ``dp`` / ``pos`` always train
            as the syntax chapter, whose adapters they share.
        control_test: EWT test sentences (spread over the chapter's test) that the random-init
            twins are scored on for ``dp`` / ``pos`` / ``ner`` (``re`` / ``wnut``: their whole test).
        control_models: targets whose random-init twin (seed 0) is scored.
        zero_shot_models: causal models prompted zero-shot on the ``re`` and ``wnut`` test subsets.
        similarity_texts: official-recipe EWT texts (:func:`olacore.texts.similarity_texts`)
            for the order-1 SSIM Hits@1 of each pair, when chapter 03's results are absent.
        workers: extraction and training processes (``None``: one per core).

    Raises:
        ValueError: an unknown task, no seed, a control or zero-shot model that is not a
            model of the chapter, a zero-shot model that is not causal, a non-positive size.
    """

    syntax: SyntaxSettings = field(default_factory=lambda: _SYNTAX["default"])
    tasks: tuple[str, ...] = TRANSFER_TASKS
    re: TaskSizes = TaskSizes(2000, 300, 400, epochs=20)
    ner: TaskSizes = TaskSizes(500, 300, 300, epochs=20, o_weight=0.1)
    wnut: TaskSizes = TaskSizes(200, 60, 30, epochs=20, o_weight=0.1)
    causal: tuple[str, ...] = CAUSAL_ZOO
    encoders: tuple[str, ...] = ENCODER_ZOO
    extra_encoders: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0,)
    augment: Augmentation | None = Augmentation()
    control_test: int = 40
    control_models: tuple[str, ...] = CAUSAL_ZOO + ENCODER_ZOO
    zero_shot_models: tuple[str, ...] = CAUSAL_ZOO
    similarity_texts: int = 100
    workers: int | None = None

    def __post_init__(self) -> None:
        _check_lists(self)
        unknown = [t for t in self.tasks if t not in TRANSFER_TASKS]
        if unknown or not self.tasks:
            raise ValueError(f"TransferSettings.tasks: unknown {unknown} (or none); choose from {TRANSFER_TASKS}")
        if not self.seeds:
            raise ValueError("TransferSettings.seeds needs at least one seed")
        for name in ("re", "ner", "wnut"):
            if not isinstance(getattr(self, name), TaskSizes):
                raise ValueError(f"TransferSettings.{name} must be a TaskSizes(train, dev, test); "
                                 f"got {getattr(self, name)!r}")
        if self.re.o_weight is not None:
            raise ValueError("TransferSettings.re.o_weight: relation extraction has no O tag; leave o_weight unset "
                             "(it weights NER's and WNUT's O)")
        if not self.causal + self.encoders:
            raise ValueError("TransferSettings needs at least one model (causal or encoders)")
        _check_zoo_extras("TransferSettings.extra_encoders", self.extra_encoders, "encoder")
        listed = self.causal + self.encoders + self.extra_encoders
        twice = sorted({m for m in listed if isinstance(m, str) and listed.count(m) > 1})
        if twice:
            raise ValueError(f"TransferSettings: {twice} listed twice (causal, encoders, extra_encoders); list each once")
        for kind, names in (("causal", self.causal), ("encoder", self.encoders)):
            wrong = [m for m in names if m in ZOO and ZOO[m].kind != kind]
            if wrong:
                raise ValueError(f"TransferSettings: zoo models {wrong} are not of kind {kind!r}; move them "
                                 "to the other list")
        models = self.models
        for name in ("control_models", "zero_shot_models"):
            missing = [m for m in getattr(self, name) if m not in models]
            if missing:
                raise ValueError(f"TransferSettings.{name}: {missing} are not models of the chapter {list(models)}; "
                                 f"list them among the models (causal, encoders, extra_encoders) or remove them from "
                                 f"{name} too")
        if any(m not in self.causal for m in self.zero_shot_models):
            raise ValueError(f"TransferSettings.zero_shot_models must be causal LMs (of {list(self.causal)}); "
                             "an encoder cannot be prompted")
        for name in ("control_test", "similarity_texts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"TransferSettings.{name} must be a positive int; got {value!r}")

    @property
    def models(self) -> tuple[str, ...]:
        """Every model of the chapter: causal, encoders, extra encoders."""
        return self.causal + self.encoders + self.extra_encoders

    def models_for(self, task: str) -> tuple[str, ...]:
        """The models that take part in ``task``: all of them for ``dp`` and ``pos``, the others
        less ``extra_encoders``."""
        return self.models if task in ("dp", "pos") else self.causal + self.encoders

    def training_for(self, task: str) -> TrainConfig:
        """How the adapters of ``task`` train: ``self.syntax.training``, for ``re`` / ``ner`` / ``wnut``
        with their :class:`TaskSizes` ``epochs`` / ``o_weight`` where set and ``self.augment`` where not ``None``."""
        sizes = {"re": self.re, "ner": self.ner, "wnut": self.wnut}.get(task)
        if sizes is None:
            return self.syntax.training
        training = sizes.training(self.syntax.training)
        return training if self.augment is None else dataclasses.replace(training, augment=self.augment)


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
        # the two larger zoo models join the panels at default; their 42 texts cost about 80 CPU s
        # (qwen2.5-1.5b) and 10 (embeddinggemma-300m) cold, from their measured cost per sentence
        "default": QualitativeSettings(CAUSAL_ZOO + ("qwen2.5-1.5b",), ENCODER_ZOO + ("embeddinggemma-300m",),
                                       num_texts=40, max_order=3, size=50),
        "paper": QualitativeSettings(PAPER_CAUSAL, PAPER_ENCODERS, num_texts=200, max_order=3, size=50),
    },
    "quantitative": {
        "smoke": QuantitativeSettings(("gemma-3-270m", "qwen2.5-0.5b"), ENCODER_ZOO, num_texts=8, max_order=3, size=50,
                                      proxy_num_texts=8, proxy_size=24, seeds=(0,), official_eval_every=5,
                                      official_quirk_rows=("frozen_batchnorm",),
                                      proxy=ProxyConfig(iterations=10, eval_every=5, **{**_CPU_PROXY, "batch_size": 8})),
        "default": QuantitativeSettings(CAUSAL_ZOO, ENCODER_ZOO, num_texts=100, max_order=3, size=50,
                                        proxy_num_texts=50, proxy_size=24, seeds=(0, 1, 2), official_eval_every=20,
                                        official_quirk_rows=("frozen_batchnorm",),
                                        proxy=ProxyConfig(iterations=400, eval_every=50, **_CPU_PROXY),
                                        size_models=("qwen2.5-0.5b", "qwen2.5-1.5b"),
                                        extra_encoders=("embeddinggemma-300m",)),
        "paper": QuantitativeSettings(PAPER_CAUSAL, PAPER_ENCODERS, num_texts=1000, max_order=3, size=50,
                                      proxy_num_texts=1000, proxy_size=50, seeds=(0, 1, 2), official_eval_every=100,
                                      # every training quirk but official_optimiser: the paper's proxy
                                      # settings are the official ones, its row would repeat the official run
                                      official_quirk_rows=("augment_before_cleaning", "raw_inputs", "frozen_batchnorm"),
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


# Sized so that each comparison of the chapter runs in a cold build on the 2-core CPU (cost measured on
# book/design.md: 2,080 s wall in the cold build of 2 December 2026): every model runs order 1, 1+2 and
# distance on 500 sentences; the full order grid for one CLM and one encoder; a second seed for the
# order-1 / order-3 / rollout comparison; ALTI (one more forward pass per sentence) beside order 1 on
# 150 / 60 / 100 sentences; one CLM's learning curve.
# extra_models: the third encoder family; qwen2.5-1.5b's extraction does not fit (see book/design.md).
_SYNTAX_DEFAULT = SyntaxSettings(training=TrainConfig(epochs=6), seeds=(0, 1), alti_subset=(150, 60, 100),
                       curve_models=("smollm2-135m",), extra_models=("embeddinggemma-300m",))

_SYNTAX: dict[str, SyntaxSettings] = {
    "smoke": SyntaxSettings(num_train=40, num_dev=20, num_test=20, seeds=(0,),
                         adapter=AdapterConfig(dim=16, depth=1, heads=2, arc_dim=32, rel_dim=16),
                         training=TrainConfig(epochs=2), models=("minilm-l6", "smollm2-135m"),
                         full_grid=("minilm-l6",), alti_models=("minilm-l6", "smollm2-135m"), alti_subset=(20, 10, 10),
                         layer_models=("minilm-l6",), random_init=("minilm-l6",), pos_models=("minilm-l6",),
                         curve_models=("smollm2-135m",), curve_sizes=(20,)),
    "default": _SYNTAX_DEFAULT,
    # The official adapter and training (models/adapters.py, configs/train_*_udewt_dp.json): token grid,
    # diagonal features only, maps as they are, the official axial-attention network (backbone "package",
    # no padding mask; 448 M backbone parameters at 2 input channels, as the official ~450 M).
    "paper": SyntaxSettings(num_train=None, num_dev=None, num_test=None, grid="tokens", long_sentences=True,
                         adapter=AdapterConfig(dim=768, depth=5, heads=8, ffn_mult=4, ffn_kernel=3, arc_dim=512,
                                               rel_dim=128, pair_scores=False, input_transform="none",
                                               backbone="package", local_mix=False),
                         training=TrainConfig(epochs=15, lr=3e-5, batch_size=2, warmup=0.0, augment=Augmentation()),
                         models=PAPER_ENCODERS, full_grid=PAPER_ENCODERS, alti_models=PAPER_ENCODERS, alti_subset=None,
                         layer_models=PAPER_ENCODERS, random_init=PAPER_ENCODERS, pos_models=PAPER_ENCODERS,
                         curve_models=(), workers=1),
}


# The transfer chapter's profiles; "syntax" is the syntax chapter's settings of the same profile.
_TRANSFER: dict[str, dict[str, Any]] = {
    "smoke": dict(syntax=_SYNTAX["smoke"], re=TaskSizes(40, 20, 12), ner=TaskSizes(40, 20, 20),
                  wnut=TaskSizes(40, 20, 8),
                  causal=("smollm2-135m", "gemma-3-270m"), encoders=("minilm-l6", "mpnet-base"), control_test=10,
                  control_models=("smollm2-135m",), zero_shot_models=("smollm2-135m",), similarity_texts=12),
    # extra_encoders: the third encoder family in DP and POS (its random-init twin among the controls).
    "default": dict(extra_encoders=("embeddinggemma-300m",),
                    control_models=CAUSAL_ZOO + ENCODER_ZOO + ("embeddinggemma-300m",)),
    # The paper's models (a GPU with a model hub) and splits, three seeds.
    "paper": dict(syntax=_SYNTAX["paper"], re=TaskSizes(7200, 800, 2717), ner=TaskSizes(1598, 400, 2077),
                  wnut=TaskSizes(3394, 1009, 1287),
                  causal=PAPER_CAUSAL, encoders=PAPER_ENCODERS, control_models=PAPER_CAUSAL + PAPER_ENCODERS,
                  zero_shot_models=PAPER_CAUSAL, seeds=(0, 1, 2), control_test=500, similarity_texts=1000),
}


_PROFILES["syntax"] = _SYNTAX
_PROFILES["transfer"] = {name: TransferSettings(**fields) for name, fields in _TRANSFER.items()}


def _as_value(value: Any) -> Any:
    return tuple(_as_value(v) for v in value) if isinstance(value, list) else value


#: What a scalar field takes, by declared type: (test, words for the message). bool is no number here.
_SCALARS: dict[type, tuple[Any, str]] = {
    bool: (lambda v: isinstance(v, bool), "true or false"),
    int: (lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool), "an integer"),
    float: (lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool), "a number"),
    str: (lambda v: isinstance(v, str), "a string"),
}


@functools.cache
def _field_types(cls: type) -> dict[str, tuple[Any, bool]]:
    """Each field of dataclass ``cls``: its declared type less ``None``, and whether ``None`` is allowed."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
        rest = [a for a in args if a is not type(None)]
        out[f.name] = (rest[0] if len(rest) == 1 else Any, len(rest) < len(args))
    return out


def _shown(value: Any, source: str) -> str:
    """``value`` as its writer wrote it: JSON for the environment variable, Python for a parameter."""
    return json.dumps(value) if source else f"{type(value).__name__} {value!r}"


def _check_value(cls: type, name: str, value: Any, current: Any, where: str, source: str) -> Any:
    """``value`` for field ``name`` of ``cls`` (``current`` now), checked against the declared type: a nested
    settings object takes an object of its fields (built on ``current``, or on the class defaults where
    ``current`` is None), a scalar its JSON type; tuples are left to :func:`_check_lists`."""
    declared, optional = _field_types(cls)[name]
    if value is None and optional:
        return None
    if dataclasses.is_dataclass(declared):
        if isinstance(value, declared):
            return value
        if isinstance(value, dict):
            return _replace_fields(declared, current, value, where, source)
        fields = ", ".join(f.name for f in dataclasses.fields(declared))
        raise TypeError(f"{source}{where} takes an object of {declared.__name__} fields ({fields})"
                        f"{' or null' if optional else ''}; got {_shown(value, source)}")
    if declared in _SCALARS:
        test, words = _SCALARS[declared]
        if not test(value):
            or_null = " or null" if optional else ""
            raise TypeError(f"{source}{where} takes {words}{or_null}; got {_shown(value, source)}")
    if name == "device" and value is not None:  # a name olacore.settings.resolve_device reads (the GPU: when training)
        try:
            torch.device(value)
        except RuntimeError:
            raise ValueError(f"{source}{where}: {value!r} is no torch device; give \"cpu\", \"cuda\", \"cuda:0\", "
                             "\"mps\" or null (CUDA when available)") from None
    return _as_value(value)


def _replace_fields(cls: type, base: Any, changes: dict[str, Any], where: str, source: str = "") -> Any:
    """``base`` (an instance of dataclass ``cls``; ``None``: its defaults) with ``changes`` applied, each
    checked by :func:`_check_value`; ``where``: the field path for messages, ``source``: their prefix."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(changes) - names)
    label = where if where == cls.__name__ else f"{where} ({cls.__name__})"
    if unknown:
        raise ValueError(f"{source}{label} has no field {', '.join(unknown)}; its fields: {', '.join(sorted(names))}")
    out = {name: _check_value(cls, name, value, getattr(base, name, None), f"{where}.{name}", source)
           for name, value in changes.items()}
    try:
        return cls(**out) if base is None else dataclasses.replace(base, **out)
    except (TypeError, ValueError) as error:
        if where != cls.__name__:
            raise ValueError(f"{source}{where}: {error}") from None
        if not source:
            raise  # a notebook's own parameter: the class's own message names the field
        raise ValueError(f"{source}{error}") from None


def _environment_overrides(chapter: str, base: Any) -> Any:
    """``base`` with the :data:`SETTINGS_OVERRIDES_ENV` entry of ``chapter`` applied (unchanged when unset)."""
    text = os.environ.get(SETTINGS_OVERRIDES_ENV, "").strip()
    if not text:
        return base
    try:
        table = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{SETTINGS_OVERRIDES_ENV} is not JSON ({error}); give an object such as "
                         '{"quantitative": {"num_texts": 8}}') from None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise ValueError(f"{SETTINGS_OVERRIDES_ENV} must be a JSON object of chapter -> object of fields")
    unknown = sorted(set(table) - set(_PROFILES))
    if unknown:
        raise ValueError(f"{SETTINGS_OVERRIDES_ENV}: unknown chapter {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(_PROFILES))}")
    if chapter not in table:
        return base
    return _replace_fields(type(base), base, table[chapter], type(base).__name__, f"{SETTINGS_OVERRIDES_ENV}: ")


def settings(chapter: str, profile: str, *, device: str | None = None, **overrides: Any):
    """The validated settings of ``chapter`` under ``profile``, with ``overrides`` applied.

    Args:
        chapter: ``"derivation"``, ``"qualitative"``, ``"quantitative"``, ``"controls"``,
            ``"syntax"`` or ``"transfer"``.
        profile: ``"smoke"``, ``"default"`` or ``"paper"``.
        device: where the TOA adapters train (``"syntax"``, ``"transfer"``: their ``training.device``;
            ``None``: CUDA when available); the other chapters take the device in their own calls.
        **overrides: fields to replace (a notebook's own parameters, e.g. ``seeds=[0]``); ``None``
            values are ignored, lists become tuples. :data:`SETTINGS_OVERRIDES_ENV` is applied first.

    Returns:
        The chapter's settings dataclass (frozen).

    Raises:
        ValueError: unknown chapter, profile or field (the message lists the known ones), a ``device``
            for a chapter that trains no adapter, or a value that fails validation.
        TypeError: an override of the wrong type (a nested settings object takes an object of its
            fields); the message names the field path, e.g. ``SyntaxSettings.training.lr``.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    if chapter not in _PROFILES:
        raise ValueError(f"unknown chapter {chapter!r}; known: {', '.join(sorted(_PROFILES))}")
    base = _environment_overrides(chapter, _PROFILES[chapter][profile])
    names = {f.name for f in dataclasses.fields(base)}
    changes = {k: v for k, v in overrides.items() if v is not None or k not in names}  # None: left as it is
    out = _replace_fields(type(base), base, changes, type(base).__name__)
    if device is not None:
        if chapter == "syntax":
            out = replace(out, training=replace(out.training, device=device))
        elif chapter == "transfer":
            syntax = out.syntax
            out = replace(out, syntax=replace(syntax, training=replace(syntax.training, device=device)))
        else:
            raise ValueError(f"settings({chapter!r}, ...) takes no device: pass it to the chapter's own calls")
    return out
