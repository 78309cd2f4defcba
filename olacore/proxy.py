"""The visual proxy of OLAS: a classifier of OLA images trained on some models, tested on another.

Paper section 4.1: each similarity text is one class; a CIFAR-style ResNet-18 (3x3 stride-1
stem, no max-pool, not pretrained, one input channel per order used) learns to tell the
texts apart from the OLA maps of the *source* models, and is tested on the maps of a
*target* model it never saw. High target accuracy means the maps of different models
share what identifies a text.

Where we depart from the official script (and why):

- The official script evaluates the target every 100 steps and keeps the best target
  accuracy (it even restores the best-on-target weights). Here the checkpoint is chosen on
  **held-out source maps** and the target is evaluated **once**, for every seed.
  Validation split (:func:`split_sources`): with two or more source models, the map of
  text ``i`` from source ``i mod S`` is held out, so every class keeps ``S - 1`` training
  maps, each source model contributes to training, and validation asks the same question
  as the test (recognise a text in a model not seen for that text). With one source
  model no such split exists; validation then uses one fixed augmented view of the
  source maps (which only detects divergence, and says so in :class:`ProxyRun`).
- ``width`` scales the channels of every ResNet stage (64 = torchvision's ResNet-18);
  the CPU profile uses a narrower net and far fewer iterations.

A finished run is kept on disk (:func:`cached_train_proxy`, keyed by the bytes of its maps,
the whole :class:`ProxyConfig`, the seed and the device type), so a re-executed chapter
reads its runs back instead of training again; :func:`proxy_experiment` spreads the runs it
still has to train over worker processes.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.resnet import BasicBlock, ResNet

from olacore.store import TensorStore, tensor_digest
from olacore.timing import progress as progress_bar
from olacore.training import by_value, run_in_processes

__all__ = [
    "Augment",
    "ProxyConfig",
    "ProxyRun",
    "make_resnet18",
    "augment_maps",
    "split_sources",
    "train_proxy",
    "cached_train_proxy",
    "accuracy",
    "leave_one_out",
    "proxy_experiment",
]


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
    """CIFAR-style ResNet-18 for OLA images (paper section 4.1), randomly initialised.

    torchvision's ``resnet18(weights=None)`` with the stem replaced by a 3x3 stride-1
    convolution taking ``in_channels`` maps and the max-pool removed. ``width`` scales the
    four stages' channels (``width, 2w, 4w, 8w``); ``width=64`` is exactly ResNet-18
    (11.2 M parameters for 1000 classes).

    Args:
        in_channels: channels of the input image (number of orders used).
        num_classes: number of texts.
        width: channels of the first stage; must be a positive multiple of 4 (for 64 the
            torchvision builder itself is used).

    Returns:
        ``nn.Module`` mapping ``(B, in_channels, S, S)`` float32 to ``(B, num_classes)`` logits.

    Raises:
        ValueError: non-positive sizes.
    """
    if in_channels <= 0 or num_classes <= 0 or width <= 0 or width % 4:
        raise ValueError(f"need positive in_channels, num_classes and a width divisible by 4; got {in_channels}, {num_classes}, {width}")
    if width == 64:
        net = torchvision.models.resnet18(weights=None, num_classes=num_classes)
    else:
        net = _NarrowResNet18(width, num_classes)
    net.conv1 = nn.Conv2d(in_channels, width, kernel_size=3, stride=1, padding=1, bias=False)
    net.bn1 = nn.BatchNorm2d(width)
    net.maxpool = nn.Identity()
    return net


@dataclass(frozen=True)
class Augment:
    """The paper's OLA augmentations (official ``ola_augmentations.py``), each optional.

    Attributes:
        noise_p: probability per map of adding Gaussian noise ...
        noise_std_ratio: ... of standard deviation ``ratio x`` the row's std (official: 0.15, 0.13).
        sink_p: probability per map of highlighting fake sink columns ...
        sink_columns: ... up to this many random key columns raised to the row maximum
            (official: p 0.3, 1 to 3 columns).
        temperature: ``(low, high)``: rows are re-sharpened as ``p^(1/tau)`` (renormalised)
            with ``tau`` uniform in the range; ``None`` turns it off.
    """

    noise_p: float = 0.15
    noise_std_ratio: float = 0.13
    sink_p: float = 0.3
    sink_columns: int = 3
    temperature: tuple[float, float] | None = None

    @classmethod
    def none(cls) -> "Augment":
        """No augmentation at all."""
        return cls(noise_p=0.0, sink_p=0.0, temperature=None)


def augment_maps(maps: torch.Tensor, augment: Augment, generator: torch.Generator | None = None) -> torch.Tensor:
    """Apply :class:`Augment` to a batch of (unnormalised) OLA images.

    Args:
        maps: ``(B, C, S, S)`` non-negative maps (rows: queries).
        augment: which augmentations, with which strength.
        generator: random source (on the maps' device) for reproducibility.

    Returns:
        ``(B, C, S, S)`` augmented copy; rows are renormalised to their original mass.
    """
    out = maps.clone()
    b, c, s, _ = out.shape
    dev = out.device

    def draw(*shape):
        return torch.rand(*shape, generator=generator, device=dev)

    mass = out.sum(-1, keepdim=True)
    if augment.sink_p > 0:
        chosen = draw(b, 1, 1, 1) < augment.sink_p
        count = 1 + (draw(b, 1, 1, 1) * augment.sink_columns).long()  # 1..sink_columns
        rank = draw(b, 1, 1, s).argsort(-1).argsort(-1)  # random rank of each column
        columns = (rank < count) & chosen
        row_max = out.amax(-1, keepdim=True)
        out = torch.where(columns.expand_as(out), torch.maximum(out, row_max), out)
    if augment.temperature is not None:
        low, high = augment.temperature
        tau = low + (high - low) * draw(b, 1, 1, 1)
        out = out.clamp_min(0) ** (1.0 / tau)
    if augment.noise_p > 0:
        chosen = (draw(b, 1, 1, 1) < augment.noise_p).to(out.dtype)
        row_std = out.std(-1, keepdim=True)
        noise = torch.randn(out.shape, generator=generator, device=dev, dtype=out.dtype)
        out = (out + chosen * augment.noise_std_ratio * row_std * noise).clamp_min(0)
    new_mass = out.sum(-1, keepdim=True)
    return out * torch.where(new_mass > 0, mass / new_mass.clamp_min(1e-12), torch.zeros_like(mass))


def split_sources(
    source_maps: Sequence[torch.Tensor], augment: Augment | None = None, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, str]:
    """Split source models' maps into training and validation sets (never the target).

    Args:
        source_maps: one ``(N, C, S, S)`` tensor per source model, text ``i`` at index ``i``.
        augment: used only with one source, for the fixed augmented validation view
            (default: :class:`Augment` with noise on every map).
        seed: seed of that augmented view.

    Returns:
        ``(train_x, train_y, val_x, val_y, how)``; ``how`` describes the split in words.

    Raises:
        ValueError: no source, or sources of different shapes.
    """
    if not source_maps:
        raise ValueError("need at least one source model")
    if len({tuple(m.shape) for m in source_maps}) != 1:
        raise ValueError("source models' maps must have the same shape")
    n = source_maps[0].shape[0]
    labels = torch.arange(n)
    if len(source_maps) == 1:
        maps = source_maps[0]
        view = augment or Augment(noise_p=1.0, noise_std_ratio=0.3, sink_p=0.5, sink_columns=3)
        gen = torch.Generator(device=maps.device).manual_seed(10_000 + seed)
        val = augment_maps(maps, view, gen)
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


@dataclass(frozen=True)
class ProxyConfig:
    """Training settings of the visual proxy (paper: SGD 0.007, momentum 0.9, wd 5e-4, batch 20, 100k steps).

    Attributes:
        iterations: optimiser steps.
        batch_size: maps per step.
        lr, momentum, weight_decay: SGD settings.
        width: ResNet width (64 = ResNet-18).
        eval_every: steps between validation checks (the checkpoint is chosen on them).
        augment: augmentation of training batches (:class:`Augment`).
        cosine: cosine learning-rate decay to zero over ``iterations`` (the paper: constant).

    Raises:
        ValueError: non-positive steps, batch size, evaluation interval or width, a width
            that is not a multiple of 4, or a non-positive learning rate.
    """

    iterations: int = 100_000
    batch_size: int = 20
    lr: float = 0.007
    momentum: float = 0.9
    weight_decay: float = 5e-4
    width: int = 64
    eval_every: int = 100
    augment: Augment = field(default_factory=Augment)
    cosine: bool = False

    def __post_init__(self) -> None:
        for name in ("iterations", "batch_size", "eval_every", "width"):
            if getattr(self, name) < 1:
                raise ValueError(f"ProxyConfig.{name} must be at least 1; got {getattr(self, name)}")
        if self.width % 4:
            raise ValueError(f"ProxyConfig.width must be a multiple of 4; got {self.width}")
        if self.lr <= 0 or self.momentum < 0 or self.weight_decay < 0:
            raise ValueError(f"need lr > 0, momentum >= 0 and weight_decay >= 0; got {self.lr}, {self.momentum}, {self.weight_decay}")


@dataclass
class ProxyRun:
    """Outcome of one proxy training run.

    Attributes:
        seed: the seed of the run.
        history: one dict per evaluation: ``step``, ``train_loss`` (mean since the last
            evaluation), ``train_acc`` (on the batches seen since the last one), ``val_acc``.
        best_step: the step whose weights were kept (best validation accuracy).
        val_acc: validation accuracy at ``best_step``.
        test_acc: accuracy on the target maps with those weights, evaluated once
            (``None`` when no target was given).
        validation: how the validation set was made.
        model: the chosen network (eval mode, on the training device).
        mean, std: ``(1, C, 1, 1)`` input standardisation from the training maps.
    """

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
        """Accuracy (fraction) of the chosen network on another model's ``(N, C, S, S)`` maps (text ``i`` = class ``i``)."""
        return accuracy(self.model, _standardise(maps, self.mean, self.std), torch.arange(maps.shape[0]))


@torch.no_grad()
def accuracy(model: nn.Module, maps: torch.Tensor, labels: torch.Tensor, batch_size: int = 256) -> float:
    """Top-1 accuracy (fraction) of ``model`` on ``(N, C, S, S)`` maps with ``(N,)`` labels."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    correct = 0
    for start in range(0, maps.shape[0], batch_size):
        logits = model(maps[start : start + batch_size].to(device))
        correct += int((logits.argmax(1).cpu() == labels[start : start + batch_size].cpu()).sum())
    model.train(was_training)
    return correct / max(maps.shape[0], 1)


def _standardise(maps: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    return (maps - mean) / std


def train_proxy(
    source_maps: Sequence[torch.Tensor],
    target_maps: torch.Tensor | None,
    config: ProxyConfig,
    *,
    seed: int = 0,
    device: str | torch.device | None = None,
    progress: bool = True,
) -> ProxyRun:
    """Train the visual proxy on source models' maps; test once on a target model's maps.

    Args:
        source_maps: one ``(N, C, S, S)`` float tensor per source model (text ``i`` is class
            ``i``), from :func:`olacore.similarity.comparable_maps`.
        target_maps: ``(N, C, S, S)`` maps of the held-out target model, or ``None``.
        config: :class:`ProxyConfig`.
        seed: seeds the network initialisation, batch order and augmentation.
        device: where to train (default: CUDA if available, else CPU).
        progress: show a tqdm bar.

    Returns:
        :class:`ProxyRun` (history for the loss/accuracy curve, chosen step, val and test
        accuracy as fractions).

    Raises:
        ValueError: from :func:`split_sources`, non-finite maps, or target shape differs from the sources'.
    """
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.manual_seed(seed)
    if not all(torch.isfinite(m).all() for m in source_maps) or (target_maps is not None and not torch.isfinite(target_maps).all()):
        raise ValueError("maps hold NaN or infinite values; the proxy needs finite OLA maps")
    train_x, train_y, val_x, val_y, how = split_sources(source_maps, seed=seed)
    if target_maps is not None and tuple(target_maps.shape[1:]) != tuple(train_x.shape[1:]):
        raise ValueError(f"target maps {tuple(target_maps.shape)} do not match source maps {tuple(train_x.shape)}")
    num_classes = source_maps[0].shape[0]
    # Inputs are standardised per channel with training statistics (maps hold ~1/S values).
    mean = train_x.mean(dim=(0, 2, 3), keepdim=True)
    std = train_x.std(dim=(0, 2, 3), keepdim=True).clamp_min(1e-12)
    model = make_resnet18(train_x.shape[1], num_classes, config.width).to(device)
    optimiser = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)
    scheduler = (
        torch.optim.lr_scheduler.LambdaLR(optimiser, lambda step: 0.5 * (1 + math.cos(math.pi * step / config.iterations)))
        if config.cosine
        else None
    )
    gen = torch.Generator().manual_seed(seed)
    train_x_dev, train_y_dev = train_x.to(device), train_y.to(device)
    val_std = _standardise(val_x, mean, std)
    best_state, best_val, best_step = copy.deepcopy(model.state_dict()), -1.0, 0
    history: list[dict] = []
    losses, seen, hits = [], 0, 0
    order = torch.randperm(train_x.shape[0], generator=gen)
    cursor = 0
    bar = progress_bar(range(1, config.iterations + 1), enabled=progress, desc="proxy", leave=False)
    model.train()
    for step in bar:
        if cursor + config.batch_size > order.numel():
            order, cursor = torch.randperm(train_x.shape[0], generator=gen), 0
        index = order[cursor : cursor + config.batch_size].to(device)
        cursor += config.batch_size
        batch = augment_maps(train_x_dev[index], config.augment, _device_generator(gen, device))
        batch = _standardise(batch, mean.to(device), std.to(device))
        labels = train_y_dev[index]
        logits = model(batch)
        loss = F.cross_entropy(logits, labels)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
        seen += labels.numel()
        hits += int((logits.argmax(1) == labels).sum())
        if step % config.eval_every == 0 or step == config.iterations:
            val_acc = accuracy(model, val_std, val_y)
            history.append({"step": step, "train_loss": sum(losses) / len(losses), "train_acc": hits / seen, "val_acc": val_acc})
            bar.set_postfix(loss=f"{history[-1]['train_loss']:.3f}", val=f"{val_acc:.3f}")
            if val_acc > best_val:
                best_val, best_step = val_acc, step
                best_state = copy.deepcopy(model.state_dict())
            losses, seen, hits = [], 0, 0
    model.load_state_dict(best_state)
    model.eval()
    test_acc = None
    if target_maps is not None:
        test_acc = accuracy(model, _standardise(target_maps, mean, std), torch.arange(target_maps.shape[0]))
    return ProxyRun(seed=seed, history=history, best_step=best_step, val_acc=best_val, test_acc=test_acc, validation=how,
                    model=model, mean=mean, std=std)


def _device_generator(cpu_gen: torch.Generator, device: torch.device) -> torch.Generator:
    """A generator on ``device`` seeded from ``cpu_gen`` (CUDA ops need a CUDA generator)."""
    if device.type == "cpu":
        return cpu_gen
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=cpu_gen))
    return torch.Generator(device=device).manual_seed(seed)


# Bump when train_proxy gives other results for the same inputs: every cached run is then ignored.
PROXY_VERSION = 1


def _run_key(source_maps: Sequence[torch.Tensor], target_maps: torch.Tensor | None, config: ProxyConfig, seed: int,
             device: torch.device) -> str:
    return TensorStore.key(
        kind="proxy-run",
        proxy_version=PROXY_VERSION,
        sources=[tensor_digest(m) for m in source_maps],
        target=None if target_maps is None else tensor_digest(target_maps),
        config=dataclasses.asdict(config),
        seed=seed,
        device=device.type,
    )


def _run_summary(run: ProxyRun) -> dict[str, Any]:
    return {"seed": run.seed, "history": run.history, "best_step": run.best_step, "val_acc": run.val_acc,
            "test_acc": run.test_acc, "validation": run.validation}


def cached_train_proxy(
    source_maps: Sequence[torch.Tensor],
    target_maps: torch.Tensor | None,
    config: ProxyConfig,
    *,
    seed: int = 0,
    device: str | torch.device | None = None,
    progress: bool = True,
    store: TensorStore | None = None,
) -> ProxyRun:
    """:func:`train_proxy`, kept on disk: the same inputs give back the stored run without training.

    The key holds a sha256 of every source and target tensor (dtype, shape and bytes), the
    whole ``config`` (augmentation included), ``seed``, the device type and
    :data:`PROXY_VERSION`; the entry holds the chosen network's weights, the input
    standardisation and the run's summary (history, chosen step, accuracies), written
    atomically by :class:`olacore.cache.TensorStore`.

    Args:
        source_maps, target_maps, config, seed, device, progress: as :func:`train_proxy`.
        store: where runs are kept (default: ``$OLACORE_CACHE/tensors``).

    Returns:
        :class:`ProxyRun`; a stored run's ``model`` is rebuilt on ``device`` in eval mode.

    Raises:
        ValueError: as :func:`train_proxy`.
    """
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    store = store or TensorStore()
    key = _run_key(source_maps, target_maps, config, seed, device)
    stored = store.get(key)
    if stored is not None:
        tensors, meta = stored
        model = make_resnet18(source_maps[0].shape[1], source_maps[0].shape[0], config.width)
        model.load_state_dict({name[len("model."):]: t for name, t in tensors.items() if name.startswith("model.")})
        return ProxyRun(model=model.to(device).eval(), mean=tensors["mean"], std=tensors["std"], **meta)
    run = train_proxy(source_maps, target_maps, config, seed=seed, device=device, progress=progress)
    weights = {f"model.{name}": t for name, t in run.model.state_dict().items()}
    store.put(key, {**weights, "mean": run.mean, "std": run.std}, meta=_run_summary(run))
    return run


def _proxy_job(job: tuple) -> dict[str, Any]:
    """One run of :func:`proxy_experiment` (top level, so worker processes can import it)."""
    source_maps, target_maps, config, seed, device, store_root, num_threads = job
    source_maps = [torch.as_tensor(m) for m in source_maps]  # numpy from a worker pool (olacore.workers.by_value)
    target_maps = None if target_maps is None else torch.as_tensor(target_maps)
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    run = cached_train_proxy(source_maps, target_maps, config, seed=seed, device=device, progress=False,
                             store=TensorStore(store_root))
    return _run_summary(run)


def leave_one_out(names: Sequence[str]) -> list[tuple[list[str], str]]:
    """``(sources, target)`` splits: each model in turn is the target, the others the sources.

    With two models this is "train on one, test on the other", both ways.
    """
    return [([n for n in names if n != target], target) for target in names]


def proxy_experiment(
    maps: dict[str, torch.Tensor],
    splits: Sequence[tuple[Sequence[str], str]],
    channel_sets: dict[str, Sequence[int]],
    config: ProxyConfig,
    seeds: Sequence[int],
    *,
    device: str | torch.device | None = None,
    progress: bool = True,
    num_threads: int | None = None,
    workers: int = 1,
    store: TensorStore | None = None,
):
    """Run :func:`cached_train_proxy` for every split, channel set and seed (paper section 4.1, Table 1).

    Runs already on disk are read back; the others are trained, in ``workers`` processes
    when ``workers > 1`` (each run is seeded, so the result does not depend on which worker
    ran it).

    Args:
        maps: model name -> ``(N, C, S, S)`` maps holding every channel any set uses.
        splits: ``(source names, target name)`` pairs, e.g. from :func:`leave_one_out`.
        channel_sets: row label -> indices into the maps' channel axis (e.g.
            ``{"order 1": [0], "orders 1+2": [0, 1]}``).
        config: :class:`ProxyConfig`.
        seeds: one run per seed.
        device: training device.
        progress: a tqdm bar over runs.
        num_threads: torch CPU threads per run (restored after); small convolutions on a
            shared 2-core machine run fastest on 1. ``None`` leaves the setting alone.
        workers: processes training at once (use 1 on a GPU; on a CPU, one per core with
            ``num_threads=1`` trains that many times faster).
        store: where runs are kept (default: ``$OLACORE_CACHE/tensors``).

    Returns:
        ``(runs, histories)``: a DataFrame with one row per run (``channels, sources, target,
        seed, best_step, val_acc, test_acc, validation``) and a dict
        ``(channels, target, seed) -> history``.

    Raises:
        ValueError: ``workers < 1``, or as :func:`train_proxy`.
    """
    import pandas as pd

    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    store = store or TensorStore()
    labels = [(label, sources, target, seed) for sources, target in splits for label in channel_sets for seed in seeds]
    jobs = [
        ([maps[s][:, list(channel_sets[label])] for s in sources], maps[target][:, list(channel_sets[label])], config, seed,
         device, str(store.root), num_threads)
        for label, sources, target, seed in labels
    ]
    threads_before = torch.get_num_threads()
    try:
        if workers > 1:  # train what the cache lacks in worker processes, then read every run back below
            missing = [
                (by_value(sources), by_value([target])[0], *rest)
                for (sources, target, *rest), (_, _, _, seed) in zip(jobs, labels)
                if _run_key(sources, target, config, seed, device) not in store
            ]
            run_in_processes(_proxy_job, missing, workers, progress=progress, desc="proxy runs")
        summaries = [_proxy_job(job) for job in progress_bar(jobs, enabled=progress and workers == 1, desc="proxy runs")]
    finally:
        torch.set_num_threads(threads_before)
    rows, histories = [], {}
    for (label, sources, target, seed), summary in zip(labels, summaries):
        rows.append({"channels": label, "sources": " + ".join(sources), "target": target, "seed": seed,
                     "best_step": summary["best_step"], "val_acc": summary["val_acc"], "test_acc": summary["test_acc"],
                     "validation": summary["validation"]})
        histories[(label, target, seed)] = summary["history"]
    return pd.DataFrame(rows), histories
