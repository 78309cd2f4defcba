"""ALTI: each token's share of each layer's attention-block output, read from one hooked forward pass, and its
rollout across layers (the ALTI row of the paper's visual-proxy table; Ferrando, Gallego and Costa-jussa, EMNLP 2022).

The block output at query token ``i`` is a sum of one *transformed vector* per input token plus terms no token owns;
token ``j``'s contribution is its L1 proximity, normalised per row; layers are aggregated by rollout (no identity
added: the residual is inside each ``C``):

    y_i = sum_j T_i(x_j) + bias_i,      T_i(x_j) = N_i( sum_h A^h_ij v^h_j W_O^h + [i = j] x_j ),
    c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1),     C_ij = c_ij / sum_k c_ik,     C^(N) ... C^(1)

(``A^h`` head ``h``'s attention, ``v^h_j`` token ``j``'s value vector, ``W_O^h`` the head's slice of the output
projection, ``x_j`` the residual, ``N_i`` the norm linearised at token ``i``'s real statistic, so the decomposition is
exact).

As the ALTI reference (mt-upc/transformer-contributions ``src/contributions.py``; the OLAS copy
``utils/contributions.py``, aggregated by ``get_alti_attention`` in ``models/ola_utils.py``), except: the norm's own
``sqrt(var + eps)`` statistic (not ``std`` of ``pre_ln_states + eps``); Gemma's post-attention RMSNorm linearised;
grouped-query value heads repeated per query group; an all-zero row becomes the identity row, with a warning.

Tensors of one text: ``(T, T)`` per layer, ``(N, T, T)`` for all layers (layer 1 first).
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Sequence

import torch

from olacore.extraction import (ALTIFamily, Extraction, LayerWeights, _attention_budget, _attention_bytes, _forward,
                                _head_means, family_of, layer_weights, record_layers, run_batched, tokenize)
from olacore.loading import LoadedModel
from olacore.settings import fixed_threads

__all__ = ["ALTIResult", "alti", "alti_rollout", "layer_factors", "layer_contributions"]


@dataclass
class ALTIResult:
    """ALTI of one text.

    Attributes:
        contributions: ``(N, T, T)`` float32 CPU, layer 1 first; ``contributions[l, i, j]`` is token ``j``'s share of
            layer ``l + 1``'s block output at token ``i``; rows sum to 1.
        rollout: ``(T, T)`` float32 CPU, ``C^(N) ... C^(1)``; rows sum to 1.
    """

    text: str
    tokens: list[str]
    offsets: list[tuple[int, int]]
    is_causal: bool
    contributions: torch.Tensor
    rollout: torch.Tensor


@dataclass
class _ALTIPass(ALTIResult):
    """An :class:`ALTIResult` and the ``(N, T, T)`` attention of the same pass (``None`` over the attention budget)."""

    attentions: torch.Tensor | None = None

    def alti(self) -> ALTIResult:
        return ALTIResult(**{f.name: getattr(self, f.name) for f in dataclasses.fields(ALTIResult)})

    def extraction(self) -> Extraction:
        return Extraction(self.text, self.tokens, self.offsets, self.is_causal, self.attentions)


def _batch_forward(model: LoadedModel, family: ALTIFamily, weights: list[LayerWeights]):
    """``forward(batch)`` for :func:`~olacore.extraction.run_batched`: per text ``(contributions, attention)``; the
    attention is ``None`` for texts whose attention is over the budget (they run alone)."""
    budget = _attention_budget()

    def forward(batch: list[list[int]]) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        attention = _attention_bytes(model, len(batch[0])) <= budget
        layers: list[list[torch.Tensor | None]] = [[None] * model.num_layers for _ in batch]

        def on_layer(layer: int, record: dict) -> None:
            for row in range(len(batch)):
                one = {key: tensor[row] for key, tensor in record.items()}
                left, right, _ = layer_factors(one, weights[layer], family)
                layers[row][layer] = layer_contributions(left, right, one["output"], model.is_causal).cpu()

        with record_layers(model.backbone, family, on_layer):
            outputs = _forward(model, batch, output_attentions=attention or family.needs_output_attentions)
        maps = _head_means(model, outputs) if attention else [None] * len(batch)
        return [(torch.stack(row), map_) for row, map_ in zip(layers, maps)]

    return forward


def _alti_pass(model: LoadedModel, texts: Sequence[str], progress: bool = True) -> list[_ALTIPass]:
    """:func:`alti` with the head-averaged attention of the same pass (``None`` over the attention budget)."""
    family = family_of(model.backbone)  # fails before tokenizing
    encoded = tokenize(model, texts)
    weights = [layer_weights(model.backbone, family, layer) for layer in range(model.num_layers)]
    with torch.inference_mode(), fixed_threads():  # cached numbers must not depend on the thread count
        done = run_batched(model, [ids for ids, _, _ in encoded], _batch_forward(model, family, weights), kind="alti",
                           covers="attention", progress=progress)
    return [_ALTIPass(text=text, tokens=tokens, offsets=offsets, is_causal=model.is_causal,
                      contributions=contributions.float().clone(),  # outside inference mode: editable
                      rollout=alti_rollout(contributions).float().clone(),
                      attentions=None if attentions is None else attentions.clone())
            for text, (_, tokens, offsets), (contributions, attentions) in zip(texts, encoded, done)]


def alti(model: LoadedModel, texts: Sequence[str], *, progress: bool = True) -> list[ALTIResult]:
    """ALTI contributions of every layer and their rollout: one :class:`ALTIResult` per text, in order, bit-identical
    whatever other texts are in the call.

    Raises:
        ValueError: uncovered architecture (lists the covered families); empty text; text longer than the context.
        RuntimeError: the model does not run eager attention (says how to load it).
    """
    return [result.alti() for result in _alti_pass(model, texts, progress=progress)]


_CHUNK_ELEMENTS = 2**23  # T_i(x_j) - y_i values held at once (32 MB in float32)
_CAUSAL_BLOCKS = 8  # key blocks for causal models: blocks skip the keys after their queries


def _normalise(proximity: torch.Tensor, causal: bool) -> torch.Tensor:
    """Clip at zero, zero the future for causal models, divide each row by its sum."""
    c = proximity.clamp(min=0)
    if causal:
        c = c.tril()
    total = c.sum(-1, keepdim=True)
    empty = total[:, 0] <= 0
    if bool(empty.any()):
        warnings.warn(f"ALTI: {int(empty.sum())} row(s) had no positive contribution; set to the identity row",
                      RuntimeWarning,
                      stacklevel=3,)
        c[empty] = torch.eye(c.shape[-1], dtype=c.dtype, device=c.device)[empty]
        total = c.sum(-1, keepdim=True)
    return c / total


def alti_rollout(contributions: torch.Tensor) -> torch.Tensor:
    """ALTI's aggregation across layers (the paper's rollout): ``C^(N) @ ... @ C^(1)`` in float64.

    ``(N, T, T)`` contributions, layer 1 first -> ``(T, T)`` float64 on the input's device; rows sum to 1.
    """
    layers = contributions.double()
    total = layers[0]
    for layer in layers[1:]:
        total = layer @ total
    return total


def _norm_scale(norm_input: torch.Tensor, kind: str, eps: float) -> torch.Tensor:
    """Per-token statistic the norm divides by: ``(T,)``."""
    z = norm_input.float()
    if kind == "layer":
        return torch.sqrt(z.var(-1, unbiased=False) + eps)
    return torch.sqrt(z.pow(2).mean(-1) + eps)


def _through_norm(vectors: torch.Tensor, weights: LayerWeights, kind: str) -> torch.Tensor:
    """The linear part of the norm: centre by each vector's own mean (LayerNorm), times weight."""
    if kind == "layer":
        vectors = vectors - vectors.mean(-1, keepdim=True)
    return vectors * weights.gamma


def layer_factors(record: dict[str, torch.Tensor], weights: LayerWeights,
                  family: ALTIFamily) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The two factors whose batched product gives every transformed vector, and the bias.

    Args:
        record: one text's tensors of one layer, cropped to its ``T`` tokens: ``probs`` ``(H, T, T)``, ``values``
            ``(T, H_kv * d_head)``, ``residual`` ``(T, d)``, ``norm_input`` ``(T, d)`` (families with a norm).

    Returns:
        ``left`` ``(T_j, T_i, H + 1)``, ``right`` ``(T_j, H + 1, d)`` and ``bias`` ``(T_i, d)``, float32, with
        ``T_i(x_j) = left[j, i] @ right[j]``: the first ``H`` columns carry the attention weights (scaled by token
        ``i``'s norm statistic) and the per-head values ``v^h_j W_O^h``; the last the residual on the diagonal.
    """
    probs = record["probs"].float()
    num_heads, size = probs.shape[0], probs.shape[-1]
    values = record["values"].float().reshape(size, weights.num_kv_heads, weights.head_dim)
    if weights.num_kv_heads != num_heads:  # grouped-query attention: head h reads KV head h // group
        values = values.repeat_interleave(num_heads // weights.num_kv_heads, dim=1)
    w_o = weights.w_o.reshape(weights.w_o.shape[0], num_heads, weights.head_dim)
    per_head = torch.einsum("jhe,dhe->jhd", values, w_o)  # v^h_j W_O^h: (T_j, H, d)
    residual = record["residual"].float()
    bias = weights.b_o if weights.b_o is not None else torch.zeros_like(weights.w_o[:, 0])
    attention_scale = residual_scale = torch.ones(size, dtype=probs.dtype, device=probs.device)
    if family.placement is not None:
        scale = _norm_scale(record["norm_input"], family.norm_kind, weights.eps)
        per_head = _through_norm(per_head, weights, family.norm_kind)
        attention_scale = 1.0 / scale
        bias = _through_norm(bias, weights, family.norm_kind)[None, :] / scale[:, None]
        if weights.beta is not None:
            bias = bias + weights.beta
        if family.placement == "sum":
            residual = _through_norm(residual, weights, family.norm_kind)
            residual_scale = attention_scale
    bias = bias.expand(size, -1) if bias.dim() == 1 else bias
    left = torch.empty(size, size, num_heads + 1, dtype=probs.dtype, device=probs.device)
    left[..., :num_heads] = (probs * attention_scale[None, :, None]).permute(2, 1, 0)
    left[..., num_heads] = torch.diag(residual_scale)
    right = torch.cat([per_head, residual[:, None, :]], dim=1)
    return left, right, bias


def layer_contributions(left: torch.Tensor, right: torch.Tensor, output: torch.Tensor, causal: bool) -> torch.Tensor:
    """One layer's ALTI contributions from the factors of :func:`layer_factors`: ``(T_i, T_j)`` float32.

    ``left`` ``(T_j, T_i, K)``, ``right`` ``(T_j, K, d)``, ``output`` ``(T_i, d)``; one ``baddbmm`` per block of key
    tokens, never holding the ``(T, T, d)`` vectors.
    """
    size, dim = left.shape[0], right.shape[-1]
    output = output.float()
    step = max(1, _CHUNK_ELEMENTS // max(1, size * dim))
    if causal and size >= 2 * _CAUSAL_BLOCKS:
        step = min(step, -(-size // _CAUSAL_BLOCKS))
    distance = torch.zeros(size, size, dtype=left.dtype, device=left.device)  # (i, j)
    negative = -output
    for start in range(0, size, step):
        stop = min(size, start + step)
        first = start if causal else 0  # queries before the block's first key cannot see it
        rows = size - first
        block = torch.baddbmm(
            negative[first:].expand(stop - start, rows, dim), left[start:stop, first:], right[start:stop]
        )  # (keys, queries, d): T_i(x_j) - y_i
        distance[first:, start:stop] = block.abs_().sum(-1).T  # in place: 3x faster than vector_norm(ord=1)
    return _normalise(output.abs().sum(-1)[:, None] - distance, causal)
