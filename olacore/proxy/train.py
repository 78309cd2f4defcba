"""Training the visual proxy on source models' maps and testing it once on a target model's maps."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Sequence

import torch
import torch.nn as nn

from olacore.augment import BatchAugmentation, augment_batch
from olacore.checked import Bool, NonNegativeFloat, PositiveFloat, PositiveInt, settings_class
from olacore.proxy.loop import accuracy, channel_stats, fit, shuffled_batches, standardise
from olacore.settings import resolve_device

__all__ = ["ProxyConfig", "ProxyRun", "split_sources", "train_proxy"]

#: The fixed augmented view that validates a run with one source model: noise on every map, fake sinks on half.
_VALIDATION_VIEW = BatchAugmentation(noise_p=1.0, noise_std_ratio=0.3, sink_p=0.5, sink_columns=3)


def split_sources(source_maps: Sequence[torch.Tensor],
                  seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, str]:
    """Split source models' maps into training and validation sets, never the target (:mod:`olacore.proxy`).

    Args:
        source_maps: one ``(N, C, S, S)`` tensor per source model, text ``i`` at index ``i``.
        seed: seeds the fixed augmented validation view with one source.

    Returns:
        ``(train_x, train_y, val_x, val_y, how)``; ``how`` describes the split in words.
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

    ``width`` 64 is ResNet-18; the checkpoint is chosen on the validation checks every ``eval_every`` steps;
    ``cosine`` decays the learning rate to zero over ``iterations`` (the paper: constant).

    Raises:
        olacore.checked.SettingsError: (a ValueError, one line naming the field) non-positive counts, width or rate;
            a width not a multiple of 4; negative momentum or decay.
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
        """The optimiser settings :func:`olacore.proxy.loop.fit` takes."""
        return {"lr": self.lr, "momentum": self.momentum, "weight_decay": self.weight_decay, "cosine": self.cosine}


@dataclass
class ProxyRun:
    """Outcome of one proxy training run (accuracies as fractions).

    Attributes:
        history: one dict per evaluation: ``step``, ``train_loss`` and ``train_acc`` (since the last evaluation),
            ``val_acc``.
        best_step: the step whose weights were kept (best validation accuracy).
        test_acc: target accuracy with those weights, evaluated once (``None`` without a target).
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
    """Train the visual proxy on source models' maps; test once on a target model's maps.

    Args:
        source_maps: one ``(N, C, S, S)`` float tensor per source model (text ``i`` is class ``i``), e.g.
            :meth:`olacore.maps.Maps.stack` of resized maps.
        target_maps: ``(N, C, S, S)`` maps of the held-out target model, or ``None``.
        seed: seeds the network initialisation, batch order and augmentation.
        device: default CUDA if available, else CPU.

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
    model.eval()
    test_acc = None
    if target_maps is not None:
        test_acc = accuracy(model, standardise(target_maps, mean, std), torch.arange(target_maps.shape[0]))
    return ProxyRun(seed=seed, history=history, best_step=best.step, val_acc=best.val_acc, test_acc=test_acc,
                    validation=how, model=model, mean=mean, std=std)


class _BestOnValidation:
    """The evaluation of the held-out protocol: accuracy on the validation maps, keeping the best weights."""

    def __init__(self, maps: torch.Tensor, labels: torch.Tensor) -> None:
        self.maps, self.labels = maps, labels
        self.val_acc, self.step, self.state = -1.0, 0, None

    def __call__(self, step: int, model: nn.Module, train_acc: float) -> dict:
        val_acc = accuracy(model, self.maps, self.labels)
        if val_acc > self.val_acc:
            self.val_acc, self.step, self.state = val_acc, step, copy.deepcopy(model.state_dict())
        return {"train_acc": train_acc, "val_acc": val_acc}


def _device_generator(cpu_gen: torch.Generator, device: torch.device) -> torch.Generator:
    """A generator on ``device`` seeded from ``cpu_gen`` (CUDA ops need a CUDA generator)."""
    if device.type == "cpu":
        return cpu_gen
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=cpu_gen))
    return torch.Generator(device=device).manual_seed(seed)
