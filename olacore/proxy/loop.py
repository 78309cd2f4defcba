"""The visual proxy's training loop, written once: both protocols (held-out and official) call :func:`fit`."""

from __future__ import annotations

import math
from typing import Callable, Iterator, Mapping

import torch
import torch.nn as nn
import torch.nn.functional as F

from olacore.proxy.network import make_resnet18
from olacore.timing import progress as progress_bar

__all__ = ["fit", "shuffled_batches", "accuracy", "channel_stats", "standardise"]


def shuffled_batches(n: int, batch_size: int, generator: torch.Generator, drop_last: bool) -> Iterator[torch.Tensor]:
    """Endless ``(B,)`` index batches over ``n`` items, reshuffled by ``generator`` each epoch; an epoch's last,
    smaller batch is skipped with ``drop_last`` (the held-out protocol) and kept without (a ``DataLoader``'s)."""
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
        evaluate: ``(step, model, train_acc) -> dict`` every ``eval_every`` steps (and at the last with
            ``evaluate_last``); ``train_acc``: the fraction of training samples classified right since the last
            evaluation. Each history entry is ``{"step", "train_loss", **dict}``.
        sgd: ``lr, momentum, weight_decay, cosine`` (the rate decays to zero over ``iterations`` with ``cosine``).
        freeze_batchnorm_after: the step after which the network stays in eval mode (BatchNorm frozen).
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
    """Top-1 accuracy (fraction) of ``model`` on ``(N, C, S, S)`` maps with ``(N,)`` labels, in eval mode (the
    mode restored after)."""
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
