"""Settings of the TOA transfer chapter (paper section 4.4), one :class:`TransferSettings` per profile.

:func:`transfer_settings` gives the sizes of the smoke / default / paper profiles; the tasks
(:data:`TASKS`), their headline metrics (:data:`METRICS`) and the adapter input (:data:`INPUT`)
are fixed here. :func:`task_training` says how each task's adapters train. The experiments
that read these settings are in :mod:`olacore.toa.transfer`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import Any

from olacore.augment import Augmentation
from olacore.toa.config import CAUSAL_ZOO, ENCODER_ZOO, PAPER_ENCODERS, ToaSettings, toa_settings
from olacore.toa.train import TrainConfig

__all__ = ["TASKS", "METRICS", "INPUT", "TaskSizes", "TransferSettings", "PAPER_CAUSAL", "transfer_settings",
           "task_training"]

#: The transfer tasks in the chapter's order (the paper's table first).
TASKS = ("re", "dp", "pos", "ner")
#: The headline score of each task (percent), as the official evaluation reports it.
METRICS = {"re": "accuracy", "ner": "f1", "pos": "accuracy", "dp": "uas"}
#: The adapter input of every transfer adapter: the official one (orders 1 and 2, raw and clean).
INPUT = "order 1+2"


@dataclass(frozen=True)
class TaskSizes:
    """Examples per split of one corpus task (``re``: SemEval-2010 Task 8; ``ner``: WNUT-17).

    ``train`` and ``dev`` are the first examples of their split (SemEval dev: every 10th TRAIN
    example, :func:`olacore.corpora.read_semeval`); ``test`` is spread evenly over the test
    split (:func:`olacore.zeroshot.evenly_spread`): the same fixed subset the zero-shot
    baseline answers.

    ``epochs`` (``None``: the syntax chapter's, ``settings.syntax.training.epochs``) sets the
    training passes of this task's adapters; everything else of the training is the syntax
    chapter's.

    Raises:
        ValueError: a size that is not a positive int (``epochs``: a positive int or ``None``).
    """

    train: int
    dev: int
    test: int
    epochs: int | None = None

    def __post_init__(self) -> None:
        for name in ("train", "dev", "test", "epochs"):
            value = getattr(self, name)
            if name == "epochs" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"TaskSizes.{name} must be a positive int; got {value!r}")

    def training(self, base: TrainConfig) -> TrainConfig:
        """``base`` with this task's ``epochs`` (``base`` itself when ``epochs`` is ``None``)."""
        return base if self.epochs is None else replace(base, epochs=self.epochs)


@dataclass(frozen=True)
class TransferSettings:
    """Sizes of the transfer chapter for one profile.

    Attributes:
        syntax: the syntax chapter's settings (:func:`olacore.toa.config.toa_settings` of the
            same profile): its EWT splits serve ``dp`` and ``pos``, and its adapter, training,
            length cut and grid serve every task here, so DP adapters are shared.
        tasks: tasks to run (subset of :data:`TASKS`).
        re, ner: corpus sizes and epochs (:class:`TaskSizes`). RE was sized by measurement
            (smollm2-135m, SemEval dev 300, seed 0, 19-way accuracy; majority "Other" 17.7 %):
            300 training sentences x 6 epochs learned nothing (test at the majority bound);
            1,000 x 12 epochs 24.3 %; 1,500 x 20 epochs 34.3 % (best epoch 14; minilm-l6,
            1,500 x 12: 29.7 %), about the paper's 30-35 % with 7,200 sentences. Reading the
            pair cells of the two entities as well (as the DP head does) got there sooner
            (35.0 % at epoch 5) but is not the official head: not used. With augmentation
            (SemEval dev 150; source-trained / transferred to the other two causal models,
            smollm2-135m then qwen2.5-0.5b as source): 1,500 x 15 epochs 33.3 / 26.7 / 24.7 and
            30.0 / 28.7 / 24.7; 1,000 x 20 34.0 / 20.0 / 27.3 and 27.3 / 25.3 / 23.3; 1,000 x 15
            26.0 / 20.0 / 23.3 and 22.7 / 22.7 / 24.7. The default, 1,000 x 20, is within a
            standard error (about 3.6 points) of 1,500 x 15 and extracts a third fewer maps,
            which keeps the chapter within its 20 minutes cold (measured: 1,169 s in a fresh-clone cold book).
        causal, encoders: the models of each kind; each is a target, and each trains the
            adapter of its own diagonal cell, so each is also a source.
        seeds: training seeds (mean and std where more than one).
        augment: the augmentation of this chapter's own adapters (``re``, ``ner``): the official
            fake sinks and noise (:class:`olacore.augment.Augmentation`, made for transfer);
            ``None``: the syntax chapter's (none at ``default``). ``dp`` / ``pos`` always train
            as the syntax chapter, whose adapters they share. Measured on SemEval dev (150,
            seed 0, RE accuracy; source-trained / transferred to gemma-3-270m / qwen2.5-0.5b):
            smollm2-135m without 38.7 / 10.0 / 24.7, with 33.3 / 26.7 / 24.7; qwen2.5-0.5b
            (source-trained / to smollm2-135m / to gemma-3-270m) without 34.7 / 22.7 / 19.3,
            with 30.0 / 28.7 / 24.7: transfer up on 3 of 4 pairs, the source's own score down.
        control_test: EWT test sentences (spread over the chapter's test) that the random-init
            twins are scored on for ``dp`` / ``pos`` (``re`` / ``ner``: their whole test).
        control_models: targets whose random-init twin (seed 0) is scored.
        zero_shot_models: causal models prompted zero-shot on the ``re`` and ``ner`` test subsets.
        similarity_texts: official-recipe EWT texts (:func:`olacore.texts.similarity_texts`)
            for the order-1 SSIM Hits@1 of each pair, when chapter 03's results are absent.
        workers: extraction and training processes (``None``: one per core).

    Raises:
        ValueError: an unknown task, no seed, a control or zero-shot model that is not a
            model of the chapter, a zero-shot model that is not causal, a non-positive size.
    """

    syntax: ToaSettings = field(default_factory=lambda: toa_settings("default"))
    tasks: tuple[str, ...] = TASKS
    re: TaskSizes = TaskSizes(1000, 150, 100, epochs=20)
    ner: TaskSizes = TaskSizes(200, 60, 30)
    causal: tuple[str, ...] = CAUSAL_ZOO
    encoders: tuple[str, ...] = ENCODER_ZOO
    seeds: tuple[int, ...] = (0,)
    augment: Augmentation | None = Augmentation()
    control_test: int = 40
    control_models: tuple[str, ...] = CAUSAL_ZOO + ENCODER_ZOO
    zero_shot_models: tuple[str, ...] = CAUSAL_ZOO
    similarity_texts: int = 100
    workers: int | None = None

    def __post_init__(self) -> None:
        unknown = [t for t in self.tasks if t not in TASKS]
        if unknown or not self.tasks:
            raise ValueError(f"TransferSettings.tasks: unknown {unknown} (or none); choose from {TASKS}")
        if not self.seeds:
            raise ValueError("TransferSettings.seeds needs at least one seed")
        for name in ("re", "ner"):
            if not isinstance(getattr(self, name), TaskSizes):
                raise ValueError(f"TransferSettings.{name} must be a TaskSizes(train, dev, test); "
                                 f"got {getattr(self, name)!r}")
        if not self.causal + self.encoders:
            raise ValueError("TransferSettings needs at least one model (causal or encoders)")
        both = [m for m in self.causal if m in self.encoders]
        if both:
            raise ValueError(f"TransferSettings: {both} listed both as causal and as encoders; list each once")
        from olacore.zoo import ZOO
        for kind, names in (("causal", self.causal), ("encoder", self.encoders)):
            wrong = [m for m in names if m in ZOO and ZOO[m].kind != kind]
            if wrong:
                raise ValueError(f"TransferSettings: zoo models {wrong} are not of kind {kind!r}; move them "
                                 "to the other list")
        models = self.causal + self.encoders
        for name in ("control_models", "zero_shot_models"):
            missing = [m for m in getattr(self, name) if m not in models]
            if missing:
                raise ValueError(f"TransferSettings.{name}: {missing} are not models of the chapter {list(models)}")
        if any(m not in self.causal for m in self.zero_shot_models):
            raise ValueError(f"TransferSettings.zero_shot_models must be causal LMs (of {list(self.causal)}); "
                             "an encoder cannot be prompted")
        for name in ("control_test", "similarity_texts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"TransferSettings.{name} must be a positive int; got {value!r}")

    @property
    def models(self) -> tuple[str, ...]:
        return self.causal + self.encoders

    def kind_of(self, model: str) -> str:
        """``"causal"`` or ``"encoder"`` (KeyError-free: a model of neither list raises ValueError)."""
        if model in self.causal:
            return "causal"
        if model in self.encoders:
            return "encoder"
        raise ValueError(f"{model!r} is not a model of the chapter {list(self.models)}")

    def as_dict(self) -> dict[str, Any]:
        """JSON-able summary (the chapter's settings table)."""
        return {"tasks": list(self.tasks), "re": dataclasses.asdict(self.re), "ner": dataclasses.asdict(self.ner),
                "ewt": [self.syntax.num_train, self.syntax.num_dev, self.syntax.num_test],
                "causal": list(self.causal), "encoders": list(self.encoders), "seeds": list(self.seeds),
                "augment": dataclasses.asdict(self.augment) if self.augment else None,
                "control_test": self.control_test, "similarity_texts": self.similarity_texts}


_SMOKE_SYNTAX = toa_settings("smoke")
#: The paper's causal models of the RE table (Hugging Face ids).
PAPER_CAUSAL = ("meta-llama/Llama-3.2-3B-Instruct", "Qwen/Qwen2-1.5B-Instruct", "google/gemma-2-2b-it")

_PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(syntax=_SMOKE_SYNTAX, re=TaskSizes(40, 20, 12), ner=TaskSizes(40, 20, 8),
                  causal=("smollm2-135m", "gemma-3-270m"), encoders=("minilm-l6", "mpnet-base"), control_test=10,
                  control_models=("smollm2-135m",), zero_shot_models=("smollm2-135m",), similarity_texts=12),
    "default": dict(),
    # The paper's models (a GPU with a model hub) and splits, three seeds.
    "paper": dict(syntax=toa_settings("paper"), re=TaskSizes(7200, 800, 2717), ner=TaskSizes(3394, 1009, 1287),
                  causal=PAPER_CAUSAL, encoders=PAPER_ENCODERS, control_models=PAPER_CAUSAL + PAPER_ENCODERS,
                  zero_shot_models=PAPER_CAUSAL, seeds=(0, 1, 2), control_test=500, similarity_texts=1000),
}


def transfer_settings(profile: str, **overrides: Any) -> TransferSettings:
    """The transfer settings of ``profile`` (smoke / default / paper), ``overrides`` replacing fields.

    Raises:
        ValueError: unknown profile (lists the known ones) or an invalid override.
    """
    if profile not in _PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(_PROFILES)}")
    return replace(TransferSettings(**_PROFILES[profile]), **overrides)


def task_training(task: str, settings: TransferSettings) -> TrainConfig:
    """How the adapters of ``task`` train: the syntax chapter's training (``settings.syntax.training``),
    with ``re`` / ``ner`` taking their own :attr:`TaskSizes.epochs` where set and
    ``settings.augment`` where it is not ``None``. ``dp`` and ``pos`` always train as the syntax
    chapter, so its DP adapters are this chapter's diagonal.

    Raises:
        ValueError: unknown task.
    """
    if task not in TASKS:
        raise ValueError(f"unknown transfer task {task!r}; choose from {TASKS}")
    sizes = {"re": settings.re, "ner": settings.ner}.get(task)
    if sizes is None:
        return settings.syntax.training
    training = sizes.training(settings.syntax.training)
    return training if settings.augment is None else replace(training, augment=settings.augment)
