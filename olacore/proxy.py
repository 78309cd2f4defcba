"""The visual proxy of OLAS (paper section 4.1): a ResNet-18 learns to name each text (one class) from the OLA maps
of *source* models and is tested on a *target* model's maps. Maps are ``(N, C, S, S)`` per model.

Two protocols train through one loop (:func:`fit`): the held-out one (:func:`train_proxy`: checkpoint chosen on
held-out source maps, target scored once) and the official ``olas_visual_model.py`` (github.com/jinglin-liang/OLAS)
with each of its quirks a switch (:func:`train_official`, :class:`OfficialQuirks`). Runs are cached
(:class:`ProxyJob`, :class:`OfficialProxyJob`).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence, TYPE_CHECKING

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.resnet import BasicBlock, ResNet

from olacore.augment import VISUAL_PROXY, Augmentation, BatchAugmentation, augment, augment_batch
from olacore.channels import label
from olacore.maps import Maps, clean_sinks
from olacore.settings import Bool, NonNegativeFloat, PositiveFloat, PositiveInt, resolve_device, settings_class
from olacore.store import TensorStore, code_digest, tensor_digest
from olacore.texts import resize_maps
from olacore.results import progress as progress_bar
from olacore.training import by_value, run_cached

if TYPE_CHECKING:
    from olacore.pipeline import TokenMaps

__all__ = ["make_resnet18", "fit", "ProxyConfig", "ProxyRun", "split_sources", "train_proxy", "accuracy", "ProxyJob",
           "leave_one_out", "channel_set_label", "proxy_experiment", "OfficialQuirks", "OFFICIAL_OPTIMISER",
           "BATCHNORM_FREEZE_FRACTION", "batchnorm_freeze_step", "official_view", "family_splits", "train_official",
           "OfficialProxyJob", "official_proxy_experiment", "shuffled_batches", "channel_stats", "standardise",
           "reported_accuracy"]


# ------------------------------------------------------------------ the network and its training loop

class _NarrowResNet18(ResNet):
    """torchvision's ResNet-18 with every stage's channels scaled by ``width / 64``."""

    def __init__(self, width: int, num_classes: int) -> None:
        object.__setattr__(self, "_width", width)
        super().__init__(BasicBlock, [2, 2, 2, 2], num_classes=num_classes)
        self.fc = nn.Linear(8 * width, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):  # noqa: D401 - torchvision hook
        if planes == 64:  # first stage: the stem gives `width` channels, not 64
            self.inplanes = self._width
        return super()._make_layer(block, planes * self._width // 64, blocks, stride, dilate)


def make_resnet18(in_channels: int, num_classes: int, width: int = 64) -> nn.Module:
    """CIFAR-style ResNet-18 (3x3 stride-1 stem, no max-pool, not pretrained): ``(B, in_channels, S, S)`` ->
    ``(B, num_classes)`` logits; ``width`` (a multiple of 4) scales the stages (64: ResNet-18 exactly)."""
    if width == 64:
        net = torchvision.models.resnet18(weights=None, num_classes=num_classes)
    else:
        net = _NarrowResNet18(width, num_classes)
    net.conv1 = nn.Conv2d(in_channels, width, kernel_size=3, stride=1, padding=1, bias=False)
    net.bn1 = nn.BatchNorm2d(width)
    net.maxpool = nn.Identity()
    return net


def shuffled_batches(n: int, batch_size: int, generator: torch.Generator, drop_last: bool) -> Iterator[torch.Tensor]:
    """Endless ``(B,)`` index batches over ``n`` items, reshuffled each epoch; ``drop_last`` skips the smaller last."""
    order, cursor = torch.randperm(n, generator=generator), 0
    while True:
        if (cursor + batch_size > n) if drop_last else (cursor >= n):
            order, cursor = torch.randperm(n, generator=generator), 0
        yield order[cursor : cursor + batch_size]
        cursor += batch_size


def fit(batches: Iterator[tuple[torch.Tensor, torch.Tensor]], evaluate: Callable[[int, nn.Module, float], dict], *,
        in_channels: int, num_classes: int, width: int, sgd: Mapping[str, float], iterations: int, eval_every: int,
        seed: int, device: torch.device, evaluate_last: bool = False, freeze_batchnorm_after: int | None = None,
        progress: bool = True, desc: str = "proxy") -> tuple[nn.Module, list[dict]]:
    """Train a fresh :func:`make_resnet18` (initialised from ``seed``) by SGD on cross-entropy: ``(model, history)``.

    Args:
        batches: ``((B, C, S, S) inputs, (B,) labels)`` on ``device``, one per step.
        evaluate: ``(step, model, train_acc) -> dict`` every ``eval_every`` steps (and the last with
            ``evaluate_last``); history entries are ``{"step", "train_loss", **dict}``.
        sgd: ``lr, momentum, weight_decay, cosine`` (cosine decay to zero over ``iterations``).
        freeze_batchnorm_after: the step after which the network stays in eval mode.
    """
    torch.manual_seed(seed)
    model = make_resnet18(in_channels, num_classes, width).to(device)
    optimiser = torch.optim.SGD(model.parameters(), lr=sgd["lr"], momentum=sgd["momentum"],
                                weight_decay=sgd["weight_decay"])
    scheduler = (torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: 0.5 * (1 + math.cos(math.pi * step / iterations))) if sgd["cosine"] else None)
    history: list[dict] = []
    losses, seen, hits = [], 0, 0
    bar = progress_bar(range(1, iterations + 1), enabled=progress, desc=desc, leave=False)
    model.train()
    for step, (inputs, labels) in zip(bar, batches):
        logits = model(inputs)
        loss = F.cross_entropy(logits, labels)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
        seen += labels.numel()
        hits += int((logits.argmax(1) == labels).sum())
        if step == freeze_batchnorm_after:  # olas_visual_model.py leaves the network in eval mode for good
            model.eval()
        if step % eval_every == 0 or (evaluate_last and step == iterations):
            history.append({"step": step, "train_loss": sum(losses) / len(losses), **evaluate(step, model, hits / seen)})
            bar.set_postfix({k: f"{v:.3f}" for k, v in history[-1].items() if k != "step"})
            losses, seen, hits = [], 0, 0
    return model, history


@torch.no_grad()
def accuracy(model: nn.Module, maps: torch.Tensor, labels: torch.Tensor, batch_size: int = 256) -> float:
    """Top-1 accuracy (fraction) on ``(N, C, S, S)`` maps with ``(N,)`` labels, in eval mode."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    correct = 0
    for start in range(0, maps.shape[0], batch_size):
        logits = model(maps[start : start + batch_size].to(device))
        correct += int((logits.argmax(1).cpu() == labels[start : start + batch_size].cpu()).sum())
    model.train(was_training)
    return correct / max(maps.shape[0], 1)


def channel_stats(maps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(1, C, 1, 1)`` mean and standard deviation (at least 1e-12) of ``(N, C, S, S)`` training maps."""
    return maps.mean(dim=(0, 2, 3), keepdim=True), maps.std(dim=(0, 2, 3), keepdim=True).clamp_min(1e-12)


def standardise(maps: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """``(maps - mean) / std``."""
    return (maps - mean) / std


# ------------------------------------------------------------------ the held-out protocol (chapter 04)

#: The validation view of a run with one source model.
_VALIDATION_VIEW = BatchAugmentation(noise_p=1.0, noise_std_ratio=0.3, sink_p=0.5, sink_columns=3)


def split_sources(source_maps: Sequence[torch.Tensor],
                  seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, str]:
    """Training and validation sets from the source models' ``(N, C, S, S)`` maps (never the target).

    With ``S >= 2`` sources the map of text ``i`` from source ``i mod S`` is held out; with one, validation is a
    fixed augmented view of its maps (seeded by ``seed``). Returns ``(train_x, train_y, val_x, val_y, how)``,
    ``how`` the split in words.
    """
    n = source_maps[0].shape[0]
    labels = torch.arange(n)
    if len(source_maps) == 1:
        maps = source_maps[0]
        gen = torch.Generator(device=maps.device).manual_seed(10_000 + seed)
        val = augment_batch(maps, _VALIDATION_VIEW, gen)
        return maps, labels, val, labels.clone(), "one source model: validation is a fixed augmented view of its maps"
    num_sources = len(source_maps)
    held = labels % num_sources  # text i validated on source i mod S
    train_x, train_y, val_x, val_y = [], [], [], []
    for s, maps in enumerate(source_maps):
        keep = held != s
        train_x.append(maps[keep])
        train_y.append(labels[keep])
        val_x.append(maps[~keep])
        val_y.append(labels[~keep])
    how = f"{num_sources} source models: the map of text i from source (i mod {num_sources}) is held out for validation"
    return torch.cat(train_x), torch.cat(train_y), torch.cat(val_x), torch.cat(val_y), how


@settings_class
class ProxyConfig:
    """Training settings of the visual proxy (paper: SGD 0.007, momentum 0.9, wd 5e-4, batch 20, 100k steps).

    ``width``: channels of the first stage (64: ResNet-18); ``eval_every``: steps between evaluations; ``cosine``:
    decay the rate to zero (paper: constant); ``augment``: the held-out protocol's batch augmentation.

    Raises:
        olacore.settings.SettingsError: (a ValueError naming the field) non-positive counts, width or rate; a
            width not a multiple of 4; negative momentum or decay.
    """

    iterations: PositiveInt = 100_000
    batch_size: PositiveInt = 20
    lr: PositiveFloat = 0.007
    momentum: NonNegativeFloat = 0.9
    weight_decay: NonNegativeFloat = 5e-4
    width: PositiveInt = 64
    eval_every: PositiveInt = 100
    augment: BatchAugmentation = field(default_factory=BatchAugmentation)
    cosine: Bool = False

    def __post_init__(self) -> None:
        if self.width % 4:
            raise ValueError(f"ProxyConfig.width must be a multiple of 4; got {self.width}")

    def sgd(self) -> dict:
        """The optimiser settings :func:`fit` takes."""
        return {"lr": self.lr, "momentum": self.momentum, "weight_decay": self.weight_decay, "cosine": self.cosine}


@dataclass
class ProxyRun:
    """Outcome of one held-out proxy run (fractions): ``history`` (``step, train_loss, train_acc, val_acc`` per
    evaluation), the kept ``best_step`` (best validation), ``test_acc`` of that checkpoint (``None`` without a
    target), the network (eval mode) and its ``(1, C, 1, 1)`` input ``mean``, ``std``."""

    seed: int
    history: list[dict]
    best_step: int
    val_acc: float
    test_acc: float | None
    validation: str
    model: nn.Module
    mean: torch.Tensor
    std: torch.Tensor

    def evaluate(self, maps: torch.Tensor) -> float:
        """Accuracy (fraction) on another model's ``(N, C, S, S)`` maps (text ``i`` = class ``i``)."""
        return accuracy(self.model, standardise(maps, self.mean, self.std), torch.arange(maps.shape[0]))


def train_proxy(
    source_maps: Sequence[torch.Tensor],
    target_maps: torch.Tensor | None,
    config: ProxyConfig,
    *,
    seed: int = 0,
    device: str | torch.device | None = None,
    progress: bool = True,
) -> ProxyRun:
    """The held-out protocol: train on the source models' maps, choose the checkpoint on held-out source maps
    (:func:`split_sources`), test once on the target's.

    Args:
        source_maps: one ``(N, C, S, S)`` tensor per source model (text ``i`` is class ``i``).
        target_maps: ``(N, C, S, S)`` maps of the target model, or ``None``.
        seed: seeds initialisation, batch order and augmentation.
        device: default CUDA if available.

    Raises:
        ValueError: the target maps' shape differs from the sources'.
    """
    device = resolve_device(device)
    train_x, train_y, val_x, val_y, how = split_sources(source_maps, seed=seed)
    if target_maps is not None and tuple(target_maps.shape[1:]) != tuple(train_x.shape[1:]):
        raise ValueError(f"target maps {tuple(target_maps.shape)} do not match source maps {tuple(train_x.shape)}")
    mean, std = channel_stats(train_x)  # maps hold ~1/S values
    gen = torch.Generator().manual_seed(seed)
    train_x_dev, train_y_dev, mean_dev, std_dev = (t.to(device) for t in (train_x, train_y, mean, std))

    def batches():
        for index in shuffled_batches(train_x.shape[0], config.batch_size, gen, drop_last=True):
            index = index.to(device)
            batch = augment_batch(train_x_dev[index], config.augment, _device_generator(gen, device))
            yield standardise(batch, mean_dev, std_dev), train_y_dev[index]

    best = _BestOnValidation(standardise(val_x, mean, std), val_y)
    model, history = fit(batches(), best, in_channels=train_x.shape[1], num_classes=source_maps[0].shape[0],
                         width=config.width, sgd=config.sgd(), iterations=config.iterations, eval_every=config.eval_every,
                         seed=seed, device=device, evaluate_last=True, progress=progress, desc="proxy")
    model.load_state_dict(best.state)
    run = ProxyRun(seed=seed, history=history, best_step=best.step, val_acc=best.val_acc, test_acc=None,
                   validation=how, model=model.eval(), mean=mean, std=std)
    if target_maps is not None:
        run.test_acc = run.evaluate(target_maps)
    return run


class _BestOnValidation:
    """Validation accuracy at each evaluation, keeping the best weights."""

    def __init__(self, maps: torch.Tensor, labels: torch.Tensor) -> None:
        self.maps, self.labels = maps, labels
        self.val_acc, self.step, self.state = -1.0, 0, None

    def __call__(self, step: int, model: nn.Module, train_acc: float) -> dict:
        val_acc = accuracy(model, self.maps, self.labels)
        if val_acc > self.val_acc:
            self.val_acc, self.step, self.state = val_acc, step, copy.deepcopy(model.state_dict())
        return {"train_acc": train_acc, "val_acc": val_acc}


def _device_generator(cpu_gen: torch.Generator, device: torch.device) -> torch.Generator:
    """A generator on ``device`` seeded from ``cpu_gen``."""
    if device.type == "cpu":
        return cpu_gen
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=cpu_gen))
    return torch.Generator(device=device).manual_seed(seed)


@dataclass
class ProxyJob:
    """One held-out proxy run (a :class:`olacore.training.TrainingJob`); maps travel as numpy arrays."""

    sources: list[np.ndarray]
    target: np.ndarray | None
    config: ProxyConfig
    seed: int
    device: str

    @classmethod
    def of(cls, sources: Sequence[torch.Tensor], target: torch.Tensor | None, config: ProxyConfig, seed: int,
           device: str | torch.device | None = None) -> "ProxyJob":
        """A job from tensors."""
        return cls(by_value(sources), None if target is None else by_value([target])[0], config, seed,
                   resolve_device(device).type)

    def key(self) -> str:
        return TensorStore.key(
            kind="proxy-run", code=code_digest(__name__), sources=[tensor_digest(m) for m in self.sources],
            target=None if self.target is None else tensor_digest(self.target),
            config=dataclasses.asdict(self.config), seed=self.seed, device=self.device,
        )

    def train(self):
        run = train_proxy([torch.as_tensor(m) for m in self.sources],
                          None if self.target is None else torch.as_tensor(self.target),
                          self.config, seed=self.seed, device=self.device, progress=False)
        weights = {f"model.{name}": t for name, t in run.model.state_dict().items()}
        record = {"seed": run.seed, "history": run.history, "best_step": run.best_step, "val_acc": run.val_acc,
                  "test_acc": run.test_acc, "validation": run.validation}
        return {**weights, "mean": run.mean, "std": run.std}, record

    def rebuild(self, tensors: dict[str, torch.Tensor], record: dict[str, Any]) -> "ProxyRun":
        """The :class:`ProxyRun` of a stored result."""
        channels, classes = self.sources[0].shape[1], self.sources[0].shape[0]
        model = make_resnet18(channels, classes, self.config.width)
        model.load_state_dict({name[len("model."):]: t for name, t in tensors.items() if name.startswith("model.")})
        return ProxyRun(model=model.to(self.device).eval(), mean=tensors["mean"], std=tensors["std"], **record)


def leave_one_out(names: Sequence[str]) -> list[tuple[list[str], str]]:
    """``(sources, target)`` splits: each model in turn is the target, the others the sources."""
    return [([n for n in names if n != target], target) for target in names]


def channel_set_label(names: Sequence[str]) -> str:
    """Row label of a set of channels: ``("order1", "order2") -> "order 1 + order 2"``."""
    return " + ".join(label(n) for n in names)


def proxy_experiment(
    maps: Mapping[str, Maps],
    splits: Sequence[tuple[Sequence[str], str]],
    channel_sets: Sequence[Sequence[str]],
    config: ProxyConfig,
    seeds: Sequence[int],
    *,
    device: str | torch.device | None = None,
    workers: int = 1,
    progress: bool = True,
    store: TensorStore | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Every split, channel set and seed of the held-out proxy (paper section 4.1, Table 1), cached.

    Args:
        maps: model name -> resized :class:`olacore.maps.Maps` holding every channel any set uses.
        splits: ``(source names, target name)`` pairs, e.g. from :func:`leave_one_out`.
        channel_sets: channel names per run, e.g. ``[("order1",), ("order1", "order2")]``.

    Returns:
        ``(runs, histories)``: one row per run (``channels`` (label), ``sources, target, seed, best_step, val_acc,
        test_acc, validation``) and ``(channels label, target, seed) -> history``.

    Raises:
        ValueError: ``workers < 1``, a channel the maps lack, or as :func:`train_proxy`.
    """
    used = {name for sources, target in splits for name in (*sources, target)}
    stacked = {(name, tuple(chans)): maps[name].select(*chans).stack() for name in used for chans in channel_sets}
    labels = [(tuple(chans), sources, target, seed) for sources, target in splits for chans in channel_sets
              for seed in seeds]
    jobs = [ProxyJob.of([stacked[(s, chans)] for s in sources], stacked[(target, chans)], config, seed, device)
            for chans, sources, target, seed in labels]
    results = run_cached(jobs, workers=workers, store=store, progress=progress, desc="proxy runs")
    rows, histories = [], {}
    for (chans, sources, target, seed), (_, record) in zip(labels, results):
        label = channel_set_label(chans)
        rows.append({"channels": label, "sources": " + ".join(sources), "target": target, "seed": seed,
                     "best_step": record["best_step"], "val_acc": record["val_acc"], "test_acc": record["test_acc"],
                     "validation": record["validation"]})
        histories[(label, target, seed)] = record["history"]
    return pd.DataFrame(rows), histories


# ------------------------------------------------------------------ the official protocol (chapters 04 and a1)

#: The optimiser of the official ``olas_visual_model.py`` (constant rate).
OFFICIAL_OPTIMISER = {"lr": 0.007, "momentum": 0.9, "weight_decay": 5e-4, "cosine": False}

#: The official BatchNorm freeze: step 100 of 100k.
BATCHNORM_FREEZE_FRACTION = 100 / 100_000


def batchnorm_freeze_step(iterations: int) -> int:
    """The step after which BatchNorm freezes: :data:`BATCHNORM_FREEZE_FRACTION` of ``iterations``, at least 1."""
    return max(1, round(BATCHNORM_FREEZE_FRACTION * iterations))


@dataclass(frozen=True)
class OfficialQuirks:
    """The choices of the official ``olas_visual_model.py``, each a switch; all on = official.

    - ``family_split``: train on some models, test on a held-out family (here each model is its own family).
    - ``augment_before_cleaning``: ``ClassifyDataset.__getitem__`` augments the raw token-level maps, then cleans
      sinks (whole-row statistics), then resizes to 50 x 50 (off: augments after).
    - ``raw_inputs``: maps enter the network unstandardised.
    - ``official_optimiser``: :data:`OFFICIAL_OPTIMISER` (off: the profile's :class:`ProxyConfig`).
    - ``frozen_batchnorm``: ``_compute_accuracy`` calls ``model.eval()`` and nothing calls ``model.train()``
      again: BatchNorm frozen from the first evaluation (:func:`batchnorm_freeze_step`).
    - ``reaugment_targets``: every evaluation sees freshly augmented target maps.
    - ``max_over_evaluations``: the reported ``best_acc`` is the maximum over evaluations of the target.

    Departures: training accuracy is scored on clean source maps; the fake-sink value is the stored
    ``models/ola_augmentations.py``'s (without the ``ref_rank1`` / ``ref_rank2`` the script passes); training
    sizes are the profile's.
    """

    family_split: bool = True
    augment_before_cleaning: bool = True
    raw_inputs: bool = True
    official_optimiser: bool = True
    frozen_batchnorm: bool = True
    reaugment_targets: bool = True
    max_over_evaluations: bool = True

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The quirks' names."""
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
        """The read-out quirks reset to on: runs that differ only in how they are read share one training."""
        return dataclasses.replace(self, reaugment_targets=True, max_over_evaluations=True)


def official_view(maps: torch.Tensor, causal: bool, size: int, generator: torch.Generator | None,
                  settings: Augmentation | None, before_cleaning: bool = True) -> torch.Tensor:
    """One sample as the official ``ClassifyDataset.__getitem__`` makes it: ``(C, T, T)`` raw maps augmented
    (``settings``, or ``None``), sinks cleaned, resized to ``(C, size, size)``; ``before_cleaning=False`` augments
    the cleaned, resized maps instead."""
    maps = maps.float()
    if settings is not None and before_cleaning:
        maps = augment(maps, causal, settings, generator, stats="row", column_draw="multinomial")
    maps = resize_maps(clean_sinks(maps, causal, stats="row"), size)  # whole-row statistics, as the official
    if settings is not None and not before_cleaning:
        maps = augment(maps, False, settings, generator, stats="row", column_draw="multinomial")
    return maps


def family_splits(names: Sequence[str]) -> list[tuple[list[str], list[str]]]:
    """``[(sources, targets), ...]`` of the official proxy: each model its own family, so leave-one-out.

    Raises:
        ValueError: fewer than two models to split.
    """
    if len(set(names)) < 2:
        raise ValueError(f"need two models (each its own family) to split; got {list(names)}")
    return [(sources, [target]) for sources, target in leave_one_out(names)]


def reported_accuracy(history: Sequence[Mapping[str, float]], quirks: OfficialQuirks) -> tuple[float, int]:
    """The number a run reports and its step, as ``reaugment_targets`` and ``max_over_evaluations`` pick it."""
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
) -> list[dict]:
    """Train the visual proxy as the official ``olas_visual_model.py`` does, each of ``quirks`` on or off: the
    history (``step, train_loss, test_acc`` (targets augmented afresh), ``test_acc_clean``, ``train_acc`` per
    evaluation), which :func:`reported_accuracy` reads.

    Text ``i`` of every model is class ``i``; evaluations draw from a generator of their own. ``augment`` applies
    per sample (``config.augment`` is not used); ``config``'s SGD settings count only without ``official_optimiser``.

    Args:
        sources: per source model, the raw token-level ``(C, T_i, T_i)`` maps of its texts.
        targets: per target model, the same for the same texts.
        seed: seeds the network, the batches and every augmentation.
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
    return history


@dataclass
class OfficialProxyJob:
    """One official-protocol run (a :class:`olacore.training.TrainingJob`); ``sources``, ``targets``: per model,
    one raw ``(C, T_i, T_i)`` array per text. Only the training quirks enter the key."""

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
        history = train_official(tensors(self.sources), tensors(self.targets), self.causal, self.config,
                                 self.quirks.for_training(), size=self.size, augment=self.augment, seed=self.seed,
                                 device=self.device, progress=False)
        return {"test_acc": torch.tensor([h["test_acc"] for h in history])}, {"seed": self.seed, "history": history}


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
    device: str | torch.device | None = None,
    workers: int = 1,
    progress: bool = True,
    store: TensorStore | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Every variant, split and seed of the official proxy protocol (augmented as :data:`VISUAL_PROXY`), cached.

    Args:
        token_maps: model name -> its token-level maps of the same texts, all causal or all encoders.
        config: :class:`ProxyConfig` (its ``augment`` is not used).
        variants: label -> :class:`OfficialQuirks` (e.g. ``{"official": OfficialQuirks(), ...}``).

    Returns:
        ``(runs, histories)``: one row per run (``variant, channels, sources, target, seed, reported, best_step,
        last_acc, mean_acc, train_acc, evaluations``; fractions) and ``(variant, target, seed) -> history``.

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
                                             config, quirks, size, VISUAL_PROXY, seed, device_type))
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
