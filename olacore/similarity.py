"""OLAS measured by retrieval (paper section 4.1): each target model's map of a text queries a source model's maps
of the same texts by SSIM; a hit when its own text ranks first (Hits@1) or in the first five (Hits@5).

SSIM as the official ``olas_retrieval.py`` computes it (torchmetrics); models are compared within one kind only,
as the official code does.
"""

from __future__ import annotations

import itertools
import math
import numbers
from typing import Any, Mapping, Sequence, TYPE_CHECKING

import pandas as pd
import torch

from olacore.maps import Maps, make_maps

if TYPE_CHECKING:
    from olacore.pipeline import TokenMaps

__all__ = ["gaussian_window", "pairwise_ssim", "hits_at_k", "chance_hits", "retrieval_table", "retrieval_grid",
           "hits_matrix", "mean_hits"]


#: The SSIM constants (skimage's and torchmetrics' defaults).
SIGMA, K1, K2 = 1.5, 0.01, 0.03


def gaussian_window(sigma: float = 1.5, truncate: float = 3.5, dtype=torch.float64, device=None) -> torch.Tensor:
    """The 1-D Gaussian filter of :func:`scipy.ndimage.gaussian_filter`, ``(2 * int(truncate * sigma + 0.5) + 1,)``."""
    radius = int(truncate * sigma + 0.5)
    x = torch.arange(-radius, radius + 1, dtype=dtype, device=device)
    weights = torch.exp(-0.5 * (x / sigma) ** 2)
    return weights / weights.sum()


def _band_matrix(size: int, window: torch.Tensor) -> torch.Tensor:
    """``(size - taps + 1, size)`` matrix whose product with a signal is its 'valid' filtering."""
    taps = window.numel()
    out = window.new_zeros(size - taps + 1, size)
    for row in range(size - taps + 1):
        out[row, row : row + taps] = window
    return out


def _filter_valid(images: torch.Tensor, rows: torch.Tensor, cols_t: torch.Tensor) -> torch.Tensor:
    """Separable Gaussian filter of ``(N, H, W)`` images, fully covered pixels only: ``(N, H - 2r, W - 2r)``
    (the pixels skimage keeps)."""
    filtered_cols = torch.mm(images.reshape(-1, images.shape[-1]), cols_t)
    return torch.matmul(rows, filtered_cols.view(images.shape[0], images.shape[1], cols_t.shape[1]))


def _centred_moments(images: torch.Tensor, rows: torch.Tensor, cols_t: torch.Tensor):
    """``(centred images, filtered centred mean, local mean, local variance)`` of centred images (no cancellation)."""
    centre = images.mean((1, 2), keepdim=True)
    centred = images - centre
    mu_centred = _filter_valid(centred, rows, cols_t)
    variance = (_filter_valid(centred * centred, rows, cols_t) - mu_centred**2).clamp_min_(0)
    return centred, mu_centred, mu_centred + centre, variance


def pairwise_ssim(
    queries: torch.Tensor,
    gallery: torch.Tensor,
    data_range: float | None,
    *,
    max_pairs_per_chunk: int = 100,
) -> torch.Tensor:
    """Mean SSIM of every query map against every gallery map (paper section 4.1).

    Per pair, ``skimage.metrics.structural_similarity(q, g, gaussian_weights=True, sigma=1.5,
    use_sample_covariance=False, data_range=data_range)``; float32 within about 1e-7 of it.

    Args:
        queries: ``(Q, H, W)`` target maps; ``gallery``: ``(G, H, W)`` source maps, same device.
        data_range: the maps' value range; ``None``: per pair the larger ``max - min``, as torchmetrics does.
        max_pairs_per_chunk: pairs computed at once (memory about ``6 * max_pairs_per_chunk * H * W`` numbers).

    Returns:
        ``(Q, G)`` SSIM in the inputs' dtype and device.

    Raises:
        TypeError: non-tensor maps; a non-numeric ``data_range``.
        ValueError: bad shapes, non-finite maps, non-positive parameters, two constant maps without ``data_range``.
    """
    if not isinstance(queries, torch.Tensor) or not isinstance(gallery, torch.Tensor):
        raise TypeError(
            f"queries and gallery must be torch tensors (torch.from_numpy(a) converts an array); "
            f"got {type(queries).__name__} and {type(gallery).__name__}"
        )
    if queries.ndim != 3 or gallery.ndim != 3:
        raise ValueError(
            f"queries and gallery must be (Q, H, W) and (G, H, W); got {tuple(queries.shape)} and {tuple(gallery.shape)}"
        )
    if data_range is not None:
        if isinstance(data_range, bool) or not isinstance(data_range, numbers.Real):
            raise TypeError(f"data_range must be a positive number or None; got {type(data_range).__name__} "
                            f"{data_range!r}")
        if not math.isfinite(data_range) or data_range <= 0:
            raise ValueError(f"data_range must be a finite positive number; got {data_range!r}")
        data_range = float(data_range)
    if queries.shape[1:] != gallery.shape[1:]:
        raise ValueError(f"query maps {tuple(queries.shape[1:])} and gallery maps {tuple(gallery.shape[1:])} differ in size")
    if not (torch.isfinite(queries).all() and torch.isfinite(gallery).all()):
        raise ValueError("maps hold NaN or infinite values; SSIM is undefined for them")
    dtype = torch.promote_types(queries.dtype, gallery.dtype)
    if not dtype.is_floating_point:
        dtype = torch.float32
    device, wide = queries.device, torch.float64
    window = gaussian_window(SIGMA, dtype=wide, device=device)
    if min(queries.shape[1:]) < window.numel():
        raise ValueError(f"maps of {tuple(queries.shape[1:])} are smaller than the {window.numel()}-pixel SSIM window")
    num_q, num_g = queries.shape[0], gallery.shape[0]
    if num_q == 0 or num_g == 0:  # nothing to compare: an empty (Q, G) result, as for any Q x G
        return torch.empty(num_q, num_g, dtype=dtype, device=device)

    queries64 = queries.to(device=device, dtype=wide)
    gallery64 = gallery.to(device=device, dtype=wide)
    rows64 = _band_matrix(queries.shape[1], window)
    cols64_t = _band_matrix(queries.shape[2], window).T.contiguous()
    centred_q, mu_cq, mu_q, var_q = _centred_moments(queries64, rows64, cols64_t)
    centred_g, mu_cg, mu_g, var_g = _centred_moments(gallery64, rows64, cols64_t)
    if data_range is None:
        range_q = (queries64.amax((1, 2)) - queries64.amin((1, 2)))[:, None]
        range_g = (gallery64.amax((1, 2)) - gallery64.amin((1, 2)))[None, :]
        pair_ranges = torch.maximum(range_q, range_g)
        if not (pair_ranges > 0).all():
            raise ValueError("a query and a gallery map are both constant, so their data range is 0 and SSIM is "
                             "undefined; pass data_range explicitly")
        squared_ranges = pair_ranges[:, :, None, None] ** 2  # (Q, G, 1, 1)
        c1_pairs, c2_pairs = (K1**2 * squared_ranges).to(dtype), (K2**2 * squared_ranges).to(dtype)
    else:
        c1_pairs = torch.full((1, 1, 1, 1), (K1 * data_range) ** 2, dtype=dtype, device=device)
        c2_pairs = torch.full((1, 1, 1, 1), (K2 * data_range) ** 2, dtype=dtype, device=device)
    # Everything per pair runs in the maps' dtype, on centred maps.
    centred_q, centred_g, mu_cq, mu_cg, mu_q, mu_g, var_q, var_g = (
        t.to(dtype) for t in (centred_q, centred_g, mu_cq, mu_cg, mu_q, mu_g, var_q, var_g)
    )
    rows, twice_cols_t = rows64.to(dtype), (2 * cols64_t).to(dtype)
    square_q, square_g = mu_q**2, mu_g**2
    out = torch.empty(num_q, num_g, dtype=dtype, device=device)
    rows_per_chunk = max(1, max_pairs_per_chunk // num_g)
    for start in range(0, num_q, rows_per_chunk):
        stop = min(start + rows_per_chunk, num_q)
        c1 = c1_pairs[start:stop] if c1_pairs.shape[0] > 1 else c1_pairs
        c2 = c2_pairs[start:stop] if c2_pairs.shape[0] > 1 else c2_pairs
        products = centred_q[start:stop, None] * centred_g[None]  # (q, G, H, W)
        # 2 cov + C2 = 2 E[q'g'] - 2 mu_q' mu_g' + C2 on the centred q', g', in place.
        contrast = _filter_valid(products.view(-1, *products.shape[2:]), rows, twice_cols_t)
        contrast = contrast.view(stop - start, num_g, -1)
        contrast.addcmul_(mu_cq[start:stop, None].flatten(-2), mu_cg[None].flatten(-2), value=-2)
        contrast.add_(c2.flatten(-2))
        b1 = (square_q[start:stop, None] + square_g[None]).add_(c1)
        b2 = (var_q[start:stop, None] + var_g[None]).add_(c2)
        # (2 mu_q mu_g + C1) / (B1 B2), then the pixel mean of its product with the contrast term.
        weight = torch.addcmul(c1, mu_q[start:stop, None], mu_g[None], value=2).div_(b1.mul_(b2))
        out[start:stop] = torch.linalg.vecdot(contrast, weight.view_as(contrast)) / contrast.shape[-1]
    return out.clamp_(-1.0, 1.0)


def hits_at_k(similarity: torch.Tensor, ks: Sequence[int] = (1, 5)) -> dict[int, float]:
    """``{k: fraction}`` of queries whose correct gallery item (query ``i``: item ``i``) of a ``(Q, G)`` similarity
    ranks within the top ``k``. Ties count against the query (the official ``olas_retrieval.py``: for it); a NaN
    score of the correct item is a miss.

    Raises:
        TypeError: ``similarity`` not a tensor.
        ValueError: empty or non-2-D ``similarity``, bad ``ks``, ``G < Q``.
    """
    if not isinstance(similarity, torch.Tensor):
        raise TypeError(f"similarity must be a (Q, G) torch tensor; got {type(similarity).__name__}")
    if similarity.ndim != 2:
        raise ValueError(f"similarity must be (Q, G); got shape {tuple(similarity.shape)}")
    num_q, num_g = similarity.shape
    if num_q == 0 or num_g == 0:
        raise ValueError(f"Hits@k needs at least one query and one gallery item; similarity is {num_q} x {num_g}")
    if (isinstance(ks, (str, bytes)) or not isinstance(ks, Sequence) or not ks
            or any(isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1 for k in ks)):
        raise ValueError(f"ks must be a non-empty sequence of positive ints such as (1, 5); got {ks!r}")
    if num_g < num_q:
        raise ValueError(f"Hits@k needs at least as many gallery items ({num_g}) as queries ({num_q})")
    correct = similarity.diagonal()[:, None]  # query i's score of item i (G >= Q)
    rank = (similarity >= correct).sum(1)  # the right item and every item scored at least as high (ties lose)
    rank[correct[:, 0].isnan()] = num_g + 1  # an undefined score for the right item is a miss
    return {int(k): float((rank <= k).double().mean()) for k in ks}


def chance_hits(num_gallery: int, k: int) -> float:
    """Hits@k of a random ranking over ``num_gallery`` items: ``min(k, G) / G``."""
    return min(k, num_gallery) / num_gallery


def _check_comparable(maps: Mapping[str, Maps]) -> Maps:
    first = next(iter(maps.values()))
    for name, other in maps.items():
        if other.channels != first.channels or other.layout() != first.layout():
            raise ValueError(f"{name}: channels {other.layout()} differ from {first.layout()}")
        if other.texts != first.texts:
            raise ValueError(f"{name}: its maps are of other texts (or in another order) than {first.model}'s")
        if (other.align, other.size) != (first.align, first.size):
            raise ValueError(f"{name}: aligned by {other.align}/{other.size}, {first.model} by {first.align}/{first.size}")
    return first


def retrieval_table(
    maps: Mapping[str, Maps], *, pairs: Sequence[tuple[str, str]] | None = None, ks: Sequence[int] = (1, 5)
) -> pd.DataFrame:
    """Hits@k (fractions) of float32 SSIM retrieval on the CPU (``data_range`` per pair) for every (source, target)
    pair and channel: ``source, target, channel, sinks, hits@k..., chance@k...``.

    Args:
        maps: :class:`olacore.maps.Maps` per model name, of the same texts, channels and alignment.
        pairs: ``(source, target)`` names; default every ordered pair.

    Raises:
        ValueError: maps of other texts, channels or alignments; an unknown model in ``pairs``; no pair to compare.
    """
    names = list(maps)
    pairs = list(itertools.permutations(names, 2)) if pairs is None else list(pairs)
    if not pairs:
        raise ValueError(f"no (source, target) pair to compare: maps of {names}; give two models or pairs=[...]")
    unknown = sorted({n for pair in pairs for n in pair} - set(names))
    if unknown:
        raise ValueError(f"pairs name models without maps: {unknown}; maps are of {names}")
    first = _check_comparable(maps)
    stacked = {name: maps[name].stack() for name in {n for pair in pairs for n in pair}}
    rows = []
    for source, target in pairs:
        for c, (channel, sinks) in enumerate(first.layout()):
            gallery = stacked[source][:, c].to(device="cpu", dtype=torch.float32)
            queries = stacked[target][:, c].to(device="cpu", dtype=torch.float32)
            hits = hits_at_k(pairwise_ssim(queries, gallery, None), ks)
            row = {"source": source, "target": target, "channel": channel, "sinks": sinks}
            row.update({f"hits@{k}": hits[k] for k in ks})
            row.update({f"chance@{k}": chance_hits(gallery.shape[0], k) for k in ks})
            rows.append(row)
    return pd.DataFrame(rows)


def retrieval_grid(
    token_maps: Mapping[str, Sequence["TokenMaps"]],
    groups: Mapping[str, Sequence[str]],
    variants: Mapping[str, Mapping[str, Any]],
    *,
    words: Sequence[Any] | None = None,
    **table_options: Any,
) -> pd.DataFrame:
    """:func:`retrieval_table` within each group of models (one kind per group) for every variant (keyword
    arguments of :func:`olacore.maps.make_maps`): one table, ``group, variant`` first."""
    tables = []
    for variant, options in variants.items():
        for group, names in groups.items():
            maps = {n: make_maps(token_maps[n], words=words, **options) for n in names}
            table = retrieval_table(maps, **table_options)
            table.insert(0, "variant", variant)
            table.insert(0, "group", group)
            tables.append(table)
    return pd.concat(tables, ignore_index=True)


def hits_matrix(table: pd.DataFrame, channel: str) -> pd.DataFrame:
    """Source x target matrix of Hits@1 for one channel."""
    rows = table[table["channel"] == channel]
    return rows.pivot(index="source", columns="target", values="hits@1")


def mean_hits(table: pd.DataFrame, metric: str = "hits@1", **where: Any) -> float:
    """Mean of ``metric`` over the rows matching every ``column=value`` in ``where``.

    Raises:
        ValueError: no row matches (so an empty table never passes as a number).
    """
    rows = table
    for column, value in where.items():
        rows = rows[rows[column] == value]
    if rows.empty:
        raise ValueError(f"no retrieval row with {where}")
    return float(rows[metric].mean())

