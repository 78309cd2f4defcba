"""The TOA adapter network (paper section 4.4): axial attention over the ``T x T`` OLA image, one head per task.

Official: ``models/adapters.py`` (``AxialTransformerAdapter`` and its RE / DP siblings): a 1x1 convolution, the
``axial-attention`` package's ``AxialImageTransformer`` (no padding mask), read on the diagonal cell ``(t, t)``.
:class:`AxialBackbone` is that network with a padding mask (a departure: a sentence's output does not depend on its
batch); :class:`PackageBackbone` wraps the package itself. The root word's arc points to its own first sub-token
(``data_utils/dp_utils.py``), so no ROOT vector is learned.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn as nn
import torch.nn.functional as F

from olacore.settings import Bool, Fraction, PositiveInt, settings_class

__all__ = ["AdapterConfig", "AxialBlock", "AxialBackbone", "PackageBackbone", "TokenHead", "RelationHead",
           "BiaffineHead", "ToaModel"]


def transform_input(maps: torch.Tensor, lengths: torch.Tensor, transform: str) -> torch.Tensor:
    """``(B, C, T, T)`` maps rescaled before the 1x1 convolution: ``log1p(T m)`` (``"log-length"``; ``T`` from
    ``(B,)`` ``lengths``) or ``m`` (``"none"``, official)."""
    if transform == "none":
        return maps
    return torch.log1p(maps * lengths.to(maps)[:, None, None, None])


@settings_class
class AdapterConfig:
    """Sizes of the TOA adapter (official: ``models/adapters.py``, ``utils/arguments.py``); the defaults are
    scaled down to fit a CPU (book/design.md).

    Attributes:
        dim: channels of every cell of the grid (official 768).
        depth: axial blocks (official 5).
        heads: attention heads; must divide ``dim`` (official 8).
        ffn_mult: width of the feed-forward as a multiple of ``dim`` (official 4).
        ffn_kernel: the feed-forward's convolution size (official 3, the only one).
        local_mix: a depthwise 3x3 convolution in each feed-forward.
        arc_dim, rel_dim: widths of the DP head's arc and relation MLPs (official 512, 128).
        mlp_dropout: the DP head's shared dropout (official 0.33).
        pair_scores: the DP head also scores the pair cell ``(i, j)`` (official: diagonal features only).
        input_transform: :func:`transform_input` (official ``"none"``).
        backbone: ``"masked"`` (:class:`AxialBackbone`) or ``"package"`` (the official network, no padding mask).

    Raises:
        olacore.settings.SettingsError: (a ValueError, one line naming the field) a bad size, ``heads`` not dividing
            ``dim``, ``mlp_dropout`` outside ``[0, 1)``, an unknown option.
    """

    dim: PositiveInt = 32
    depth: PositiveInt = 2
    heads: PositiveInt = 4
    ffn_mult: PositiveInt = 2
    ffn_kernel: Literal[3] = 3
    local_mix: Bool = True
    arc_dim: PositiveInt = 64
    rel_dim: PositiveInt = 32
    mlp_dropout: Fraction = 0.33
    pair_scores: Bool = True
    input_transform: Literal["log-length", "none"] = "log-length"
    backbone: Literal["masked", "package"] = "masked"

    def __post_init__(self) -> None:
        if self.dim % self.heads:
            raise ValueError(f"AdapterConfig.heads ({self.heads}) must divide dim ({self.dim})")


def _attend(x: torch.Tensor, norm: nn.LayerNorm, qkv: nn.Linear, out: nn.Linear, heads: int,
            key_valid: torch.Tensor) -> torch.Tensor:
    """Self-attention along the last grid axis of ``x`` ``(B, R, S, D)``; keys masked by ``key_valid`` ``(B, S)``
    (plain matrix products: faster than ``scaled_dot_product_attention`` on a CPU at head size 8)."""
    batch, rows, length, dim = x.shape
    size = dim // heads
    q, k, v = qkv(norm(x)).reshape(batch, rows, length, 3, heads, size).permute(3, 0, 1, 4, 2, 5)
    bias = torch.zeros(batch, 1, 1, 1, length, device=x.device).masked_fill(~key_valid[:, None, None, None, :], -math.inf)
    weights = (q * size**-0.5 @ k.transpose(-2, -1) + bias).softmax(-1)
    return out((weights @ v).transpose(2, 3).reshape(batch, rows, length, dim))


class AxialBlock(nn.Module):
    """Row attention, column attention, feed-forward (optionally after a depthwise 3x3 convolution); pre-norm,
    residual, padding-masked. ``(B, T, T, D)`` -> same; ``valid`` ``(B, T)`` marks real tokens."""

    def __init__(self, config: AdapterConfig) -> None:
        super().__init__()
        dim = config.dim
        self.heads = config.heads
        self.row_norm, self.row_qkv, self.row_out = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.col_norm, self.col_qkv, self.col_out = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.ff_norm = nn.LayerNorm(dim)
        self.mix = nn.Conv2d(dim, dim, 3, padding=1, groups=dim) if config.local_mix else None
        width = config.ffn_mult * dim
        self.conv_ff = nn.ModuleList([nn.Conv2d(dim, width, 3, padding=1), nn.Conv2d(width, dim, 3, padding=1)])

    def forward(self, x: torch.Tensor, valid: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
        x = (x + _attend(x, self.row_norm, self.row_qkv, self.row_out, self.heads, valid)) * cells
        cols = x.transpose(1, 2)
        cols = cols + _attend(cols, self.col_norm, self.col_qkv, self.col_out, self.heads, valid)
        x = cols.transpose(1, 2) * cells
        h = self.ff_norm(x)
        if self.mix is not None:
            h = h + self.mix((h * cells).permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        mask = cells.permute(0, 3, 1, 2)
        y = F.gelu(self.conv_ff[0]((h * cells).permute(0, 3, 1, 2))) * mask
        y = self.conv_ff[1](y).permute(0, 2, 3, 1)
        return (x + y) * cells


class AxialBackbone(nn.Module):
    """1x1 conv from ``in_channels`` (``C``) into ``dim``, ``depth`` :class:`AxialBlock` s, a final LayerNorm."""

    def __init__(self, in_channels: int, config: AdapterConfig) -> None:
        super().__init__()
        self.embed = nn.Linear(in_channels, config.dim)
        self.transform = config.input_transform
        self.blocks = nn.ModuleList(AxialBlock(config) for _ in range(config.depth))
        self.norm = nn.LayerNorm(config.dim)

    def forward(self, maps: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """``(B, C, T, T)`` maps (sentence ``b`` in the top-left ``lengths[b]`` square) -> ``(features, grid)``:
        ``(B, T, D)`` on the diagonal and ``(B, T, T, D)`` per cell; padding is zero."""
        batch, _, size, _ = maps.shape
        valid = torch.arange(size, device=maps.device)[None, :] < lengths.to(maps.device)[:, None]
        cells = (valid[:, :, None] & valid[:, None, :]).unsqueeze(-1).to(maps.dtype)
        x = self.embed(transform_input(maps, lengths, self.transform).permute(0, 2, 3, 1)) * cells
        for block in self.blocks:
            x = block(x, valid, cells)
        x = self.norm(x) * cells
        return x.diagonal(dim1=1, dim2=2).transpose(1, 2), x  # (B, T, D), (B, T, T, D)


class PackageBackbone(nn.Module):
    """The official backbone: 1x1 conv + ``axial_attention.AxialImageTransformer``, padded cells seen (as
    :class:`AxialBackbone`; ``lengths`` only zero the padded outputs)."""

    def __init__(self, in_channels: int, config: AdapterConfig) -> None:
        super().__init__()
        from axial_attention import AxialImageTransformer

        self.embed = nn.Conv2d(in_channels, config.dim, 1)
        self.transform = config.input_transform
        self.transformer = AxialImageTransformer(dim=config.dim, depth=config.depth, heads=config.heads, reversible=False)

    def forward(self, maps: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        size = maps.shape[-1]
        valid = torch.arange(size, device=maps.device)[None, :] < lengths.to(maps.device)[:, None]
        x = self.transformer(self.embed(transform_input(maps, lengths, self.transform)))
        cells = (valid[:, :, None] & valid[:, None, :]).unsqueeze(-1).to(maps.dtype)
        x = x.permute(0, 2, 3, 1) * cells
        return x.diagonal(dim1=1, dim2=2).transpose(1, 2), x


class TokenHead(nn.Module):
    """POS, NER: LeakyReLU and a linear map per token, ``(B, T, D) -> (B, T, classes)``."""

    def __init__(self, dim: int, num_classes: int) -> None:
        super().__init__()
        self.out = nn.Linear(dim, num_classes)

    def forward(self, features: torch.Tensor, valid: torch.Tensor, **_) -> dict[str, torch.Tensor]:
        return {"logits": self.out(F.leaky_relu(features))}


class RelationHead(nn.Module):
    """RE: mean features over two entity spans (``(B, 4)``: ``e1_start, e1_end, e2_start, e2_end``, end
    exclusive), concatenated, LeakyReLU, linear: ``(B, classes)``."""

    def __init__(self, dim: int, num_classes: int) -> None:
        super().__init__()
        self.out = nn.Linear(2 * dim, num_classes)

    @staticmethod
    def _span_mean(features: torch.Tensor, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(features.shape[1], device=features.device)[None, :]
        member = ((positions >= start[:, None]) & (positions < end[:, None])).to(features.dtype)
        return (member[..., None] * features).sum(1) / member.sum(1, keepdim=True).clamp_min(1.0)

    def forward(self, features: torch.Tensor, valid: torch.Tensor, spans: torch.Tensor, **_) -> dict[str, torch.Tensor]:
        e1 = self._span_mean(features, spans[:, 0], spans[:, 1])
        e2 = self._span_mean(features, spans[:, 2], spans[:, 3])
        return {"logits": self.out(F.leaky_relu(torch.cat([e1, e2], -1)))}


class _SharedDropout(nn.Module):
    """Dropout with one mask per sentence, shared by its tokens (official)."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        keep = torch.empty(x.shape[0], 1, x.shape[2], device=x.device, dtype=x.dtype).bernoulli_(1 - self.p)
        return x * keep / (1 - self.p)


class _MLP(nn.Module):
    def __init__(self, dim: int, width: int, dropout: float) -> None:
        super().__init__()
        self.linear = nn.Linear(dim, width)
        nn.init.orthogonal_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)
        self.drop = _SharedDropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(F.leaky_relu(self.linear(x), 0.1))


class _Biaffine(nn.Module):
    """``s[b, o, i, j] = [x_i; 1]^T W_o [y_j; 1]`` (the ``y`` bias term optional), weights initialised at zero."""

    def __init__(self, width: int, outputs: int, bias_y: bool) -> None:
        super().__init__()
        self.bias_y = bias_y
        self.weight = nn.Parameter(torch.zeros(outputs, width + 1, width + bias_y))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = torch.cat([x, torch.ones_like(x[..., :1])], -1)
        if self.bias_y:
            y = torch.cat([y, torch.ones_like(y[..., :1])], -1)
        return torch.einsum("bix,oxy,bjy->boij", x, self.weight, y)


class BiaffineHead(nn.Module):
    """DP: biaffine arc and relation scorers (Dozat & Manning, 2017) over four orthogonal-init MLPs, as the
    official ``AxialTransformerDPAdapter``; ``pair_scores`` (ours) adds a linear map of grid cell ``(i, j)``.

    Returns ``arc`` ``(B, T, T)`` (``arc[b, i, j]``: token ``j`` heading token ``i``; ``-inf`` for padded ``j``)
    and ``rel`` ``(B, T, T, classes)``.
    """

    def __init__(self, dim: int, num_classes: int, arc_dim: int, rel_dim: int, dropout: float,
                 pair_scores: bool = False) -> None:
        super().__init__()
        self.pair_arc = nn.Linear(dim, 1) if pair_scores else None
        self.pair_rel = nn.Linear(dim, num_classes) if pair_scores else None
        self.arc_dep, self.arc_head = _MLP(dim, arc_dim, dropout), _MLP(dim, arc_dim, dropout)
        self.rel_dep, self.rel_head = _MLP(dim, rel_dim, dropout), _MLP(dim, rel_dim, dropout)
        self.arc = _Biaffine(arc_dim, 1, bias_y=False)
        self.rel = _Biaffine(rel_dim, num_classes, bias_y=True)

    def forward(self, features: torch.Tensor, valid: torch.Tensor, grid: torch.Tensor | None = None,
                **_) -> dict[str, torch.Tensor]:
        arc = self.arc(self.arc_dep(features), self.arc_head(features)).squeeze(1)
        rel = self.rel(self.rel_dep(features), self.rel_head(features)).permute(0, 2, 3, 1)
        if self.pair_arc is not None and grid is not None:
            arc = arc + self.pair_arc(grid).squeeze(-1)
            rel = rel + self.pair_rel(grid)
        arc = arc.masked_fill(~valid[:, None, :], float("-inf"))
        return {"arc": arc, "rel": rel}


class ToaModel(nn.Module):
    """The whole adapter: the backbone ``config.backbone`` names plus the head of ``task`` (``"tokens"``,
    ``"relation"``, ``"dependency"``)."""

    def __init__(self, task: str, in_channels: int, num_classes: int, config: AdapterConfig) -> None:
        super().__init__()
        self.task = task
        self.backbone = (AxialBackbone if config.backbone == "masked" else PackageBackbone)(in_channels, config)
        if task == "tokens":
            self.head = TokenHead(config.dim, num_classes)
        elif task == "relation":
            self.head = RelationHead(config.dim, num_classes)
        else:
            self.head = BiaffineHead(config.dim, num_classes, config.arc_dim, config.rel_dim, config.mlp_dropout,
                                     config.pair_scores)

    def forward(self, maps: torch.Tensor, lengths: torch.Tensor, **task_inputs) -> dict[str, torch.Tensor]:
        """Head outputs for a padded batch (as :meth:`AxialBackbone.forward`; ``spans`` for the relation head):
        ``{"logits": (B, T, classes)}``, ``{"logits": (B, classes)}`` or ``{"arc": (B, T, T), "rel": (B, T, T, classes)}``."""
        features, grid = self.backbone(maps, lengths)
        valid = torch.arange(maps.shape[-1], device=maps.device)[None, :] < lengths.to(maps.device)[:, None]
        return self.head(features, valid, grid=grid, **task_inputs)
