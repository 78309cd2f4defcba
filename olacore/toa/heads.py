"""TOA task heads on the adapter's diagonal token features, and the adapter as one module.

Each head reads ``(B, T, D)`` token features (:mod:`olacore.toa.adapter`) and a ``(B, T)``
mask of real tokens. Official details (``models/adapters.py``, ``models/ola_model.py``):

- **Token labels** (POS, NER; ``AxialTransformerAdapter``): LeakyReLU, then a 1x1 conv to the
  classes, read on the diagonal; equivalent to a LeakyReLU and a linear map per token.
  Cross-entropy over all labelled tokens; for NER the ``O`` class gets half weight.
- **Relation** (RE; ``AxialTransformerReAdapter``): the mean of the token features over each
  entity's token span ``[start, end)``, the two means concatenated, LeakyReLU, a linear map
  to the 19 classes; cross-entropy.
- **Dependency parsing** (``AxialTransformerDPAdapter``): four MLPs (linear, LeakyReLU 0.1,
  dropout shared across positions, orthogonal init) give arc-dependent / arc-head (512) and
  relation-dependent / relation-head (128) vectors; a biaffine arc scorer (bias on the
  dependent side only) and a biaffine relation scorer (both biases), their weights
  initialised at zero; arc scores of padded head candidates set to ``-inf``. Every token,
  special tokens included, is a candidate head. Our addition (``AdapterConfig.pair_scores``,
  on by default): a linear map of the grid cell ``(i, j)`` is added to the arc score and the
  relation scores of dependent ``i`` and head ``j``, so the parser also reads the pair's own
  cell, not only what the two diagonal cells summarise.

**ROOT** follows the official convention (``data_utils/dp_utils.py``, ``map_ola_data``: a word
whose head is 0 gets itself as head): the root word's arc points to its own first
sub-token, so no ROOT vector is learned and the same head works for tokenizers with and
without a BOS/[CLS] token (Qwen adds none). A learned ROOT vector would add a candidate that
no OLA map has a row or column for; the self-loop keeps the parser reading OLA only.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from olacore.toa.adapter import AdapterConfig, make_backbone

__all__ = ["TASKS", "TokenHead", "RelationHead", "BiaffineHead", "ToaModel"]

TASKS = ("tokens", "relation", "dependency")


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
    """The whole adapter: backbone (:func:`olacore.toa.adapter.make_backbone`) plus one task head.

    Args:
        task: ``"tokens"`` (POS, NER), ``"relation"`` (RE) or ``"dependency"`` (DP).
        in_channels: ``C`` of the input maps.
        num_classes: label classes of the task (tags, relations, dependency relations).
        config: sizes.

    Raises:
        ValueError: unknown task, non-positive ``num_classes`` or ``in_channels``.
    """

    def __init__(self, task: str, in_channels: int, num_classes: int, config: AdapterConfig) -> None:
        super().__init__()
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; choose one of {TASKS}")
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes <= 0:
            raise ValueError(f"num_classes must be a positive int; got {num_classes!r}")
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
        """Head outputs for a padded batch.

        Args:
            maps: ``(B, C, T, T)``; sentence ``b`` fills the top-left ``lengths[b]`` square.
            lengths: ``(B,)`` real tokens per sentence.
            **task_inputs: ``spans`` ``(B, 4)`` for the relation head.

        Returns:
            ``{"logits": (B, T, classes)}`` (tokens), ``{"logits": (B, classes)}`` (relation),
            ``{"arc": (B, T, T), "rel": (B, T, T, classes)}`` (dependency).
        """
        features, grid = self.backbone(maps, lengths)
        valid = torch.arange(maps.shape[-1], device=maps.device)[None, :] < lengths.to(maps.device)[:, None]
        return self.head(features, valid, grid=grid, **task_inputs)
