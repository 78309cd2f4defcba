"""Order-Level Attention (OLA) and Attention Rollout: the mathematics, no models.

Notation follows the paper (Liang et al., NeurIPS 2025, section 3.1) and the chapter "From rollout
to Order-Level Attention". ``A^(n)`` is the head-averaged, row-stochastic attention of layer ``n``
(layer 1 nearest the input). Attention Rollout multiplies the residual-augmented layers,

    R = (A^(N) + I) ... (A^(1) + I) = sum_k sum_{j_1 < ... < j_k} A^(j_k) ... A^(j_1),

and the k-th order OLA is the mean of the ``C(N, k)`` products of exactly ``k`` attention
factors, so that ``R = sum_k C(N, k) OLA_k``.

Every OLA_k is computed with the recurrence of elementary symmetric polynomials of ordered
factors, kept normalised as it goes. Writing ``M_k^(n)`` for the k-th order OLA of the first
``n`` layers,

    M_k^(n) = (n - k)/n * M_k^(n-1) + k/n * A^(n) M_{k-1}^(n-1),     M_0 = I,

which is a convex combination of row-stochastic matrices: rows stay stochastic, nothing
overflows however large ``C(N, k)`` grows, and the cost is one batched product per layer
and order (about ``N * K``) instead of ``sum_k C(N, k)``.
"""

from __future__ import annotations

import itertools
import math

import torch

__all__ = [
    "order_level_attention",
    "order_level_attention_bruteforce",
    "attention_rollout",
    "rollout_from_orders",
    "mass_profile",
]


def _check_attentions(attentions: torch.Tensor) -> torch.Tensor:
    """Validate a ``(..., N, T, T)`` stack of layer attentions; return it in a float dtype."""
    if not isinstance(attentions, torch.Tensor):
        raise TypeError(f"attentions must be a torch.Tensor, got {type(attentions).__name__}")
    if attentions.ndim < 3:
        raise ValueError(
            f"attentions must have shape (..., N, T, T) with N layers; got shape {tuple(attentions.shape)}"
        )
    if attentions.shape[-1] != attentions.shape[-2]:
        raise ValueError(
            f"attention maps must be square (T x T); got {attentions.shape[-2]} x {attentions.shape[-1]}"
        )
    if attentions.shape[-3] == 0:
        raise ValueError("attentions holds no layer (N = 0)")
    if not attentions.is_floating_point():
        raise TypeError(f"attentions must be a floating-point tensor, got {attentions.dtype}")
    if attentions.dtype in (torch.float16, torch.bfloat16):
        attentions = attentions.float()
    if not torch.isfinite(attentions).all():
        raise ValueError("attentions contains NaN or infinite values; check the extraction")
    return attentions


def _check_max_order(max_order: int, num_layers: int) -> None:
    """Refuse a ``max_order`` that is not an int from 0 to ``num_layers``."""
    if isinstance(max_order, bool) or not isinstance(max_order, int):
        raise TypeError(f"max_order must be an int, got {type(max_order).__name__}")
    if not 0 <= max_order <= num_layers:
        raise ValueError(f"max_order must be between 0 and the number of layers N={num_layers}; got {max_order}")


def order_level_attention(attentions: torch.Tensor, max_order: int) -> torch.Tensor:
    """Order-Level Attention of every order from 0 to ``max_order`` (paper section 3.1, eq. 3-4).

    Args:
        attentions: ``(..., N, T, T)`` float tensor of head-averaged, row-stochastic attention,
            layer 1 (nearest the input) first. Any leading batch dimensions; CPU or CUDA.
            float32 and float64 are kept; float16/bfloat16 are computed in float32.
        max_order: highest order ``K`` to return, ``0 <= K <= N``.

    Returns:
        ``(..., K + 1, T, T)`` tensor on the input's device, same dtype (float32 for half
        inputs). Index ``k`` is the k-th order OLA: the mean over the ``C(N, k)`` ordered
        products ``A^(j_k) ... A^(j_1)`` with ``j_1 < ... < j_k``; index 0 is the identity.
        Each slice is row-stochastic when the input is, and lower-triangular when the input is.

    Raises:
        TypeError: ``attentions`` is not a floating-point tensor, or ``max_order`` not an int.
        ValueError: maps are not square, there is no layer, ``max_order`` is outside
            ``[0, N]``, or the input holds NaN or infinity.

    The recurrence (module docstring) costs about ``N * K`` batched ``T x T`` products.
    """
    attentions = _check_attentions(attentions)
    _check_max_order(max_order, attentions.shape[-3])
    num_layers, size = attentions.shape[-3], attentions.shape[-1]
    batch_shape = attentions.shape[:-3]
    eye = torch.eye(size, dtype=attentions.dtype, device=attentions.device)
    # orders[k] holds M_k of the layers seen so far; orders above n stay zero after n layers.
    orders = [eye.expand(*batch_shape, size, size)]
    orders += [attentions.new_zeros(*batch_shape, size, size) for _ in range(max_order)]
    for n in range(1, num_layers + 1):
        layer = attentions[..., n - 1, :, :].contiguous()
        # k from high to low, so that every update reads the previous layer's M_{k-1}.
        for k in range(min(n, max_order), 0, -1):
            product = layer if k == 1 else layer @ orders[k - 1]  # M_0 = I: no product needed
            orders[k].mul_((n - k) / n).add_(product, alpha=k / n)
    return torch.stack(orders, dim=-3)


def order_level_attention_bruteforce(attentions: torch.Tensor, max_order: int) -> torch.Tensor:
    """Reference OLA by enumerating every subset of layers, as the official code does
    (``combine_attention_orders`` in the official ``models/ola_utils.py``).

    Same arguments, result and errors as :func:`order_level_attention`, but costs
    ``sum_{k <= K} C(N, k)`` chains of products. Use it only to check the recurrence
    (tests) and to measure what the recurrence saves (benchmarks).
    """
    attentions = _check_attentions(attentions)
    _check_max_order(max_order, attentions.shape[-3])
    num_layers, size = attentions.shape[-3], attentions.shape[-1]
    eye = torch.eye(size, dtype=attentions.dtype, device=attentions.device)
    result = []
    for k in range(max_order + 1):
        total = torch.zeros_like(attentions[..., 0, :, :])
        for subset in itertools.combinations(range(num_layers), k):
            product = eye.expand_as(total)
            for j in subset:  # ascending layers: each later layer multiplies on the left
                product = attentions[..., j, :, :] @ product
            total = total + product
        result.append(total / math.comb(num_layers, k))
    return torch.stack(result, dim=-3)


def attention_rollout(attentions: torch.Tensor) -> torch.Tensor:
    """Row-stochastic Attention Rollout of Abnar & Zuidema (2020): ``prod_n (A^(n)/2 + I/2)``.

    Args:
        attentions: ``(..., N, T, T)`` float tensor, as for :func:`order_level_attention`.

    Returns:
        ``(..., T, T)`` tensor ``(A^(N)/2 + I/2) ... (A^(1)/2 + I/2)``, equal to
        ``sum_k C(N, k) OLA_k / 2^N`` (paper eq. 2; derived in the chapter "From rollout to
        Order-Level Attention").

    Raises:
        TypeError, ValueError: as :func:`order_level_attention`.
    """
    attentions = _check_attentions(attentions)
    size = attentions.shape[-1]
    eye = torch.eye(size, dtype=attentions.dtype, device=attentions.device)
    rollout = eye.expand_as(attentions[..., 0, :, :])
    for n in range(attentions.shape[-3]):
        rollout = (0.5 * attentions[..., n, :, :] + 0.5 * eye) @ rollout
    return rollout


def rollout_from_orders(orders: torch.Tensor, num_layers: int) -> torch.Tensor:
    """Rebuild the row-stochastic rollout from all orders: ``sum_k C(N, k) OLA_k / 2^N``.

    Args:
        orders: ``(..., N + 1, T, T)`` output of :func:`order_level_attention` with
            ``max_order = N``.
        num_layers: ``N``.

    Returns:
        ``(..., T, T)`` tensor; equals :func:`attention_rollout` up to rounding.

    Raises:
        ValueError: ``orders`` does not hold exactly ``N + 1`` orders.
    """
    if orders.shape[-3] != num_layers + 1:
        raise ValueError(
            f"need all {num_layers + 1} orders (0..N) to rebuild rollout; got {orders.shape[-3]}"
        )
    weights = torch.tensor(
        [math.comb(num_layers, k) / 2.0**num_layers for k in range(num_layers + 1)],
        dtype=orders.dtype,
        device=orders.device,
    )
    return (weights.view(-1, 1, 1) * orders).sum(dim=-3)


def mass_profile(maps: torch.Tensor) -> dict[str, torch.Tensor]:
    """Where row-stochastic token maps put their mass (the derivation chapter's map profiles).

    Args:
        maps: ``(..., T, T)`` float tensor, rows summing to one (an OLA order, rollout, ALTI).

    Returns:
        ``{"mass on the diagonal", "mass on first token", "mean |i - j| (tokens)"}``, each a
        ``(...)`` tensor of the map's dtype: the mean over rows ``i`` of ``M[i, i]``, of
        ``M[i, 0]`` (the usual attention sink) and of ``sum_j M[i, j] |i - j|``.

    Raises:
        ValueError: ``maps`` is not a float tensor with two equal trailing dimensions.
    """
    if not isinstance(maps, torch.Tensor) or not maps.is_floating_point() or maps.dim() < 2 \
            or maps.shape[-1] != maps.shape[-2]:
        raise ValueError("maps must be a float tensor of shape (..., T, T); "
                         f"got {getattr(maps, 'dtype', type(maps))} {tuple(getattr(maps, 'shape', ()))}")
    size = maps.shape[-1]
    positions = torch.arange(size, device=maps.device)
    gap = (positions[:, None] - positions[None, :]).abs().to(maps.dtype)
    return {
        "mass on the diagonal": maps.diagonal(dim1=-2, dim2=-1).mean(-1),
        "mass on first token": maps[..., :, 0].mean(-1),
        "mean |i - j| (tokens)": (maps * gap).sum(-1).mean(-1),
    }
