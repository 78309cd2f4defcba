"""Image similarity (olacore.similarity): SSIM equals scikit-image, its Gaussian window equals scipy's, Hits@k."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.metrics import structural_similarity

import olacore
from olacore.similarity import chance_hits, gaussian_window, hits_at_k, pairwise_ssim


def _skimage(q: np.ndarray, g: np.ndarray, data_range: float) -> float:
    return structural_similarity(q, g, gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=data_range)


def test_top_level_names_resolve():
    assert olacore.pairwise_ssim is pairwise_ssim
    missing = [name for name in olacore.__all__ if not hasattr(olacore, name)]
    assert not missing


@pytest.mark.parametrize("sigma", [0.5, 1.5, 2.0])
def test_gaussian_window_is_scipys_filter(sigma):
    from scipy.ndimage import gaussian_filter1d

    window = gaussian_window(sigma)
    radius = int(3.5 * sigma + 0.5)
    impulse = np.zeros(2 * radius + 1)
    impulse[radius] = 1.0
    reference = gaussian_filter1d(impulse, sigma, truncate=3.5, mode="constant")
    assert window.shape == (2 * radius + 1,)
    np.testing.assert_allclose(window.numpy(), reference[::-1], atol=1e-15, rtol=0)
    assert gaussian_window(1.5).numel() == 11


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    height=st.integers(11, 30),
    width=st.integers(11, 30),
    data_range=st.sampled_from([1.0, 0.05, 2.5]),
    chunk=st.integers(1, 7),
)
def test_ssim_equals_skimage(seed, height, width, data_range, chunk):
    rng = np.random.default_rng(seed)
    queries = rng.random((3, height, width)) * data_range
    gallery = rng.random((4, height, width)) * data_range
    gallery[0] = queries[1] + 0.01 * data_range * rng.standard_normal((height, width))  # a near match
    ours = pairwise_ssim(torch.from_numpy(queries), torch.from_numpy(gallery), data_range, max_pairs_per_chunk=chunk)
    reference = np.array([[_skimage(q, g, data_range) for g in gallery] for q in queries])
    assert ours.shape == (3, 4) and ours.dtype == torch.float64
    np.testing.assert_allclose(ours.numpy(), reference, atol=1e-5, rtol=0)


def test_ssim_float32_and_per_pair_range():
    rng = np.random.default_rng(0)
    queries = rng.random((2, 50, 50)) ** 4 / 50  # peaky, attention-like
    gallery = rng.random((3, 50, 50)) ** 4 / 50
    ours = pairwise_ssim(torch.from_numpy(queries).float(), torch.from_numpy(gallery).float(), 1.0)
    reference = np.array([[_skimage(q, g, 1.0) for g in gallery] for q in queries])
    np.testing.assert_allclose(ours.double().numpy(), reference, atol=1e-5)
    # data_range=None: per pair, the larger max - min of the two maps (torchmetrics' choice)
    ours = pairwise_ssim(torch.from_numpy(queries), torch.from_numpy(gallery), None)
    reference = np.array([[_skimage(q, g, max(np.ptp(q), np.ptp(g))) for g in gallery] for q in queries])
    np.testing.assert_allclose(ours.numpy(), reference, atol=1e-10)


def test_ssim_rejects_bad_input():
    with pytest.raises(ValueError, match="differ in size"):
        pairwise_ssim(torch.rand(2, 20, 20), torch.rand(2, 21, 20), 1.0)
    with pytest.raises(ValueError, match="smaller than"):
        pairwise_ssim(torch.rand(2, 8, 8), torch.rand(2, 8, 8), 1.0)
    with pytest.raises(ValueError, match="data_range"):
        pairwise_ssim(torch.rand(2, 20, 20), torch.rand(2, 20, 20), 0.0)
    with pytest.raises(ValueError, match="constant"):  # per-pair range 0: SSIM would be 0 / 0
        pairwise_ssim(torch.zeros(2, 20, 20), torch.zeros(2, 20, 20), None)
    with pytest.raises(ValueError, match="NaN"):
        pairwise_ssim(torch.full((2, 20, 20), float("nan")), torch.rand(2, 20, 20), 1.0)
    with pytest.raises(ValueError, match="sigma"):
        pairwise_ssim(torch.rand(2, 20, 20), torch.rand(2, 20, 20), 1.0, sigma=0.0)
    with pytest.raises(TypeError, match="torch.from_numpy"):
        pairwise_ssim(np.random.rand(2, 20, 20), np.random.rand(2, 20, 20), 1.0)


def test_hits_at_k_counts_an_undefined_score_as_a_miss():
    similarity = torch.tensor([[float("nan"), 0.1], [float("nan"), 0.5]])  # query 1: correct 0.5, other NaN
    assert hits_at_k(similarity, ks=(1,)) == {1: 0.5}


def test_hits_at_k_known_answer():
    # query 0: correct first; query 1: correct third; query 2: correct tied with another -> rank 2
    similarity = torch.tensor([
        [0.9, 0.1, 0.2, 0.0],
        [0.8, 0.5, 0.7, 0.1],
        [0.3, 0.6, 0.6, 0.2],
    ])
    hits = hits_at_k(similarity, ks=(1, 2, 3))
    assert hits == {1: pytest.approx(1 / 3), 2: pytest.approx(2 / 3), 3: pytest.approx(1.0)}
    # explicit answers
    assert hits_at_k(similarity, ks=(1,), answers=torch.tensor([0, 0, 1]))[1] == pytest.approx(2 / 3)
    # a constant similarity is never a hit (ties count against the query)
    assert hits_at_k(torch.ones(4, 4), ks=(1,))[1] == 0.0
    assert chance_hits(100, 5) == 0.05 and chance_hits(3, 5) == 1.0
