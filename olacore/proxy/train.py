"""Training the visual proxy on source models' maps and testing it once on a target model's maps."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from olacore.augment import BatchAugmentation, augment_batch
from olacore.checked import Bool, NonNegativeFloat, PositiveFloat, PositiveInt, settings_class
from olacore.proxy.network import make_resnet18
from olacore.settings import resolve_device
from olacore.timing import progress as progress_bar

__all__ = ["ProxyConfig", "ProxyRun", "split_sources", "train_proxy", "accuracy"]


def split_sources(
    source_maps: Sequence[torch.Tensor], augment: BatchAugmentation | None = None, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, str]:
    """Split source models' maps into training and validation sets, never the target (:mod:`olacore.proxy`).

    Args:
        source_maps: one ``(N, C, S, S)`` tensor per source model, text ``i`` at index ``i``.
        augment, seed: the fixed augmented validation view with one source (default: noise on every map).

    Returns:
        ``(train_x, train_y, val_x, val_y, how)``; ``how`` describes the split in words.
    """
    n = source_maps[0].shape[0]
    labels = torch.arange(n)
    if len(source_maps) == 1:
        maps = source_maps[0]
        view = augment or BatchAugmentation(noise_p=1.0, noise_std_ratio=0.3, sink_p=0.5, sink_columns=3)
        gen = torch.Generator(device=maps.device).manual_seed(10_000 + seed)
        val = augment_batch(maps, view, gen)
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
        source_maps: one ``(N, C, S, S)`` float tensor per source model (text ``i`` is class ``i``), e.g.
            :meth:`olacore.maps.Maps.stack` of resized maps.
        target_maps: ``(N, C, S, S)`` maps of the held-out target model, or ``None``.
        seed: seeds the network initialisation, batch order and augmentation.
        device: default CUDA if available, else CPU.

    Raises:
        ValueError: the target maps' shape differs from the sources'.
    """
    device = resolve_device(device)
    torch.manual_seed(seed)
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
        batch = augment_batch(train_x_dev[index], config.augment, _device_generator(gen, device))
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
