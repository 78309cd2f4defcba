"""The honest proxy's OLA augmentations, after the official ones: fake sinks, noise, temperature.

The kinds and strengths follow the official ``models/ola_augmentations.py`` and the settings of
the official ``olas_visual_model.py``; the rules differ in detail (here a fake sink column is
raised to the row maximum, and the noise scale is the std of the whole row) and they act on
cleaned, resized maps. :mod:`olacore.proxy.official` reproduces the official rules and order.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Augment", "augment_maps"]


@dataclass(frozen=True)
class Augment:
    """OLA augmentations after the official ones (module docstring), each optional.

    Attributes:
        noise_p: probability per map of adding Gaussian noise ...
        noise_std_ratio: ... of standard deviation ``ratio x`` the row's std (the official
            ``olas_visual_model.py`` sets 0.15 and 0.13).
        sink_p: probability per map of highlighting fake sink columns ...
        sink_columns: ... up to this many random key columns raised to the row maximum
            (the official ``olas_visual_model.py`` sets p 0.3, 1 to 3 columns).
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
