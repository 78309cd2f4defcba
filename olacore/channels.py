"""The channel vocabulary: one name for each kind of ``(T, T)`` token map: ``"order<k>"``, ``"rollout"``,
``"layer<n>"`` (layer 1 nearest the input) or ``"alti"``; each names the source that computes it
(:mod:`olacore.pipeline`) and how to take its map from that source's record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch

__all__ = ["Channel", "channel", "channels", "label", "order_channels"]

_ORDER = re.compile(r"^order(\d+)$")
_LAYER = re.compile(r"^layer([1-9]\d*)$")


@dataclass(frozen=True)
class Channel:
    """One kind of map: name and display label (``"order1"``, ``"order 1"``), source, ``take(record) -> (T, T)``."""

    name: str
    label: str
    source: str
    take: Callable[[Any], torch.Tensor]
    order: int | None = None


def _take_order(k: int) -> Callable[[Any], torch.Tensor]:
    def take(record: Any) -> torch.Tensor:
        available = record.orders.shape[0] - 1
        if k > available:
            raise ValueError(f"order {k} was not computed (orders 0..{available} are); ask for max_order >= {k}")
        return record.orders[k]

    return take


def _take_layer(n: int) -> Callable[[Any], torch.Tensor]:
    def take(record: Any) -> torch.Tensor:
        layers = record.attentions.shape[0]
        if n > layers:
            raise ValueError(f"layer {n} does not exist: the model has {layers} layers")
        return record.attentions[n - 1]

    return take


_REGISTRY: dict[str, Channel] = {
    "rollout": Channel("rollout", "rollout", "ola", lambda record: record.rollout),
    # ALTI (Ferrando et al., 2022) aggregated over layers by its own rollout: olacore.alti
    "alti": Channel("alti", "ALTI", "alti", lambda record: record.rollout),
}


def channel(name: str) -> Channel:
    """The :class:`Channel` called ``name``.

    Raises:
        ValueError: an unknown name (the message lists the vocabulary).
    """
    if isinstance(name, Channel):
        return name
    match = _ORDER.match(name)
    if match:
        k = int(match.group(1))
        return Channel(name, f"order {k}", "ola", _take_order(k), order=k)
    match = _LAYER.match(name)
    if match:
        n = int(match.group(1))
        return Channel(name, f"layer {n}", "attention", _take_layer(n))
    if name in _REGISTRY:
        return _REGISTRY[name]
    vocabulary = ", ".join(["order<k>", "layer<n>", *sorted(_REGISTRY)])
    raise ValueError(f"unknown channel {name!r}; the vocabulary is {vocabulary}")


def channels(names: Iterable[str]) -> tuple[Channel, ...]:
    """:func:`channel` of every name.

    Raises:
        ValueError: an unknown name, a repeated name, or no name at all.
    """
    names = [names] if isinstance(names, str) else list(names)
    if not names:
        raise ValueError("no channel given")
    found = tuple(channel(name) for name in names)
    repeated = sorted({c.name for c in found if sum(d.name == c.name for d in found) > 1})
    if repeated:
        raise ValueError(f"channels repeated: {repeated}")
    return found


def label(name: str) -> str:
    """The display label of a channel: ``label("order2") == "order 2"``."""
    return channel(name).label


def order_channels(*orders: int) -> tuple[str, ...]:
    """Names of OLA orders: ``order_channels(1, 2) == ("order1", "order2")``."""
    return tuple(f"order{k}" for k in orders)
