"""The official TOA training augmentations of raw OLA maps: fake sinks and noise.

Read from ``models/ola_augmentations.py`` and their defaults in ``utils/arguments.py``
(``sp_aug='none'``): ``RandomHightlightColumns`` (p 0.3, 1 to 3 columns, reference ranks 0
and 1) then ``AddGuassianNoise`` (p 0.3, ``std_ratio`` 0.2). Both act on the raw OLA maps
*before* the sink cleaning of :mod:`olacore.toa.data`, which is recomputed afterwards
(``models/ola_model.py`` recomputes the masks after each augmentation), so a fake sink is
partly removed again by the cleaning, as in the official pipeline.

- **Fake sinks**: with probability ``p``, ``n`` columns (``n`` uniform in ``[min, max]``)
  are drawn uniformly among the tokens; in each row the entry of each drawn column gets
  ``m1 + (u - 0.5) (m1 - m2)`` added, where ``m1``, ``m2`` are the row's two largest entries
  and ``u ~ U(0, 1)`` is drawn once per column and map; only interested entries are changed
  (``j <= i`` for a causal LM); rows are renormalised. Each channel gets its own ``u``.
- **Noise**: with probability ``p``, Gaussian noise of standard deviation ``std_ratio`` times
  the row's standard deviation (population, over the interested entries that are not sinks)
  is added to the interested entries, negatives are clipped to zero, rows renormalised.

The official code draws the coin once per batch (batch 2); here it is drawn per sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from olacore.toa.data import official_sink_mask

__all__ = ["Augmentation", "fake_sinks", "add_noise", "augment"]


@dataclass(frozen=True)
class Augmentation:
    """Official augmentation settings (``utils/arguments.py``, ``sp_aug='none'``).

    Attributes:
        sink_p: probability of fake sinks (official 0.3; 0 switches them off).
        sink_min, sink_max: columns per fake-sink draw (official 1 and 3).
        noise_p: probability of noise (official 0.3; 0 switches it off).
        noise_std_ratio: noise std as a share of the row std (official 0.2).
    """

    sink_p: float = 0.3
    sink_min: int = 1
    sink_max: int = 3
    noise_p: float = 0.3
    noise_std_ratio: float = 0.2

    def __post_init__(self) -> None:
        for name in ("sink_p", "noise_p"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} is a probability in [0, 1]; got {value}")
        if not 1 <= self.sink_min <= self.sink_max:
            raise ValueError(f"need 1 <= sink_min <= sink_max; got {self.sink_min}, {self.sink_max}")
        if self.noise_std_ratio < 0:
            raise ValueError(f"noise_std_ratio must be >= 0; got {self.noise_std_ratio}")

    @property
    def active(self) -> bool:
        """Whether any augmentation can fire."""
        return self.sink_p > 0 or self.noise_p > 0


def _interested(size: int, causal: bool) -> torch.Tensor:
    keep = torch.ones(size, size)
    return keep.tril() if causal else keep


def _renormalise(maps: torch.Tensor) -> torch.Tensor:
    return maps / (maps.sum(-1, keepdim=True) + 1e-10)


def fake_sinks(maps: torch.Tensor, causal: bool, columns: int, generator: torch.Generator) -> torch.Tensor:
    """Add ``columns`` fake sink columns to ``(K, T, T)`` raw maps (see the module docstring).

    Returns:
        ``(K, T, T)`` row-renormalised maps (a new tensor).
    """
    channels, size, _ = maps.shape
    if size < 2:
        return maps.clone()
    interested = _interested(size, causal)
    columns = min(columns, size)
    chosen = torch.randperm(size, generator=generator)[:columns]
    top = maps.topk(2, dim=-1).values  # (K, T, 2)
    m1, m2 = top[..., :1], top[..., 1:]
    u = torch.rand(channels, 1, columns, generator=generator)
    bias = torch.zeros_like(maps)
    bias[:, :, chosen] = m1 + (u - 0.5) * (m1 - m2)
    return _renormalise(maps + bias * interested)


def add_noise(maps: torch.Tensor, causal: bool, std_ratio: float, generator: torch.Generator) -> torch.Tensor:
    """Add row-scaled Gaussian noise to ``(K, T, T)`` raw maps (see the module docstring).

    Returns:
        ``(K, T, T)`` non-negative, row-renormalised maps (a new tensor).
    """
    size = maps.shape[-1]
    interested = _interested(size, causal)
    calm = interested * (~official_sink_mask(maps, causal)).float()
    count = calm.sum(-1, keepdim=True)
    mean = (maps * calm).sum(-1, keepdim=True) / (count + 1e-10)
    std = (((maps - mean) ** 2) * calm).sum(-1, keepdim=True).div(count + 1e-10).sqrt()
    noise = std * std_ratio * torch.randn(maps.shape, generator=generator)
    return _renormalise(torch.relu(maps + noise * interested) * interested)


def augment(maps: torch.Tensor, causal: bool, settings: Augmentation, generator: torch.Generator) -> torch.Tensor:
    """Apply the official augmentations in order (fake sinks, then noise), each with its probability.

    Args:
        maps: ``(K, T, T)`` raw maps of one sentence (before sink cleaning).
        causal: the maps come from a causal LM.
        settings: probabilities and sizes.
        generator: the source of randomness (seeded by the training run).

    Returns:
        ``(K, T, T)`` maps (``maps`` itself when nothing fired). A ``(0, T, T)`` stack (the
        distance input) is returned unchanged.
    """
    if maps.shape[0] == 0:
        return maps
    if settings.sink_p > 0 and torch.rand(1, generator=generator).item() < settings.sink_p:
        columns = int(torch.randint(settings.sink_min, settings.sink_max + 1, (1,), generator=generator))
        maps = fake_sinks(maps, causal, columns, generator)
    if settings.noise_p > 0 and torch.rand(1, generator=generator).item() < settings.noise_p:
        maps = add_noise(maps, causal, settings.noise_std_ratio, generator)
    return maps
