"""Run profiles: one ``profile`` parameter sets every size a chapter uses.

``smoke`` (tiny sizes, tests and CI), ``default`` (the published book on a 2-core CPU; book/compute.md,
book/design.md), ``paper`` (the paper's models and sizes, a GPU). Each chapter has one settings class
(:data:`CLASSES`), its fields by profile in :data:`TABLES` (``profiles.json``); :func:`settings` applies
:data:`SETTINGS_OVERRIDES_ENV` and a notebook's parameters on top.

The tables: syntax ``default`` is sized for a cold build on the 2-core CPU (book/design.md); syntax ``paper`` is the
official adapter and training (``models/adapters.py``, ``configs/train_*_udewt_dp.json``); quantitative ``paper``
has no ``official_optimiser`` row, the paper's proxy settings being the official ones.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from olacore.augment import Augmentation
from olacore.proxy import OfficialQuirks, ProxyConfig
from olacore.settings import (Bool, Items, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, SettingsError,
                              Str, settings_class)
from olacore.toa.data import GRIDS, SYNTAX_GRID
from olacore.toa.model import AdapterConfig
from olacore.toa.train import TRANSFER_TASKS, TrainConfig
from olacore.zoo import BOOK_ZOO, ZOO

__all__ = [
    "PROFILES", "CAUSAL_ZOO", "ENCODER_ZOO", "settings", "DerivationSettings", "QualitativeSettings",
    "QuantitativeSettings", "ControlsSettings", "SyntaxSettings", "TaskSizes", "TransferSettings",
    "CLASSES", "TABLES", "SETTINGS_OVERRIDES_ENV",
]

PROFILES = ("smoke", "default", "paper")

#: Environment variable: JSON ``{chapter: {field: value}}`` of overrides under every profile (a nested settings
#: object takes an object: ``{"syntax": {"adapter": {"dim": 16}}}``).
SETTINGS_OVERRIDES_ENV = "OLACORE_SETTINGS_OVERRIDES"

#: The zoo models of the chapters' grids, by kind (:data:`olacore.zoo.BOOK_ZOO`).
CAUSAL_ZOO = tuple(name for name, spec in BOOK_ZOO.items() if spec.kind == "causal")
ENCODER_ZOO = tuple(name for name, spec in BOOK_ZOO.items() if spec.kind == "encoder")

Names = tuple[Str, ...]
Models = Items[Str]
Seeds = Items[NonNegativeInt]


def _check_zoo_extras(where: str, models: tuple, kind: str | None = None, grid: tuple = (), grid_name: str = "") -> None:
    """Refuse extra models that are no zoo models (of ``kind``), in ``grid`` or listed twice."""
    for model in models:
        if model not in ZOO:
            close = difflib.get_close_matches(model, list(ZOO), n=1, cutoff=0.6)
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


def _check_within(where: str, names: tuple, pool: tuple, pool_name: str, fix: str = "") -> None:
    """Refuse the ``names`` of field ``where`` that are not in ``pool`` (the field ``pool_name``)."""
    missing = [m for m in names if m not in pool]
    if missing:
        raise ValueError(f"{where}: {missing} are not in {pool_name} {list(pool)}{fix}")


@settings_class
class DerivationSettings:
    """Chapter "From rollout to OLA": the ``model`` that checks the identities, the recurrence-vs-enumeration
    benchmark (``bench_layers`` x ``bench_orders``, ``bench_size`` tokens, batch, repeats), the ``alti_models``
    drawn beside their OLA."""

    model: Str
    bench_layers: tuple[NonNegativeInt, ...]
    bench_orders: tuple[NonNegativeInt, ...]
    bench_size: PositiveInt
    bench_batch: PositiveInt
    bench_repeats: PositiveInt
    alti_models: Names = ("smollm2-135m", "minilm-l6")


@settings_class
class QualitativeSettings:
    """Chapter "OLAS by eye": the models, ``num_texts`` for the first SSIM number, ``max_order`` drawn, the
    resize ``size``."""

    causal: Models
    encoders: Models
    num_texts: PositiveInt
    max_order: PositiveInt
    size: PositiveInt


@settings_class
class QuantitativeSettings:
    """Chapter "Quantitative OLAS": retrieval over ``num_texts`` texts at ``size``; the visual proxy on the
    first ``proxy_num_texts`` texts at ``proxy_size``; the official protocol evaluates every
    ``official_eval_every`` steps (official: 100) with one variant per quirk of ``official_quirk_rows`` switched
    off (``None``: every quirk). ``size_models``: ``(smaller, larger)`` of one family, the smaller in ``causal``;
    ``extra_encoders``: a third encoder family (empty: the section does not run).
    """

    causal: Models
    encoders: Models
    num_texts: PositiveInt
    max_order: PositiveInt
    size: PositiveInt
    proxy_num_texts: PositiveInt
    proxy_size: PositiveInt
    proxy: ProxyConfig
    seeds: Seeds
    official_eval_every: PositiveInt
    official_quirk_rows: tuple[Literal[OfficialQuirks.names()], ...] | None = None
    size_models: Names = ()
    extra_encoders: Names = ()

    def __post_init__(self) -> None:
        if self.proxy_num_texts > self.num_texts:
            raise ValueError(f"QuantitativeSettings.proxy_num_texts ({self.proxy_num_texts}) cannot exceed num_texts "
                             f"({self.num_texts})")
        if self.official_eval_every > self.proxy.iterations:
            raise ValueError(f"QuantitativeSettings.official_eval_every ({self.official_eval_every}) exceeds the "
                             f"proxy's {self.proxy.iterations} steps: the official protocol would never evaluate")
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


@settings_class
class ControlsSettings:
    """Chapter "Where OLAS comes from": each target gets the controls and queries a trained source, with a
    noise sweep per kind."""

    encoder_target: Str
    encoder_source: Str
    encoder_texts: PositiveInt
    encoder_noise: tuple[NonNegativeFloat, ...]
    causal_target: Str
    causal_source: Str
    causal_texts: PositiveInt
    causal_noise: tuple[NonNegativeFloat, ...]
    max_order: PositiveInt
    size: PositiveInt
    seed: NonNegativeInt
    proxy_size: PositiveInt
    proxy: ProxyConfig
    seeds: Seeds


@settings_class
class SyntaxSettings:
    """Chapter "Syntax in OLA": the EWT data, the TOA adapter and its training, the grid of inputs.

    Attributes:
        num_train, num_dev, num_test: EWT sentences (:func:`olacore.corpora.ewt_splits`; ``None``: the whole split).
        max_tokens: the length cut (official 64).
        grid: ``"words"`` or ``"tokens"`` (official; :mod:`olacore.toa.data`).
        long_sentences: also score the test sentences of more than 30 words.
        seeds: seeds of the repeated cells (``seed_inputs`` x ``full_grid``).
        models: every model of the chapter; ``basic_inputs`` run on each.
        full_grid: models that also run every other input of :data:`SYNTAX_GRID`.
        seed_inputs: inputs run with every seed on ``full_grid`` (everything else: ``seeds[0]``).
        alti_models, alti_subset: models whose ALTI runs beside order 1 on ``(train, dev, test)``
            sentences (``None``: the chapter's splits, ALTI then a cell of the grid).
        layer_models: models of the best-single-layer baseline.
        random_init: models whose random-initialised twin runs order 1 (a control).
        pos_models: models of the POS-from-OLA check (order 1+2, XPOS).
        curve_models, curve_sizes: models that also train order 1 on the first ``curve_sizes`` sentences.
        workers: training processes (``None``: one per core on a CPU).
        extra_models: zoo models outside ``models`` that run order 1 and distance in a section of their own.

    Raises:
        SettingsError: (a ValueError) a non-positive size, no seed, an unknown input name, a model of a
            sub-list missing from ``models``, an ``extra_models`` name that is no zoo model or in ``models``.
    """

    num_train: PositiveInt | None = 500
    num_dev: PositiveInt | None = 150
    num_test: PositiveInt | None = 300
    max_tokens: PositiveInt | None = 64
    grid: Literal[GRIDS] = "words"
    long_sentences: Bool = False
    adapter: AdapterConfig = field(default_factory=AdapterConfig)
    training: TrainConfig = field(default_factory=TrainConfig)
    seeds: Seeds = (0, 1, 2)
    models: Names = CAUSAL_ZOO + ENCODER_ZOO
    basic_inputs: tuple[Literal[tuple(SYNTAX_GRID)], ...] = ("order 1", "order 1+2", "distance")
    full_grid: Names = ("smollm2-135m", "minilm-l6")
    seed_inputs: tuple[Literal[tuple(SYNTAX_GRID)], ...] = ("order 1", "order 3", "rollout")
    alti_models: Names = CAUSAL_ZOO + ENCODER_ZOO
    alti_subset: tuple[PositiveInt, PositiveInt, PositiveInt] | None = (250, 100, 150)
    layer_models: Names = ("smollm2-135m", "minilm-l6")
    random_init: Names = ("minilm-l6",)
    pos_models: Names = ("minilm-l6",)
    curve_models: Names = ("smollm2-135m", "minilm-l6")
    curve_sizes: tuple[PositiveInt, ...] = (125, 250)
    workers: PositiveInt | None = None
    extra_models: Names = ()

    def __post_init__(self) -> None:
        for name in ("full_grid", "alti_models", "layer_models", "random_init", "pos_models", "curve_models"):
            _check_within(f"SyntaxSettings.{name}", getattr(self, name), self.models, "models")
        _check_zoo_extras("SyntaxSettings.extra_models", self.extra_models, grid=self.models, grid_name="models")


@settings_class
class TaskSizes:
    """Examples per split of one corpus task (``re``: SemEval-2010 Task 8; ``ner``: UNER English-EWT, train and
    dev both from UNER dev; ``wnut``: WNUT-17); ``test`` is spread evenly over the test split. ``epochs`` and
    ``o_weight`` (the ``O`` tag's loss weight) replace the syntax chapter's training where set.

    Raises:
        SettingsError: (a ValueError) a size that is not a positive int, a non-positive ``epochs`` / ``o_weight``.
    """

    train: PositiveInt
    dev: PositiveInt
    test: PositiveInt
    epochs: PositiveInt | None = None
    o_weight: PositiveFloat | None = None

    def training(self, base: TrainConfig) -> TrainConfig:
        """``base`` with this task's ``epochs`` and ``o_weight`` where they are set."""
        changes = {"epochs": self.epochs, "ner_o_weight": self.o_weight}
        changes = {name: value for name, value in changes.items() if value is not None}
        return dataclasses.replace(base, **changes) if changes else base


@settings_class
class TransferSettings:
    """Chapter "TOA: adapters that move between models" (paper section 4.4): tasks, corpora, models, bounds.

    Attributes:
        syntax: the syntax chapter's :class:`SyntaxSettings` of the same profile (EWT splits for ``dp`` and
            ``pos``; adapter, training, length cut and grid for every task).
        tasks: tasks to run (of :data:`olacore.toa.train.TRANSFER_TASKS`).
        re, ner, wnut: corpus sizes and epochs (:class:`TaskSizes`).
        causal, encoders: the models of each kind, each a source and a target.
        extra_encoders: zoo encoders that join ``dp`` and ``pos`` only.
        seeds: training seeds.
        augment: the augmentation of ``re``, ``ner``, ``wnut`` adapters (``None``: the syntax chapter's).
        control_test: EWT test sentences the random-init twins are scored on (``dp``, ``pos``, ``ner``).
        control_models: targets whose random-init twin is scored.
        zero_shot_models: causal models prompted zero-shot on ``re`` and ``wnut``.
        similarity_texts: EWT texts for each pair's order-1 SSIM Hits@1 when chapter 03's results are absent.
        workers: extraction and training processes (``None``: one per core).

    Raises:
        SettingsError: (a ValueError) an unknown task, no seed, a control or zero-shot model that is not
            a model of the chapter, a zero-shot model that is not causal, a non-positive size.
    """

    syntax: SyntaxSettings = field(default_factory=lambda: _PROFILES["syntax"]["default"])
    tasks: Items[Literal[TRANSFER_TASKS]] = TRANSFER_TASKS
    re: TaskSizes = TaskSizes(2000, 300, 400, epochs=20)
    ner: TaskSizes = TaskSizes(500, 300, 300, epochs=20, o_weight=0.1)
    wnut: TaskSizes = TaskSizes(200, 60, 30, epochs=20, o_weight=0.1)
    causal: Names = CAUSAL_ZOO
    encoders: Names = ENCODER_ZOO
    extra_encoders: Names = ()
    seeds: Seeds = (0,)
    augment: Augmentation | None = Augmentation()
    control_test: PositiveInt = 40
    control_models: Names = CAUSAL_ZOO + ENCODER_ZOO
    zero_shot_models: Names = CAUSAL_ZOO
    similarity_texts: PositiveInt = 100
    workers: PositiveInt | None = None

    def __post_init__(self) -> None:
        if self.re.o_weight is not None:
            raise ValueError("TransferSettings.re.o_weight: relation extraction has no O tag; leave o_weight unset "
                             "(it weights NER's and WNUT's O)")
        if not self.causal + self.encoders:
            raise ValueError("TransferSettings needs at least one model (causal or encoders)")
        _check_zoo_extras("TransferSettings.extra_encoders", self.extra_encoders, "encoder")
        twice = sorted({m for m in self.models if self.models.count(m) > 1})
        if twice:
            raise ValueError(f"TransferSettings: {twice} listed twice (causal, encoders, extra_encoders); list each once")
        for kind, names in (("causal", self.causal), ("encoder", self.encoders)):
            wrong = [m for m in names if m in ZOO and ZOO[m].kind != kind]
            if wrong:
                raise ValueError(f"TransferSettings: zoo models {wrong} are not of kind {kind!r}; move them "
                                 "to the other list")
        _check_within("TransferSettings.control_models", self.control_models, self.models, "the chapter's models",
                      "; list them among causal, encoders or extra_encoders, or remove them from control_models")
        _check_within("TransferSettings.zero_shot_models", self.zero_shot_models, self.causal, "causal",
                      "; only a causal LM can be prompted (an encoder cannot)")

    @property
    def models(self) -> tuple[str, ...]:
        """Every model of the chapter: causal, encoders, extra encoders."""
        return self.causal + self.encoders + self.extra_encoders

    def models_for(self, task: str) -> tuple[str, ...]:
        """The models of ``task`` (``extra_encoders`` only for ``dp`` and ``pos``)."""
        return self.models if task in ("dp", "pos") else self.causal + self.encoders

    def training_for(self, task: str) -> TrainConfig:
        """How the adapters of ``task`` train: the syntax chapter's training with the task's own changes."""
        sizes = {"re": self.re, "ner": self.ner, "wnut": self.wnut}.get(task)
        if sizes is None:
            return self.syntax.training
        training = sizes.training(self.syntax.training)
        return training if self.augment is None else dataclasses.replace(training, augment=self.augment)


#: Each chapter's settings class.
CLASSES = {"derivation": DerivationSettings, "qualitative": QualitativeSettings, "quantitative": QuantitativeSettings,
           "controls": ControlsSettings, "syntax": SyntaxSettings, "transfer": TransferSettings}

#: chapter -> profile -> the fields of its settings (the rest: the class's defaults), from ``profiles.json``: the
#: shape of :data:`SETTINGS_OVERRIDES_ENV`, a nested settings object given as an object of its fields.
TABLES: dict[str, dict[str, dict[str, Any]]] = json.loads((Path(__file__).parent / "profiles.json").read_text(encoding="utf-8"))

#: The paper's causal models and encoders (its profile's).
PAPER_CAUSAL = tuple(TABLES["qualitative"]["paper"]["causal"])
PAPER_ENCODERS = tuple(TABLES["qualitative"]["paper"]["encoders"])

#: The settings of each chapter and profile, checked at import.
_PROFILES: dict[str, dict[str, Any]] = {}
for _chapter, _profiles in TABLES.items():
    _PROFILES[_chapter] = {
        profile: CLASSES[_chapter](**({"syntax": _PROFILES["syntax"][profile]} if _chapter == "transfer" else {}),
                                   **fields)
        for profile, fields in _profiles.items()}


def _merged(current: Any, changes: Any) -> Any:
    """``changes`` laid over ``current``, recursively into nested settings objects."""
    if not (isinstance(changes, dict) and dataclasses.is_dataclass(current)):
        return changes
    fields = {f.name: getattr(current, f.name) for f in dataclasses.fields(current)}
    return {**fields, **{name: _merged(fields.get(name), value) for name, value in changes.items()}}


def _apply(base: Any, changes: dict[str, Any], source: str = "") -> Any:
    """``base`` with ``changes`` laid over it, checked; ``source`` prefixes a refusal."""
    try:
        return type(base)(**_merged(base, changes))
    except SettingsError as error:
        raise SettingsError(f"{source}{error}") from None


def _environment_overrides(chapter: str, base: Any) -> Any:
    """``base`` with the :data:`SETTINGS_OVERRIDES_ENV` entry of ``chapter`` applied."""
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
    return _apply(base, table[chapter], f"{SETTINGS_OVERRIDES_ENV}: ")


def settings(chapter: str, profile: str, *, device: str | None = None, **overrides: Any):
    """The validated settings of ``chapter`` under ``profile``, with ``overrides`` applied.

    Args:
        chapter: ``"derivation"``, ``"qualitative"``, ``"quantitative"``, ``"controls"``,
            ``"syntax"`` or ``"transfer"``.
        profile: ``"smoke"``, ``"default"`` or ``"paper"``.
        device: where the TOA adapters train (``"syntax"``, ``"transfer"``: their ``training.device``;
            ``None``: CUDA when available); the other chapters take the device in their own calls.
        **overrides: fields to replace (``None`` ignored; a dict replaces the fields of a nested settings
            object it names), after :data:`SETTINGS_OVERRIDES_ENV`.

    Raises:
        ValueError: unknown chapter or profile (the message lists the known ones), a ``device`` for a
            chapter that trains no adapter; :class:`olacore.settings.SettingsError` (a ValueError) for an
            unknown field or a value that fails validation, on one line naming the field path, e.g.
            ``SyntaxSettings.training.lr``.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    if chapter not in _PROFILES:
        raise ValueError(f"unknown chapter {chapter!r}; known: {', '.join(sorted(_PROFILES))}")
    if device is not None and chapter not in ("syntax", "transfer"):
        raise ValueError(f"settings({chapter!r}, ...) takes no device: pass it to the chapter's own calls")
    base = _environment_overrides(chapter, _PROFILES[chapter][profile])
    names = {f.name for f in dataclasses.fields(base)}
    out = _apply(base, {k: v for k, v in overrides.items() if v is not None or k not in names})  # None: as it is
    if device is not None:
        training = {"training": {"device": device}}
        out = _apply(out, training if chapter == "syntax" else {"syntax": training})
    return out
