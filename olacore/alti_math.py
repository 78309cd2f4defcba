"""The mathematics of ALTI, no model: transformed vectors as two factors, contributions, rollout.

Notation and the choices made against the ALTI reference are in :mod:`olacore.alti`. Every
function takes one text's tensors of one layer (or the contributions of all layers) and
returns tensors on the same device; :mod:`olacore.alti` feeds them from forward hooks.
"""

from __future__ import annotations

import warnings

import torch

from olacore.alti_families import ALTIFamily, LayerWeights

__all__ = ["alti_rollout", "layer_factors", "layer_contributions"]

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
        warnings.warn(
            f"ALTI: {int(empty.sum())} row(s) had no positive contribution; set to the identity row",
            RuntimeWarning,
            stacklevel=3,
        )
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


def layer_factors(
    record: dict[str, torch.Tensor], weights: LayerWeights, family: ALTIFamily
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
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

    ``left`` ``(T_j, T_i, K)``, ``right`` ``(T_j, K, d)``, ``output`` ``(T_i, d)``. Equals ALTI's measure on the
    explicit vectors ``bmm(left, right).transpose(0, 1)`` (``tests/alti_reference.py``) without holding those
    ``(T, T, d)`` vectors: one ``baddbmm`` per block of key tokens, reduced to L1 distances in place (causal: a block
    skips the queries before its first key).
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


