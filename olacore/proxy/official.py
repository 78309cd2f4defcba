"""The visual proxy as the official script runs it (``olas_visual_model.py``), each quirk a named switch.

Read from the official code (github.com/jinglin-liang/OLAS; file names are its own):

- ``family_split``: the README trains on four source models of two families and tests on the held-out family's
  two (``--train_model_names`` / ``--test_model_names``); in this zoo each causal model is its own family, so
  the split is leave-one-out there.
- ``augment_before_cleaning``: ``ClassifyDataset.__getitem__`` augments the raw token-level OLA
  (``models/ola_augmentations.py``: fake sinks p 0.3, 1 to 3 columns; noise p 0.15, 0.13 x the row std), then
  removes sinks (``preprocess_ola``, ``models/ola_model.py``, whole-row statistics: no causal flag), then resizes
  to 50 x 50; so fake sinks that reach the row maximum or mean + 3 std are cleaned away again.
- ``raw_inputs``: the cleaned maps enter the network unstandardised.
- ``official_optimiser``: SGD, learning rate 0.007, momentum 0.9, weight decay 5e-4, constant
  (:data:`OFFICIAL_OPTIMISER`); off: the profile's (:class:`olacore.proxy.ProxyConfig`), as the held-out protocol.
- ``frozen_batchnorm``: ``_compute_accuracy`` calls ``model.eval()`` and nothing calls ``model.train()`` again,
  so BatchNorm is frozen from the first evaluation (step 100 of 100k); here after the same fraction of the run
  (:func:`batchnorm_freeze_step`).
- ``reaugment_targets``: the test set is a ``ClassifyDataset`` with ``use_augment=True``: every evaluation sees
  freshly augmented target maps.
- ``max_over_evaluations``: the printed ``best_acc`` is the maximum over every evaluation; the "restore"
  ``model.load_state_dict(best_w)`` is a no-op (``best_w = model.state_dict()`` keeps the live tensors).

Departures: training accuracy is scored on the clean source maps (the official ``_compute_accuracy``: augmented;
the reported number is unaffected). The fake-sink value is the stored ``models/ola_augmentations.py``'s, which
lacks the ``ref_rank1`` / ``ref_rank2`` arguments ``olas_visual_model.py`` passes to ``RandomHightlightColumns``.
Training sizes are the profile's, as in the held-out protocol, so that the two protocols differ only by the quirks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from olacore.alignment import resize_maps
from olacore.augment import VISUAL_PROXY, Augmentation, augment
from olacore.proxy.experiment import channel_set_label, leave_one_out
from olacore.proxy.loop import accuracy, channel_stats, fit, shuffled_batches, standardise
from olacore.proxy.train import ProxyConfig
from olacore.settings import resolve_device
from olacore.sinks import clean_sinks
from olacore.store import TensorStore, code_digest, tensor_digest
from olacore.training import by_value, run_cached

if TYPE_CHECKING:  # pragma: no cover
    from olacore.pipeline import TokenMaps

__all__ = ["OfficialQuirks", "OFFICIAL_OPTIMISER", "BATCHNORM_FREEZE_FRACTION", "batchnorm_freeze_step",
           "official_view", "family_splits", "OfficialRun", "train_official", "reported_accuracy",
           "OfficialProxyJob", "official_proxy_experiment"]

#: The optimiser of the official ``olas_visual_model.py``: SGD, constant learning rate (no scheduler).
OFFICIAL_OPTIMISER = {"lr": 0.007, "momentum": 0.9, "weight_decay": 5e-4, "cosine": False}

#: The fraction of training after which the official ``olas_visual_model.py`` freezes BatchNorm (step 100 of 100k).
BATCHNORM_FREEZE_FRACTION = 100 / 100_000


def batchnorm_freeze_step(iterations: int) -> int:
    """The step after which BatchNorm freezes in a run of ``iterations`` steps: the official fraction
    (:data:`BATCHNORM_FREEZE_FRACTION`) of it, at least 1."""
    return max(1, round(BATCHNORM_FREEZE_FRACTION * iterations))


@dataclass(frozen=True)
class OfficialQuirks:
    """Which choices of the official ``olas_visual_model.py`` a run makes (module docstring); all on = official."""

    family_split: bool = True
    augment_before_cleaning: bool = True
    raw_inputs: bool = True
    official_optimiser: bool = True
    frozen_batchnorm: bool = True
    reaugment_targets: bool = True
    max_over_evaluations: bool = True

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The quirks' names, in the order of the module docstring."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def without(self, *names: str) -> "OfficialQuirks":
        """The same quirks with ``names`` switched off.

        Raises:
            ValueError: a name that is no quirk.
        """
        unknown = [n for n in names if n not in self.names()]
        if unknown:
            raise ValueError(f"no official quirk named {', '.join(map(repr, unknown))}; "
                             f"the quirks are: {', '.join(self.names())}")
        return dataclasses.replace(self, **{n: False for n in names})

    def for_training(self) -> "OfficialQuirks":
        """The quirks that change training, the read-out ones (``reaugment_targets``,
        ``max_over_evaluations``) reset to on: runs that differ only in how they are read share one training."""
        return dataclasses.replace(self, reaugment_targets=True, max_over_evaluations=True)


def official_view(maps: torch.Tensor, causal: bool, size: int, generator: torch.Generator | None,
                  settings: Augmentation | None, before_cleaning: bool = True) -> torch.Tensor:
    """One sample as the official ``ClassifyDataset.__getitem__`` makes it: augment, clean sinks, resize.

    Args:
        maps: ``(C, T, T)`` raw token-level maps of one text.
        size: side of the ``(C, size, size)`` float32 result (official: 50).
        settings: the official augmentation (:data:`olacore.augment.VISUAL_PROXY`), or ``None`` for none.
        before_cleaning: augment the raw maps before cleaning (official), or the cleaned, resized ones after.
    """
    maps = maps.float()
    if settings is not None and before_cleaning:
        maps = augment(maps, causal, settings, generator, stats="row", column_draw="multinomial")
    maps = resize_maps(clean_sinks(maps, causal, stats="row"), size)  # whole-row statistics, as the official
    if settings is not None and not before_cleaning:
        maps = augment(maps, False, settings, generator, stats="row", column_draw="multinomial")
    return maps


def family_splits(names: Sequence[str]) -> list[tuple[list[str], list[str]]]:
    """``[(sources, targets), ...]`` splits of the official proxy, one per model, in the order of ``names``.

    The official README holds out a whole family; in this zoo every model is its own family, so each model in turn
    is the target and every other model a source (leave-one-out).

    Raises:
        ValueError: fewer than two models to split.
    """
    if len(set(names)) < 2:
        raise ValueError(f"need two models (each its own family) to split; got {list(names)}")
    return [(sources, [target]) for sources, target in leave_one_out(names)]


@dataclass
class OfficialRun:
    """Outcome of one run under (a variant of) the official protocol.

    Attributes:
        history: one dict per evaluation: ``step``, ``train_loss`` (mean since the last one), ``test_acc`` (fraction,
            target maps augmented afresh), ``test_acc_clean`` (unaugmented), ``train_acc`` (clean source maps).
        reported: the number the protocol reports (:func:`reported_accuracy`), from step ``best_step``.
    """

    seed: int
    history: list[dict]
    reported: float
    best_step: int
    quirks: OfficialQuirks


def reported_accuracy(history: Sequence[Mapping[str, float]], quirks: OfficialQuirks) -> tuple[float, int]:
    """The number a run reports and its step: from the re-augmented target evaluations (``test_acc``) with
    ``reaugment_targets``, else the clean ones (``test_acc_clean``); their maximum (the official ``best_acc``) with
    ``max_over_evaluations``, else the last one."""
    values = _target_accuracies(history, quirks)
    index = max(range(len(values)), key=values.__getitem__) if quirks.max_over_evaluations else len(values) - 1
    return values[index], int(history[index]["step"])


def _target_accuracies(history: Sequence[Mapping[str, float]], quirks: OfficialQuirks) -> list[float]:
    return [h["test_acc" if quirks.reaugment_targets else "test_acc_clean"] for h in history]


def _views(texts: Sequence[torch.Tensor], causal: bool, size: int, generator: torch.Generator | None,
           settings: Augmentation | None, before: bool) -> torch.Tensor:
    return torch.stack([official_view(t, causal, size, generator, settings, before) for t in texts])


def train_official(
    sources: Sequence[Sequence[torch.Tensor]],
    targets: Sequence[Sequence[torch.Tensor]],
    causal: bool,
    config: ProxyConfig,
    quirks: OfficialQuirks = OfficialQuirks(),
    *,
    size: int = 50,
    augment: Augmentation = VISUAL_PROXY,
    seed: int = 0,
    device: str | torch.device | None = None,
    progress: bool = True,
) -> OfficialRun:
    """Train the visual proxy as the official ``olas_visual_model.py`` does, each of ``quirks`` on or off.

    Text ``i`` of every model is class ``i``. Batches are drawn from all source samples, reshuffled every epoch (the
    last one may be smaller, as a ``DataLoader`` without ``drop_last``). Every ``config.eval_every`` steps all target
    samples (pooled) are scored augmented afresh and clean, and the clean source maps too (the evaluations draw from
    a generator of their own: they never change training). ``augment`` is applied per sample (``config.augment`` is
    not used); ``config``'s SGD settings count only without ``official_optimiser``.

    Args:
        sources: per source model, the raw token-level ``(C, T_i, T_i)`` maps of its texts.
        targets: per target model, the same for the same texts.
        seed: seeds the network, the batches and every augmentation.
        device: default CUDA if available, else CPU.
    """
    num_classes = len(sources[0])
    device = resolve_device(device)
    gen = torch.Generator().manual_seed(seed)
    train_maps = [m for model in sources for m in model]
    train_y = torch.arange(num_classes).repeat(len(sources))
    test_maps = [m for model in targets for m in model]
    test_y = torch.arange(num_classes).repeat(len(targets))
    before = quirks.augment_before_cleaning
    clean_train = _views(train_maps, causal, size, None, None, True)
    if quirks.raw_inputs:
        mean, std = torch.zeros(1, clean_train.shape[1], 1, 1), torch.ones(1, clean_train.shape[1], 1, 1)
    else:  # standardised with the training maps' statistics, as the held-out protocol does
        mean, std = channel_stats(clean_train)
    clean_test = standardise(_views(test_maps, causal, size, None, None, True), mean, std)
    eval_gen = torch.Generator().manual_seed(1_000_003 + seed)
    clean_train = standardise(clean_train, mean, std)

    def batches():
        for index in shuffled_batches(len(train_maps), config.batch_size, gen, drop_last=False):
            batch = _views([train_maps[i] for i in index], causal, size, gen, augment, before)
            yield standardise(batch, mean, std).to(device), train_y[index].to(device)

    def evaluate(step: int, model: torch.nn.Module, _: float) -> dict:
        augmented = standardise(_views(test_maps, causal, size, eval_gen, augment, before), mean, std)
        return {"test_acc": accuracy(model, augmented, test_y), "test_acc_clean": accuracy(model, clean_test, test_y),
                "train_acc": accuracy(model, clean_train, train_y)}  # each in eval mode, the mode restored after

    _, history = fit(batches(), evaluate, in_channels=clean_train.shape[1], num_classes=num_classes,
                     width=config.width, sgd=OFFICIAL_OPTIMISER if quirks.official_optimiser else config.sgd(),
                     iterations=config.iterations, eval_every=config.eval_every, seed=seed, device=device,
                     freeze_batchnorm_after=batchnorm_freeze_step(config.iterations) if quirks.frozen_batchnorm else None,
                     progress=progress, desc="official proxy")
    reported, best_step = reported_accuracy(history, quirks)
    return OfficialRun(seed=seed, history=history, reported=reported, best_step=best_step, quirks=quirks)


# ------------------------------------------------------------------ cached runs (chapters 04 and a1)

@dataclass
class OfficialProxyJob:
    """One official-protocol run (a :class:`olacore.training.TrainingJob`); maps travel as numpy arrays.

    Attributes:
        sources, targets: per model, one raw token-level ``(C, T_i, T_i)`` array per text.
        quirks: in the key only those of :meth:`OfficialQuirks.for_training`, less ``family_split`` (which acts
            through the sources and targets the key holds).
    """

    sources: list[list[np.ndarray]]
    targets: list[list[np.ndarray]]
    causal: bool
    config: ProxyConfig
    quirks: OfficialQuirks
    size: int
    augment: Augmentation
    seed: int
    device: str

    def key(self) -> str:
        digests = lambda models: [[tensor_digest(m) for m in model] for model in models]  # noqa: E731
        return TensorStore.key(
            kind="official-proxy-run", code=code_digest(__name__), sources=digests(self.sources),
            targets=digests(self.targets), causal=self.causal, config=dataclasses.asdict(self.config),
            quirks=dataclasses.asdict(dataclasses.replace(self.quirks.for_training(), family_split=True)),
            size=self.size, augment=dataclasses.asdict(self.augment),
            seed=self.seed, device=self.device,
        )

    def train(self):
        tensors = lambda models: [[torch.as_tensor(m) for m in model] for model in models]  # noqa: E731
        run = train_official(tensors(self.sources), tensors(self.targets), self.causal, self.config,
                             self.quirks.for_training(), size=self.size, augment=self.augment, seed=self.seed,
                             device=self.device, progress=False)
        record = {"seed": run.seed, "history": run.history}
        return {"test_acc": torch.tensor([h["test_acc"] for h in run.history])}, record


def _arrays(items: Sequence["TokenMaps"], channels: Sequence[str]) -> list[np.ndarray]:
    picks = [items[0].channels.index(c) for c in channels]
    return by_value([item.maps[picks].float() for item in items])


def official_proxy_experiment(
    token_maps: Mapping[str, Sequence["TokenMaps"]],
    channels: Sequence[str],
    config: ProxyConfig,
    seeds: Sequence[int],
    variants: Mapping[str, OfficialQuirks],
    *,
    size: int = 50,
    augment: Augmentation = VISUAL_PROXY,
    device: str | torch.device | None = None,
    workers: int = 1,
    progress: bool = True,
    store: TensorStore | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Every variant, split and seed of the official proxy protocol, cached (chapter 03).

    Args:
        token_maps: model name -> its token-level maps (:func:`olacore.pipeline.token_maps`) of the same texts (text
            ``i`` is class ``i``), all causal or all bidirectional.
        config: :class:`olacore.proxy.ProxyConfig` (its ``augment`` is not used).
        variants: label -> :class:`OfficialQuirks` (e.g. ``{"official": OfficialQuirks(), ...}``).

    Returns:
        ``(runs, histories)``: one row per run (``variant, channels, sources, target, seed, reported, best_step,
        last_acc, mean_acc, train_acc, evaluations``; fractions, from the evaluations the variant's quirks pick) and
        ``(variant, target, seed) -> history`` (``target``: the target models joined by " + "). Variants that differ
        only in read-out quirks share their training runs.

    Raises:
        ValueError: models of both kinds, a channel the maps lack, or as :func:`train_official`.
    """
    names = list(token_maps)
    kinds = {items[0].causal for items in token_maps.values()}
    if len(kinds) != 1:
        raise ValueError("the official protocol never mixes causal models and encoders; give one kind")
    missing = [c for c in channels if c not in token_maps[names[0]][0].channels]
    if missing:
        raise ValueError(f"the token maps lack channels {missing}; they hold {token_maps[names[0]][0].channels}")
    causal = kinds.pop()
    arrays = {name: _arrays(items, channels) for name, items in token_maps.items()}
    device_type = resolve_device(device).type
    labels, jobs = [], []
    for variant, quirks in variants.items():
        for sources, targets in family_splits(names):
            for seed in seeds:
                labels.append((variant, sources, targets, seed))
                jobs.append(OfficialProxyJob([arrays[s] for s in sources], [arrays[t] for t in targets], causal,
                                             config, quirks, size, augment, seed, device_type))
    results = run_cached(jobs, workers=workers, store=store, progress=progress, desc="official proxy runs")
    rows, histories = [], {}
    for job, (variant, sources, targets, seed), (_, record) in zip(jobs, labels, results):
        reported, best_step = reported_accuracy(record["history"], job.quirks)
        accs = _target_accuracies(record["history"], job.quirks)
        target = " + ".join(targets)
        rows.append({"variant": variant, "channels": channel_set_label(channels), "sources": " + ".join(sources),
                     "target": target, "seed": seed, "reported": reported, "best_step": best_step,
                     "last_acc": accs[-1], "mean_acc": float(np.mean(accs)),
                     "train_acc": record["history"][-1]["train_acc"], "evaluations": len(accs)})
        histories[(variant, target, seed)] = record["history"]
    return pd.DataFrame(rows), histories
