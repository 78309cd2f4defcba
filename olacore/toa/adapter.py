"""The TOA adapter backbone: an axial-attention transformer over the ``T x T`` OLA image.

Paper section 4.4. The official adapter (``models/adapters.py``, ``AxialTransformerAdapter``
and its RE / DP siblings) is a 1x1 convolution from the input channels into ``hidden_size``
(768), then the ``axial-attention`` package's ``AxialImageTransformer`` (depth 5, 8 heads,
reversible; per layer: row self-attention and column self-attention, each pre-LayerNorm,
then two feed-forwards of channel LayerNorm + 3x3 conv to ``4 * dim`` + LeakyReLU + 3x3 conv
back; no positional embedding; no padding mask), and reads each token's features from the
diagonal cell ``(t, t)``. Batches are left-padded there (``data_utils/data_manager.py``), so
padded cells take part in every attention.

:class:`AxialBackbone` is this network, written on ``torch.nn.functional.scaled_dot_product_attention``
with a **padding mask**: a padded cell is never attended to and is zeroed after every
sub-layer, so a sentence's output does not depend on what it is batched with. Per block:
pre-norm row attention, pre-norm column attention, one pre-norm feed-forward (position-wise,
``ffn_mult * dim`` wide) with an optional depthwise 3x3 convolution (``local_mix``) standing
in for the official 3x3 convolutions at a small fraction of their cost; a final LayerNorm on
every cell. The backbone returns the diagonal (token features) and the whole grid (pair
features, read by the DP head when ``pair_scores`` is on). No positional embedding by
default, as in the official network: the adapter knows where a token is only through the
maps (and the zero padding of its 3x3 convolutions). :class:`PackageBackbone` wraps the official package itself
(no mask) for the padding-leakage comparison.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["AdapterConfig", "AxialBlock", "AxialBackbone", "PackageBackbone", "make_backbone", "BACKBONES"]

BACKBONES = ("masked", "package")
INPUT_TRANSFORMS = ("log-length", "length", "none")


def transform_input(maps: torch.Tensor, lengths: torch.Tensor, transform: str) -> torch.Tensor:
    """Rescale non-negative maps before the 1x1 convolution: ``log1p(T m)``, ``T m`` or ``m``.

    Row-normalised maps have entries near ``1/T``; multiplying by the sentence's token count
    ``T`` puts a uniform row at 1 for every length, and ``log1p`` tames the sink peaks (up to
    ``T``). On the minilm-l6 DP task (250 sentences, 6 epochs) ``"length"`` and ``"log-length"``
    both raised test UAS from 40 to 49 over ``"none"``.

    Args:
        maps: ``(B, C, T, T)`` non-negative.
        lengths: ``(B,)`` real tokens per sentence.
        transform: one of :data:`INPUT_TRANSFORMS`.
    """
    if transform == "none":
        return maps
    scaled = maps * lengths.to(maps)[:, None, None, None]
    return torch.log1p(scaled) if transform == "log-length" else scaled


@dataclass(frozen=True)
class AdapterConfig:
    """Sizes of the TOA adapter (backbone and task heads).

    The official sizes (``models/adapters.py``, ``utils/arguments.py``, DP configs) are
    ``dim`` 768 (512 in the CLM DP configs), ``depth`` 5, ``heads`` 8, two feed-forwards per
    layer of 3x3 convolutions 4x wide, DP MLPs 512 (arc) / 128 (relation), dropout 0.33:
    450 million parameters with the DP head (counted on the package network at that size),
    far beyond a 2-core CPU. The default is scaled down 24x in width (``dim`` 32) and 2.5x in
    depth (2 blocks), with one feed-forward per block (two 3x3 convolutions, 2x wide, plus a
    depthwise 3x3 convolution): 92 thousand parameters in the backbone, 159 thousand with
    the DP head (50 relations), about 2,800x fewer; it trains on the syntax chapter's 500 EWT
    sentences in well under a minute per epoch on one CPU thread (``benchmarks/bench_toa.py``).
    Two additions to the official network were measured to matter at this size (minilm-l6
    DP, :class:`olacore.profiles.SyntaxSettings`): arc and relation scores also read from the pair cell
    (``pair_scores``) and the ``log1p(T m)`` input (``input_transform``).

    Attributes:
        dim: channels of every cell of the grid (official 768).
        depth: axial blocks (official 5).
        heads: attention heads; must divide ``dim`` (official 8).
        ffn_mult: width of the feed-forward as a multiple of ``dim`` (official 4).
        ffn_kernel: 1: a position-wise feed-forward; 3 or 5: its two layers are ``k x k``
            convolutions over the grid, as the official ones (3x3), about 9x the cost.
        local_mix: a depthwise 3x3 convolution in each feed-forward (the official one uses
            full 3x3 convolutions).
        dropout: dropout on attention and feed-forward outputs.
        arc_dim, rel_dim: widths of the DP head's arc and relation MLPs (official 512, 128).
        mlp_dropout: the DP head's shared dropout (official 0.33).
        pair_scores: the DP head adds a linear score of the pair cell ``(i, j)`` of the
            grid to the biaffine arc and relation scores of dependent ``i`` and head ``j``
            (official: diagonal features only).
        input_transform: ``"log-length"``, ``"length"`` or ``"none"`` (official), see
            :func:`transform_input`.
        offset_embedding: a learned embedding of the cell offset ``j - i`` (clipped to this
            reach) added to every cell; ``0`` (default, official): none. It gives the adapter
            positions; it did not help (smollm2-135m DP order 1: 40.1 UAS without, 38.8 with).
        backbone: ``"masked"`` (:class:`AxialBackbone`) or ``"package"`` (the official
            ``axial-attention`` network, no padding mask).

    Raises:
        ValueError: a size that is not a positive int, ``heads`` not dividing ``dim``, a
            dropout outside ``[0, 1)``, or an unknown backbone; the message names the field.
    """

    dim: int = 32
    depth: int = 2
    heads: int = 4
    ffn_mult: int = 2
    ffn_kernel: int = 3
    local_mix: bool = True
    dropout: float = 0.0
    arc_dim: int = 64
    rel_dim: int = 32
    mlp_dropout: float = 0.33
    pair_scores: bool = True
    input_transform: str = "log-length"
    offset_embedding: int = 0
    backbone: str = "masked"

    def __post_init__(self) -> None:
        if isinstance(self.offset_embedding, bool) or not isinstance(self.offset_embedding, int) or self.offset_embedding < 0:
            raise ValueError(f"AdapterConfig.offset_embedding must be an int >= 0; got {self.offset_embedding!r}")
        if self.ffn_kernel not in (1, 3, 5):
            raise ValueError(f"AdapterConfig.ffn_kernel must be 1, 3 or 5; got {self.ffn_kernel!r}")
        for name in ("dim", "depth", "heads", "ffn_mult", "arc_dim", "rel_dim"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"AdapterConfig.{name} must be a positive int; got {value!r}")
        if self.dim % self.heads:
            raise ValueError(f"AdapterConfig.heads ({self.heads}) must divide dim ({self.dim})")
        for name in ("dropout", "mlp_dropout"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"AdapterConfig.{name} must be in [0, 1); got {value!r}")
        if self.input_transform not in INPUT_TRANSFORMS:
            raise ValueError(f"AdapterConfig.input_transform must be one of {INPUT_TRANSFORMS}; got {self.input_transform!r}")
        if self.backbone not in BACKBONES:
            raise ValueError(f"AdapterConfig.backbone must be one of {BACKBONES}; got {self.backbone!r}")

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (cache keys, records)."""
        return asdict(self)


def _attend(x: torch.Tensor, norm: nn.LayerNorm, qkv: nn.Linear, out: nn.Linear, heads: int,
            key_valid: torch.Tensor, dropout: float) -> torch.Tensor:
    """Self-attention along the last grid axis of ``x`` (B, R, S, D); keys masked by ``key_valid`` (B, S)."""
    batch, rows, length, dim = x.shape
    q, k, v = qkv(norm(x)).reshape(batch * rows, length, 3, heads, dim // heads).permute(2, 0, 3, 1, 4)
    mask = key_valid[:, None, :].expand(batch, rows, length).reshape(batch * rows, 1, 1, length)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
    return out(y.transpose(1, 2).reshape(batch, rows, length, dim))


class AxialBlock(nn.Module):
    """Row attention, column attention, feed-forward; pre-norm, residual, padding-masked.

    Input and output ``(B, T, T, D)`` (channels last); ``valid`` ``(B, T)`` marks real tokens.
    """

    def __init__(self, config: AdapterConfig) -> None:
        super().__init__()
        dim = config.dim
        self.heads, self.dropout = config.heads, config.dropout
        self.row_norm, self.row_qkv, self.row_out = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.col_norm, self.col_qkv, self.col_out = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.ff_norm = nn.LayerNorm(dim)
        self.mix = nn.Conv2d(dim, dim, 3, padding=1, groups=dim) if config.local_mix else None
        width, k = config.ffn_mult * dim, config.ffn_kernel
        if k == 1:
            self.ff = nn.Sequential(nn.Linear(dim, width), nn.GELU(), nn.Linear(width, dim))
            self.conv_ff = None
        else:
            self.ff = None
            self.conv_ff = nn.ModuleList([nn.Conv2d(dim, width, k, padding=k // 2), nn.Conv2d(width, dim, k, padding=k // 2)])
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, valid: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
        p = self.dropout if self.training else 0.0
        x = (x + self.drop(_attend(x, self.row_norm, self.row_qkv, self.row_out, self.heads, valid, p))) * cells
        cols = x.transpose(1, 2)
        cols = (cols + self.drop(_attend(cols, self.col_norm, self.col_qkv, self.col_out, self.heads, valid, p)))
        x = cols.transpose(1, 2) * cells
        h = self.ff_norm(x)
        if self.mix is not None:
            h = h + self.mix((h * cells).permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        if self.ff is not None:
            return (x + self.drop(self.ff(h))) * cells
        mask = cells.permute(0, 3, 1, 2)
        y = F.gelu(self.conv_ff[0]((h * cells).permute(0, 3, 1, 2))) * mask
        y = self.conv_ff[1](y).permute(0, 2, 3, 1)
        return (x + self.drop(y)) * cells


class AxialBackbone(nn.Module):
    """1x1 conv into ``dim``, ``depth`` :class:`AxialBlock` s, the diagonal, a final LayerNorm.

    Args:
        in_channels: ``C`` of the input.
        config: sizes.
    """

    def __init__(self, in_channels: int, config: AdapterConfig) -> None:
        super().__init__()
        if isinstance(in_channels, bool) or not isinstance(in_channels, int) or in_channels <= 0:
            raise ValueError(f"in_channels must be a positive int; got {in_channels!r}")
        self.embed = nn.Linear(in_channels, config.dim)
        self.transform = config.input_transform
        self.reach = config.offset_embedding
        self.offsets = nn.Embedding(2 * self.reach + 1, config.dim) if self.reach else None
        self.blocks = nn.ModuleList(AxialBlock(config) for _ in range(config.depth))
        self.norm = nn.LayerNorm(config.dim)

    def forward(self, maps: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Token features from the diagonal.

        Args:
            maps: ``(B, C, T, T)`` float, sentence ``b`` in the top-left ``lengths[b]`` square
                (the rest is padding; its values are ignored).
            lengths: ``(B,)`` int, real tokens per sentence (``>= 1``).

        Returns:
            ``(features, grid)``: ``(B, T, D)`` features of each token, read on the diagonal,
            and ``(B, T, T, D)`` features of every cell (after the final LayerNorm); padded
            tokens and cells are zero.
        """
        batch, _, size, _ = maps.shape
        valid = torch.arange(size, device=maps.device)[None, :] < lengths.to(maps.device)[:, None]
        cells = (valid[:, :, None] & valid[:, None, :]).unsqueeze(-1).to(maps.dtype)
        x = self.embed(transform_input(maps, lengths, self.transform).permute(0, 2, 3, 1))
        if self.offsets is not None:
            positions = torch.arange(size, device=maps.device)
            offset = (positions[None, :] - positions[:, None]).clamp(-self.reach, self.reach) + self.reach
            x = x + self.offsets(offset)
        x = x * cells
        for block in self.blocks:
            x = block(x, valid, cells)
        x = self.norm(x) * cells
        return x.diagonal(dim1=1, dim2=2).transpose(1, 2), x  # (B, T, D), (B, T, T, D)


class PackageBackbone(nn.Module):
    """The official backbone: 1x1 conv + ``axial_attention.AxialImageTransformer`` (no padding mask).

    Same interface as :class:`AxialBackbone`; ``lengths`` only zero the padded rows of the
    output (the network itself sees the padded cells, as the official one does). The
    feed-forwards are the package's (3x3 convolutions, 4x wide); ``reversible=False`` (the
    reversible form saves memory, not results). Used to measure padding leakage.
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
