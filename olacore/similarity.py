"""Image similarity of maps: batched SSIM and Hits@k (paper section 4.1).

Maps are compared by SSIM (Wang et al. 2004), as the official retrieval script does
(torchmetrics' ``StructuralSimilarityIndexMeasure`` in the official ``olas_retrieval.py``).

- :func:`pairwise_ssim`: batched SSIM of every query against every gallery map (CPU or
  CUDA), equal to :func:`skimage.metrics.structural_similarity` with Gaussian weights.
- :func:`hits_at_k`: Hits@k from a similarity matrix.

The retrieval experiment built on them is :mod:`olacore.retrieval`.
"""

from __future__ import annotations

from typing import Sequence

import torch

__all__ = ["gaussian_window", "pairwise_ssim", "hits_at_k", "chance_hits"]

def gaussian_window(sigma: float = 1.5, truncate: float = 3.5, dtype=torch.float64, device=None) -> torch.Tensor:
    """The 1-D Gaussian filter of :func:`scipy.ndimage.gaussian_filter` (as skimage's SSIM uses).

    Radius ``int(truncate * sigma + 0.5)``, so ``sigma = 1.5`` gives 11 taps; weights sum to 1.

    Returns:
        ``(2 * radius + 1,)`` tensor.
    """
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
    """Separable Gaussian filter of ``(N, H, W)`` images, keeping only fully covered pixels.

    skimage filters with reflected borders and then crops ``radius`` pixels on every side
    before averaging; the cropped region never sees the reflection, so a 'valid' filter
    gives exactly the pixels skimage keeps: ``(N, H - 2r, W - 2r)``. The filter is two matrix
    products with band matrices: one flat product over all image rows with ``cols_t``
    (``(W, W - 2r)``), then ``rows`` (``(H - 2r, H)``) from the left, which is much faster
    than a one-channel convolution, in float64 too.
    """
    filtered_cols = torch.mm(images.reshape(-1, images.shape[-1]), cols_t)
    return torch.matmul(rows, filtered_cols.view(images.shape[0], images.shape[1], cols_t.shape[1]))


def pairwise_ssim(
    queries: torch.Tensor,
    gallery: torch.Tensor,
    data_range: float | None,
    *,
    sigma: float = 1.5,
    k1: float = 0.01,
    k2: float = 0.03,
    max_pairs_per_chunk: int = 100,
) -> torch.Tensor:
    """Mean SSIM of every query map against every gallery map (paper section 4.1).

    Equal (float64: within 1e-10; float32: about 1e-7) to
    ``skimage.metrics.structural_similarity(q, g, gaussian_weights=True, sigma=1.5,
    use_sample_covariance=False, data_range=data_range)`` for each pair: Gaussian window of
    11 taps (``truncate = 3.5``), population covariances, constants ``(k1 R)^2`` and
    ``(k2 R)^2``, and the mean over the pixels at least 5 from the border.

    The per-image statistics (local means and variances) are computed once; only the local
    cross moment needs each pair. Pairs go in chunks of about ``max_pairs_per_chunk``
    (whole query rows), so memory stays bounded for any ``Q x G`` and a chunk's temporaries
    stay in cache. Per pixel, with ``m = mu_q mu_g``,
    ``SSIM = (2 m + C1) (2 cov + C2) / ((mu_q^2 + mu_g^2 + C1) (var_q + var_g + C2))``;
    the factor 2 of ``2 cov`` is folded into the filter and the per-image halves of the
    denominators are precomputed, so a pair costs two small matrix products and a few
    in-place elementwise passes (``benchmarks/bench_ssim.py`` measures it against skimage).

    Args:
        queries: ``(Q, H, W)`` float tensor (target maps), CPU or CUDA.
        gallery: ``(G, H, W)`` float tensor (source maps), same device.
        data_range: ``R``, the value range of the maps (skimage's ``data_range``). ``None``
            takes, per pair, the larger of the two maps' ``max - min``, as torchmetrics'
            ``StructuralSimilarityIndexMeasure()`` (used by the official ``olas_retrieval.py``)
            does for one pair.
        sigma: Gaussian standard deviation in pixels.
        k1, k2: SSIM constants.
        max_pairs_per_chunk: pairs processed at once (memory: about
            ``6 * max_pairs_per_chunk * H * W`` numbers); at least one query row.

    Returns:
        ``(Q, G)`` tensor in the dtype of the inputs (float64 if either is), on their device;
        entry ``[q, g]`` is the SSIM of ``queries[q]`` and ``gallery[g]``.

    Raises:
        TypeError: inputs that are not torch tensors.
        ValueError: wrong ranks, different map sizes, maps smaller than the window, NaN or
            infinite values, a non-positive ``data_range`` or ``sigma``, or (with
            ``data_range=None``) a pair of constant maps.
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
    if sigma <= 0:
        raise ValueError(f"sigma must be positive; got {sigma}")
    if not (torch.isfinite(queries).all() and torch.isfinite(gallery).all()):
        raise ValueError("maps hold NaN or infinite values; SSIM is undefined for them")
    if queries.shape[1:] != gallery.shape[1:]:
        raise ValueError(f"query maps {tuple(queries.shape[1:])} and gallery maps {tuple(gallery.shape[1:])} differ in size")
    if data_range is not None and data_range <= 0:
        raise ValueError(f"data_range must be positive; got {data_range}")
    dtype = torch.promote_types(queries.dtype, gallery.dtype)
    if not dtype.is_floating_point:
        dtype = torch.float32
    queries = queries.to(dtype).contiguous()
    gallery = gallery.to(device=queries.device, dtype=dtype).contiguous()
    window = gaussian_window(sigma, dtype=dtype, device=queries.device)
    if min(queries.shape[1:]) < window.numel():
        raise ValueError(f"maps of {tuple(queries.shape[1:])} are smaller than the {window.numel()}-pixel SSIM window")

    rows = _band_matrix(queries.shape[1], window)
    cols_t = _band_matrix(queries.shape[2], window).T.contiguous()
    mu_q, mu_g = _filter_valid(queries, rows, cols_t), _filter_valid(gallery, rows, cols_t)
    # Per-image halves of the two denominators: mu^2 (+ C1 / 2) and var (+ C2 / 2).
    half_b1_q, half_b1_g = mu_q**2, mu_g**2
    half_b2_q = _filter_valid(queries * queries, rows, cols_t) - half_b1_q
    half_b2_g = _filter_valid(gallery * gallery, rows, cols_t) - half_b1_g
    num_q, num_g = queries.shape[0], gallery.shape[0]
    if data_range is None:
        range_q = (queries.amax((1, 2)) - queries.amin((1, 2)))[:, None]
        range_g = (gallery.amax((1, 2)) - gallery.amin((1, 2)))[None, :]
        pair_ranges = torch.maximum(range_q, range_g)
        if not (pair_ranges > 0).all():
            raise ValueError("a query and a gallery map are both constant, so their data range is 0 and SSIM is "
                             "undefined; pass data_range explicitly")
        squared_ranges = pair_ranges[:, :, None, None] ** 2  # (Q, G, 1, 1)
    else:
        c1, c2 = (k1 * data_range) ** 2, (k2 * data_range) ** 2
        half_b1_q, half_b1_g = half_b1_q + c1 / 2, half_b1_g + c1 / 2
        half_b2_q, half_b2_g = half_b2_q + c2 / 2, half_b2_g + c2 / 2
        c1, c2 = (torch.tensor(c, dtype=dtype, device=queries.device) for c in (c1, c2))

    twice_cols_t = 2 * cols_t
    out = queries.new_empty(num_q, num_g)
    rows_per_chunk = max(1, max_pairs_per_chunk // max(num_g, 1))
    for start in range(0, num_q, rows_per_chunk):
        stop = min(start + rows_per_chunk, num_q)
        mq, mg = mu_q[start:stop, None], mu_g[None]
        if data_range is None:
            c1, c2 = k1**2 * squared_ranges[start:stop], k2**2 * squared_ranges[start:stop]
            products = queries[start:stop, None] * gallery[None]  # (q, G, H, W)
        else:  # C2 / 2 rides along: the filter's weights sum to one, and it is doubled below.
            products = torch.addcmul(c2 / 2, queries[start:stop, None], gallery[None])
        # 2 cov + C2 = 2 E[qg] - 2 mu_q mu_g + C2, in place on the filtered products.
        contrast = _filter_valid(products.view(-1, *products.shape[2:]), rows, twice_cols_t)
        contrast = contrast.view(stop - start, num_g, -1).addcmul_(mq.flatten(-2), mg.flatten(-2), value=-2)
        if data_range is None:
            contrast.add_(c2.flatten(-2))
        b1 = half_b1_q[start:stop, None] + half_b1_g[None]
        b2 = half_b2_q[start:stop, None] + half_b2_g[None]
        if data_range is None:
            b1.add_(c1)
            b2.add_(c2)
        # (2 mu_q mu_g + C1) / (B1 B2), then the pixel mean of its product with the contrast term.
        weight = torch.addcmul(c1, mq, mg, value=2).div_(b1.mul_(b2))
        out[start:stop] = torch.linalg.vecdot(contrast, weight.view_as(contrast)) / contrast.shape[-1]
    return out


def hits_at_k(similarity: torch.Tensor, ks: Sequence[int] = (1, 5), answers: torch.Tensor | None = None) -> dict[int, float]:
    """Fraction of queries whose correct gallery item ranks within the top ``k``.

    Ties count against the query: the rank of the correct item is one plus the number of
    *other* gallery items scoring at least as high (so a constant similarity scores 0, not
    chance; the official ``olas_retrieval.py`` breaks ties in the query's favour: it ranks the
    correct score at the first position of an equal value in the sorted list). A NaN score of the
    correct item is a miss; NaN scores of other items never outrank it.

    Args:
        similarity: ``(Q, G)`` tensor, higher = more similar.
        ks: the cut-offs ``k`` (paper: 1 and 5).
        answers: ``(Q,)`` long tensor, the correct gallery index of each query; default
            ``arange(Q)`` (query ``i`` and gallery item ``i`` come from the same text).

    Returns:
        ``{k: fraction in [0, 1]}``.

    Raises:
        ValueError: ``similarity`` is not 2-D, or the default answers need ``G >= Q``.
    """
    if similarity.ndim != 2:
        raise ValueError(f"similarity must be (Q, G); got shape {tuple(similarity.shape)}")
    num_q, num_g = similarity.shape
    if answers is None:
        if num_g < num_q:
            raise ValueError(f"default answers need at least as many gallery items ({num_g}) as queries ({num_q})")
        answers = torch.arange(num_q, device=similarity.device)
    answers = answers.to(similarity.device)
    correct = similarity.gather(1, answers[:, None])
    others_at_least = (similarity >= correct).sum(1) - 1
    rank = others_at_least + 1
    rank[correct[:, 0].isnan()] = num_g + 1  # an undefined score for the right item is a miss
    return {int(k): float((rank <= k).double().mean()) for k in ks}


def chance_hits(num_gallery: int, k: int) -> float:
    """Hits@k of a random ranking over ``num_gallery`` items: ``min(k, G) / G``."""
    return min(k, num_gallery) / num_gallery
