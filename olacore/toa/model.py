"""The TOA adapter network (paper section 4.4): axial attention over the ``T x T`` OLA image, one head per task.

**Backbone.** The official adapter (``models/adapters.py``, ``AxialTransformerAdapter`` and its RE / DP siblings) is
a 1x1 convolution into ``hidden_size`` (768), then the ``axial-attention`` package's ``AxialImageTransformer`` (depth
5, 8 heads, reversible; per layer row and column self-attention, each pre-LayerNorm, then two feed-forwards of
channel LayerNorm + 3x3 conv to ``4 * dim`` + LeakyReLU + 3x3 conv back; no positional embedding, no padding mask),
read on the diagonal cell ``(t, t)``. Its batches are left-padded (``data_utils/data_manager.py``), so padded cells
take part in every attention.

:class:`AxialBackbone` is this network, attention written as plain matrix products, with a **padding mask** (a departure: a
sentence's output does not depend on its batch). Per block: row attention, column attention, one feed-forward
of two 3x3 convolutions as the official ones, optionally after a depthwise 3x3 convolution (``local_mix``); a final
LayerNorm. It returns the diagonal (token features) and the whole grid
(read by the DP head when ``pair_scores`` is on). No positional embedding, as officially.
:class:`PackageBackbone` wraps the official package (no mask) for the padding-leakage comparison.

**Heads** read ``(B, T, D)`` token features and a ``(B, T)`` mask of real tokens (``models/adapters.py``,
``models/ola_model.py``):

- **Token labels** (POS, NER; ``AxialTransformerAdapter``): LeakyReLU, a 1x1 conv to the classes on the diagonal
  (a linear map per token); cross-entropy, the NER ``O`` class at half weight.
- **Relation** (RE; ``AxialTransformerReAdapter``): the mean token features over each entity's span
  ``[start, end)``, concatenated, LeakyReLU, a linear map to the 19 classes; cross-entropy.
- **Dependency parsing** (``AxialTransformerDPAdapter``): four MLPs (linear, LeakyReLU 0.1, dropout shared across
  positions, orthogonal init) give arc (512) and relation (128) dependent / head vectors; a biaffine arc scorer
  (bias on the dependent side only) and relation scorer (both biases), zero-initialised; padded head candidates
  ``-inf``; every token, special tokens included, is a candidate head. Our addition (``AdapterConfig.pair_scores``,
  on by default): a linear map of grid cell ``(i, j)`` is added to the arc and relation scores of dependent ``i``
  and head ``j``.

**ROOT** follows the official convention (``data_utils/dp_utils.py``, ``map_ola_data``: a word whose head is 0 gets
itself as head): the root word's arc points to its own first sub-token, so no ROOT vector is learned, the parser
reads OLA only and works with or without a BOS/[CLS] token.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any, Literal

import torch
import torch.nn as nn
import torch.nn.functional as F

from olacore.settings import Bool, Fraction, PositiveInt, settings_class

__all__ = ["AdapterConfig", "AxialBlock", "AxialBackbone", "PackageBackbone", "make_backbone", "BACKBONES",
           "HEAD_KINDS", "TokenHead", "RelationHead", "BiaffineHead", "ToaModel"]

BACKBONES = ("masked", "package")
INPUT_TRANSFORMS = ("log-length", "none")


def transform_input(maps: torch.Tensor, lengths: torch.Tensor, transform: str) -> torch.Tensor:
    """Rescale non-negative maps before the 1x1 convolution: ``log1p(T m)`` (``"log-length"``) or ``m`` (``"none"``).

    ``maps`` ``(B, C, T, T)``, ``lengths`` ``(B,)`` real tokens ``T``. ``T m`` puts a uniform row at 1 for every
    length; ``log1p`` tames the sink peaks (up to ``T``). Default measured on minilm-l6 DP (book/design.md).
    """
    if transform == "none":
        return maps
    return torch.log1p(maps * lengths.to(maps)[:, None, None, None])


@settings_class
class AdapterConfig:
    """Sizes of the TOA adapter (backbone and task heads).

    Official sizes (``models/adapters.py``, ``utils/arguments.py``, DP configs): ``dim`` 768 (512 in the CLM DP
    configs), ``depth`` 5, ``heads`` 8, two feed-forwards per layer of 3x3 convolutions 4x wide, DP MLPs 512 (arc) /
    128 (relation), dropout 0.33. Departure: the default is scaled down to fit a CPU (``dim`` 32, 2 blocks, one
    feed-forward per block, 2x wide, plus a depthwise 3x3 convolution) and adds ``pair_scores`` and the ``log1p(T m)``
    input; sizes and additions measured on EWT DP (minilm-l6, smollm2-135m; book/design.md).

    Attributes:
        dim: channels of every cell of the grid (official 768).
        depth: axial blocks (official 5).
        heads: attention heads; must divide ``dim`` (official 8).
        ffn_mult: width of the feed-forward as a multiple of ``dim`` (official 4).
        ffn_kernel: the feed-forward's ``3 x 3`` convolutions (official; the only size).
        local_mix: a depthwise 3x3 convolution in each feed-forward.
        arc_dim, rel_dim: widths of the DP head's arc and relation MLPs (official 512, 128).
        mlp_dropout: the DP head's shared dropout (official 0.33).
        pair_scores: the DP head also scores the pair cell ``(i, j)`` (official: diagonal features only).
        input_transform: :func:`transform_input` (official ``"none"``).
        backbone: ``"masked"`` (:class:`AxialBackbone`) or ``"package"`` (the official network, no padding mask).

    Raises:
        olacore.settings.SettingsError: (a ValueError, one line naming the field) a bad size, ``heads`` not dividing
            ``dim``, a dropout outside ``[0, 1)``, an unknown option.
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
    input_transform: Literal[INPUT_TRANSFORMS] = "log-length"
    backbone: Literal[BACKBONES] = "masked"

    def __post_init__(self) -> None:
        if self.dim % self.heads:
            raise ValueError(f"AdapterConfig.heads ({self.heads}) must divide dim ({self.dim})")

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (cache keys, records)."""
        return asdict(self)


def _attend(x: torch.Tensor, norm: nn.LayerNorm, qkv: nn.Linear, out: nn.Linear, heads: int,
            key_valid: torch.Tensor) -> torch.Tensor:
    """Self-attention along the last grid axis of ``x`` (B, R, S, D); keys masked by ``key_valid`` (B, S).

    Plain matrix products, not ``scaled_dot_product_attention``: at head size 8 PyTorch's CPU kernel is slower
    (one adapter training step at grid 20: 55 ms against 60, equal at grid 40; one core, Zen 4).
    """
    batch, rows, length, dim = x.shape
    size = dim // heads
    q, k, v = qkv(norm(x)).reshape(batch, rows, length, 3, heads, size).permute(3, 0, 1, 4, 2, 5)
    bias = torch.zeros(batch, 1, 1, 1, length, device=x.device).masked_fill(~key_valid[:, None, None, None, :], -math.inf)
    weights = (q * size**-0.5 @ k.transpose(-2, -1) + bias).softmax(-1)
    return out((weights @ v).transpose(2, 3).reshape(batch, rows, length, dim))


class AxialBlock(nn.Module):
    """Row attention, column attention, feed-forward; pre-norm, residual, padding-masked.

    Input and output ``(B, T, T, D)`` (channels last); ``valid`` ``(B, T)`` marks real tokens.
    """

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
        """Token features from the diagonal.

        Args:
            maps: ``(B, C, T, T)`` float, sentence ``b`` in the top-left ``lengths[b]`` square (padding values ignored).
            lengths: ``(B,)`` int, real tokens per sentence (``>= 1``).

        Returns:
            ``(features, grid)``: ``(B, T, D)`` per token (the diagonal) and ``(B, T, T, D)`` per cell (after the final
            LayerNorm); padded tokens and cells are zero.
        """
        batch, _, size, _ = maps.shape
        valid = torch.arange(size, device=maps.device)[None, :] < lengths.to(maps.device)[:, None]
        cells = (valid[:, :, None] & valid[:, None, :]).unsqueeze(-1).to(maps.dtype)
        x = self.embed(transform_input(maps, lengths, self.transform).permute(0, 2, 3, 1)) * cells
        for block in self.blocks:
            x = block(x, valid, cells)
        x = self.norm(x) * cells
        return x.diagonal(dim1=1, dim2=2).transpose(1, 2), x  # (B, T, D), (B, T, T, D)


class PackageBackbone(nn.Module):
    """The official backbone: 1x1 conv + ``axial_attention.AxialImageTransformer`` (no padding mask).

    Same interface as :class:`AxialBackbone`; the network sees the padded cells, as the official one does, and
    ``lengths`` only zero the padded outputs. ``reversible=False`` (saves memory, not results). For padding leakage.
    """

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


def make_backbone(in_channels: int, config: AdapterConfig) -> nn.Module:
    """The backbone ``config.backbone`` names."""
    return (AxialBackbone if config.backbone == "masked" else PackageBackbone)(in_channels, config)


#: The kinds of head, by what they predict.
HEAD_KINDS = ("tokens", "relation", "dependency")


class TokenHead(nn.Module):
    """LeakyReLU and a linear map to ``num_classes`` per token: ``(B, T, D) -> (B, T, classes)``."""

    def __init__(self, dim: int, num_classes: int) -> None:
        super().__init__()
        self.out = nn.Linear(dim, num_classes)

    def forward(self, features: torch.Tensor, valid: torch.Tensor, **_) -> dict[str, torch.Tensor]:
        return {"logits": self.out(F.leaky_relu(features))}


class RelationHead(nn.Module):
    """Mean features over two entity spans, concatenated, LeakyReLU, linear: ``(B, classes)``.

    ``spans`` is ``(B, 4)`` long: ``e1_start, e1_end, e2_start, e2_end`` (token indices, end
    exclusive, each span non-empty).
    """

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
    """Dropout with one mask per sentence, shared by all its tokens (as the official MLPs)."""

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
    """``s[b, o, i, j] = [x_i; 1]^T W_o [y_j; 1]`` (bias terms optional), weights initialised at zero."""

    def __init__(self, width: int, outputs: int, bias_x: bool, bias_y: bool) -> None:
        super().__init__()
        self.bias_x, self.bias_y = bias_x, bias_y
        self.weight = nn.Parameter(torch.zeros(outputs, width + bias_x, width + bias_y))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.bias_x:
            x = torch.cat([x, torch.ones_like(x[..., :1])], -1)
        if self.bias_y:
            y = torch.cat([y, torch.ones_like(y[..., :1])], -1)
        return torch.einsum("bix,oxy,bjy->boij", x, self.weight, y)


class BiaffineHead(nn.Module):
    """Biaffine arc and relation scorers (Dozat & Manning, 2017) over token features.

    Returns ``arc`` ``(B, T, T)`` (``arc[b, i, j]``: score of token ``j`` heading token ``i``;
    ``-inf`` for padded ``j``) and ``rel`` ``(B, T, T, classes)``.
    """

    def __init__(self, dim: int, num_classes: int, arc_dim: int, rel_dim: int, dropout: float,
                 pair_scores: bool = False) -> None:
        super().__init__()
        self.pair_arc = nn.Linear(dim, 1) if pair_scores else None
        self.pair_rel = nn.Linear(dim, num_classes) if pair_scores else None
        self.arc_dep, self.arc_head = _MLP(dim, arc_dim, dropout), _MLP(dim, arc_dim, dropout)
        self.rel_dep, self.rel_head = _MLP(dim, rel_dim, dropout), _MLP(dim, rel_dim, dropout)
        self.arc = _Biaffine(arc_dim, 1, bias_x=True, bias_y=False)
        self.rel = _Biaffine(rel_dim, num_classes, bias_x=True, bias_y=True)

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
    """The whole adapter: backbone (:func:`olacore.toa.model.make_backbone`) plus one task head.

    Args:
        task: ``"tokens"`` (POS, NER), ``"relation"`` (RE) or ``"dependency"`` (DP).
        in_channels: ``C`` of the input maps.
        num_classes: label classes of the task (tags, relations, dependency relations).

    Raises:
        ValueError: an unknown head kind.
    """

    def __init__(self, task: str, in_channels: int, num_classes: int, config: AdapterConfig) -> None:
        super().__init__()
        if task not in HEAD_KINDS:
            raise ValueError(f"unknown task {task!r}; choose one of {HEAD_KINDS}")
        self.task = task
        self.backbone = make_backbone(in_channels, config)
        if task == "tokens":
            self.head = TokenHead(config.dim, num_classes)
        elif task == "relation":
            self.head = RelationHead(config.dim, num_classes)
        else:
            self.head = BiaffineHead(config.dim, num_classes, config.arc_dim, config.rel_dim, config.mlp_dropout,
                                     config.pair_scores)

    def forward(self, maps: torch.Tensor, lengths: torch.Tensor, **task_inputs) -> dict[str, torch.Tensor]:
        """Head outputs for a padded batch (``maps``, ``lengths`` as for :meth:`AxialBackbone.forward`).

        Args:
            **task_inputs: ``spans`` ``(B, 4)`` for the relation head.

        Returns:
            ``{"logits": (B, T, classes)}`` (tokens), ``{"logits": (B, classes)}`` (relation),
            ``{"arc": (B, T, T), "rel": (B, T, T, classes)}`` (dependency).
        """
        features, grid = self.backbone(maps, lengths)
        valid = torch.arange(maps.shape[-1], device=maps.device)[None, :] < lengths.to(maps.device)[:, None]
        return self.head(features, valid, grid=grid, **task_inputs)
