"""OLA augmentations for training: the official fake sinks and map noise, and the held-out proxy's batch variant.

Official (``RandomHightlightColumns`` then ``AddGuassianNoise``, ``models/ola_augmentations.py``), per text
(:func:`augment`): :data:`TOA` (``utils/arguments.py``; ``stats="causal"``) and :data:`VISUAL_PROXY`
(``olas_visual_model.py``; ``stats="row"``). Both change only the entries the sink statistics cover
(:func:`olacore.maps.stats_mask`). The held-out proxy's :func:`augment_batch` works on ``(B, C, S, S)`` batches of
cleaned, resized maps with simpler rules.
"""

from __future__ import annotations

import torch

from olacore.maps import sink_flags, stats_mask
from olacore.settings import NonNegativeFloat, PositiveInt, Probability, settings_class

__all__ = ["Augmentation", "TOA", "VISUAL_PROXY", "COLUMN_DRAWS", "fake_sinks", "map_noise", "augment",
           "BatchAugmentation", "augment_batch"]

#: How :func:`fake_sinks` draws its columns: TOA, official proxy (one distribution, two random streams).
COLUMN_DRAWS = ("permutation", "multinomial")


@settings_class
class Augmentation:
    """Settings of the official augmentations (defaults: :data:`TOA`).

    Attributes:
        sink_p, noise_p: probability per text of fake sinks, of map noise (0: off).
        sink_min, sink_max: columns per fake-sink draw (official 1 and 3).
        noise_std_ratio: noise std as a share of the row std.

    Raises:
        olacore.settings.SettingsError: (a ValueError, one line naming the field) a probability outside ``[0, 1]``,
            not ``1 <= sink_min <= sink_max``, a negative noise ratio.
    """

    sink_p: Probability = 0.3
    sink_min: PositiveInt = 1
    sink_max: PositiveInt = 3
    noise_p: Probability = 0.3
    noise_std_ratio: NonNegativeFloat = 0.2

    def __post_init__(self) -> None:
        if self.sink_min > self.sink_max:
            raise ValueError(f"Augmentation: need sink_min <= sink_max; got {self.sink_min}, {self.sink_max}")

    @property
    def active(self) -> bool:
        """Whether any augmentation can fire."""
        return self.sink_p > 0 or self.noise_p > 0


#: The official TOA training (``utils/arguments.py``, ``sp_aug='none'``).
TOA = Augmentation()
#: The official visual proxy (``olas_visual_model.py``).
VISUAL_PROXY = Augmentation(sink_p=0.3, sink_min=1, sink_max=3, noise_p=0.15, noise_std_ratio=0.13)


def _renormalise(maps: torch.Tensor) -> torch.Tensor:
    return maps / (maps.sum(-1, keepdim=True) + 1e-10)


def fake_sinks(maps: torch.Tensor, causal: bool, columns: int, generator: torch.Generator, *,
               stats: str = "causal", column_draw: str = "permutation") -> torch.Tensor:
    """Add ``columns`` fake sink columns to one text's ``(C, T, T)`` maps: each gets ``m1 + (u - 0.5)(m1 - m2)``
    (``m1``, ``m2``: the row's two largest entries), rows renormalised."""
    channels, size = maps.shape[0], maps.shape[-1]
    if size < 2:
        return maps
    covered = stats_mask(size, causal, stats).to(maps.dtype)
    columns = min(columns, size)
    if column_draw == "permutation":
        chosen = torch.randperm(size, generator=generator)[:columns]
    else:
        weights = torch.ones(size)
        chosen = torch.multinomial(weights / weights.sum(), columns, replacement=False, generator=generator)
    top = maps.topk(2, dim=-1).values  # (C, T, 2)
    m1, m2 = top[..., :1], top[..., 1:]
    u = torch.rand(channels, 1, columns, generator=generator, dtype=maps.dtype)
    bias = torch.zeros_like(maps)
    bias[:, :, chosen] = m1 + (u - 0.5) * (m1 - m2)
    return _renormalise(maps + bias * covered)


def map_noise(maps: torch.Tensor, causal: bool, std_ratio: float, generator: torch.Generator, *,
              stats: str = "causal") -> torch.Tensor:
    """Add Gaussian noise of ``std_ratio`` x each row's std over its non-sink entries to one text's ``(C, T, T)``
    maps; clipped at zero, rows renormalised."""
    covered = stats_mask(maps.shape[-1], causal, stats).to(maps.dtype)
    calm = covered * ~sink_flags(maps, causal, stats=stats)
    count = calm.sum(-1, keepdim=True) + 1e-10
    mean = (maps * calm).sum(-1, keepdim=True) / count
    std = (((maps - mean) ** 2 * calm).sum(-1, keepdim=True) / count).sqrt()
    noise = std * std_ratio * torch.randn(maps.shape, generator=generator, dtype=maps.dtype) * covered
    return _renormalise(torch.relu(maps + noise) * covered)


def augment(maps: torch.Tensor, causal: bool, settings: Augmentation, generator: torch.Generator, *,
            stats: str = "causal", column_draw: str = "permutation") -> torch.Tensor:
    """The official augmentations of one text's ``(C, T, T)`` maps: fake sinks, then map noise, each with its
    probability, drawn once per text (the official TOA code: once per batch of 2); ``generator`` on the CPU."""
    if maps.shape[0] == 0:
        return maps
    if settings.sink_p > 0 and torch.rand(1, generator=generator).item() < settings.sink_p:
        columns = int(torch.randint(settings.sink_min, settings.sink_max + 1, (1,), generator=generator))
        maps = fake_sinks(maps, causal, columns, generator, stats=stats, column_draw=column_draw)
    if settings.noise_p > 0 and torch.rand(1, generator=generator).item() < settings.noise_p:
        maps = map_noise(maps, causal, settings.noise_std_ratio, generator, stats=stats)
    return maps


@settings_class
class BatchAugmentation:
    """The held-out proxy's augmentations; defaults as ``olas_visual_model.py``.

    Attributes:
        noise_p, noise_std_ratio: probability per map of Gaussian noise of std ``ratio x`` the row's std.
        sink_p, sink_columns: probability per map of raising 1 to ``sink_columns`` random key columns to the row max.

    Raises:
        olacore.settings.SettingsError: a probability outside ``[0, 1]``, a negative ratio, ``sink_columns < 1``.
    """

    noise_p: Probability = 0.15
    noise_std_ratio: NonNegativeFloat = 0.13
    sink_p: Probability = 0.3
    sink_columns: PositiveInt = 3


def augment_batch(maps: torch.Tensor, settings: BatchAugmentation, generator: torch.Generator | None = None) -> torch.Tensor:
    """An augmented copy of a ``(B, C, S, S)`` batch, rows keeping their mass (``generator`` on its device)."""
    out = maps.clone()
    b, c, s, _ = out.shape
    dev = out.device

    def draw(*shape):
        return torch.rand(*shape, generator=generator, device=dev)

    mass = out.sum(-1, keepdim=True)
    if settings.sink_p > 0:
        chosen = draw(b, 1, 1, 1) < settings.sink_p
        count = 1 + (draw(b, 1, 1, 1) * settings.sink_columns).long()  # 1..sink_columns
        rank = draw(b, 1, 1, s).argsort(-1).argsort(-1)  # random rank of each column
        columns = (rank < count) & chosen
        row_max = out.amax(-1, keepdim=True)
        out = torch.where(columns.expand_as(out), torch.maximum(out, row_max), out)
    if settings.noise_p > 0:
        chosen = (draw(b, 1, 1, 1) < settings.noise_p).to(out.dtype)
        row_std = out.std(-1, keepdim=True)
        noise = torch.randn(out.shape, generator=generator, device=dev, dtype=out.dtype)
        out = (out + chosen * settings.noise_std_ratio * row_std * noise).clamp_min(0)
    new_mass = out.sum(-1, keepdim=True)
    return out * torch.where(new_mass > 0, mass / new_mass.clamp_min(1e-12), torch.zeros_like(mass))
