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
    # a constant similarity is never a hit (ties count against the query)
    assert hits_at_k(torch.ones(4, 4), ks=(1,))[1] == 0.0
    assert chance_hits(100, 5) == 0.05 and chance_hits(3, 5) == 1.0


# ---------------------------------------------------------------------------------------------
# Issue #13: low-contrast maps, offsets and scales; bad arguments and empty sets
# ---------------------------------------------------------------------------------------------


def _exact_ssim(q: np.ndarray, g: np.ndarray, data_range: float | None) -> float:
    """skimage's formula (Gaussian window, population moments, valid pixels) in extended precision.

    An independent reference where skimage's float64 ``E[x^2] - mu^2`` itself cancels (maps
    far from zero with a tiny spread): long double, and the (co)variances taken of each map
    less its mean (an exact identity; even long double loses 1e-8 of a variance of 1e-9 at an
    offset of 0.5 otherwise).
    """
    wide = np.longdouble
    q, g = q.astype(wide), g.astype(wide)
    qc, gc = q - q.mean(), g - g.mean()
    if data_range is None:
        data_range = max(np.ptp(q), np.ptp(g))
    window = gaussian_window(1.5).numpy().astype(wide)
    taps = window.size

    def smooth(image):  # 'valid' separable filter
        rows = np.stack([image[:, j:j + taps] @ window for j in range(image.shape[1] - taps + 1)], axis=1)
        return np.stack([window @ rows[i:i + taps] for i in range(image.shape[0] - taps + 1)], axis=0)

    mu_q, mu_g = smooth(q), smooth(g)
    mu_qc, mu_gc = smooth(qc), smooth(gc)
    var_q, var_g = smooth(qc * qc) - mu_qc**2, smooth(gc * gc) - mu_gc**2
    cov = smooth(qc * gc) - mu_qc * mu_gc
    c1, c2 = (wide(0.01) * wide(data_range)) ** 2, (wide(0.03) * wide(data_range)) ** 2
    ssim = (2 * mu_q * mu_g + c1) * (2 * cov + c2) / ((mu_q**2 + mu_g**2 + c1) * (var_q + var_g + c2))
    return float(ssim.mean())


def test_exact_reference_equals_skimage():
    rng = np.random.default_rng(3)
    q, g = rng.random((2, 30, 30)) ** 2
    assert abs(_exact_ssim(q, g, 1.0) - _skimage(q, g, 1.0)) < 1e-12


def _low_contrast_case():
    """The issue's case: 50 x 50 maps of 0.5 + 1e-4 * uniform noise; the query is a noisy copy of item 0."""
    rng = np.random.default_rng(13)
    gallery = 0.5 + 1e-4 * rng.random((3, 50, 50))
    query = gallery[0] + 1e-6 * rng.standard_normal((50, 50))
    return query[None], gallery


def test_low_contrast_float32_maps_match_skimage_and_rank_as_float64():
    queries, gallery = _low_contrast_case()
    q32, g32 = torch.from_numpy(queries).float(), torch.from_numpy(gallery).float()
    reference = np.array([[_skimage(q, g, max(np.ptp(q), np.ptp(g))) for g in g32.double().numpy()]
                          for q in q32.double().numpy()])
    assert reference[0, 0] > 0.99 and abs(reference[0, 1]) < 0.05  # the 0.995, 0.015, -0.006
    ours = pairwise_ssim(q32, g32, None)
    assert ours.dtype == torch.float32
    assert (ours.abs() <= 1).all()  # was 47.8 and 132.5
    np.testing.assert_allclose(ours.double().numpy(), reference, atol=1e-5, rtol=0)
    in_float64 = pairwise_ssim(q32.double(), g32.double(), None)
    assert torch.equal(ours.argsort(1, descending=True), in_float64.argsort(1, descending=True))
    assert hits_at_k(ours, ks=(1,)) == {1: 1.0}  # the right item ranks first again (it was second)


_FAMILIES = {
    "low contrast": lambda rng: 0.5 + 1e-4 * rng.random((4, 50, 50)),
    "peaky (attention-like)": lambda rng: rng.random((4, 50, 50)) ** 4 / 50,
    "diagonal + noise": lambda rng: 0.5 * np.eye(50)[None] + 0.01 * rng.random((4, 50, 50)),
}


@pytest.mark.parametrize("family", sorted(_FAMILIES))
@pytest.mark.parametrize("scale, offset", [(1.0, 0.0), (1e-3, 0.0), (1e3, 0.0), (1.0, 10.0), (1e-3, -7.0), (1e3, 5.0)])
@pytest.mark.parametrize("explicit_range", [False, True])
def test_float32_ssim_is_exact_to_1e_5_at_any_scale_and_offset(family, scale, offset, explicit_range):
    maps = ((_FAMILIES[family](np.random.default_rng(7)) + offset) * scale).astype(np.float32)
    maps[1] = maps[0] + (maps[2] - maps[3]) * 0.05  # a near match, so values span [-1, 1] sensibly
    maps64 = maps.astype(np.float64)  # the float32 values, exactly
    data_range = float(np.ptp(maps64)) if explicit_range else None
    ours = pairwise_ssim(torch.from_numpy(maps[:2]), torch.from_numpy(maps), data_range)
    exact = np.array([[_exact_ssim(q, g, data_range) for g in maps64] for q in maps64[:2]])
    assert (ours.abs() <= 1).all()
    np.testing.assert_allclose(ours.double().numpy(), exact, atol=1e-5, rtol=0)
    in_float64 = pairwise_ssim(torch.from_numpy(maps64[:2]), torch.from_numpy(maps64), data_range)
    np.testing.assert_allclose(in_float64.numpy(), exact, atol=1e-9, rtol=0)
    assert torch.equal(ours.argmax(1), in_float64.argmax(1))


def test_near_binary_maps_stay_within_the_documented_float32_bound():
    rng = np.random.default_rng(5)
    step = (np.arange(50)[None, None, :] >= 25).astype(np.float64)
    maps = (step + 1e-3 * rng.random((4, 50, 50))).astype(np.float32)
    exact = np.array([[_exact_ssim(q, g, 1.0) for g in maps.astype(np.float64)] for q in maps.astype(np.float64)])
    ours = pairwise_ssim(torch.from_numpy(maps), torch.from_numpy(maps), 1.0).double().numpy()
    assert np.abs(ours - exact).max() < 3e-5  # float32's limit here (book/design.md): ~1e-5
    assert np.abs(pairwise_ssim(torch.from_numpy(maps).double(), torch.from_numpy(maps).double(), 1.0).numpy() - exact).max() < 1e-9


def test_identical_maps_give_one_and_never_more():
    maps = torch.rand(3, 30, 30, generator=torch.Generator().manual_seed(0)) ** 3
    same = pairwise_ssim(maps, maps, None).diagonal()
    assert (same <= 1).all() and torch.allclose(same, torch.ones(3), atol=1e-6)


def test_empty_query_or_gallery_gives_an_empty_matrix():
    maps = torch.rand(3, 20, 20)
    for data_range in (None, 1.0):
        assert pairwise_ssim(maps, maps[:0], data_range).shape == (3, 0)
        assert pairwise_ssim(maps[:0], maps, data_range).shape == (0, 3)
        assert pairwise_ssim(maps[:0].double(), maps[:0], data_range).dtype == torch.float64


@pytest.mark.parametrize("bad, error, message", [
    ("1", TypeError, "must be a positive number"),
    (True, TypeError, "must be a positive number"),
    (float("nan"), ValueError, "must be a finite positive"),
    (float("inf"), ValueError, "must be a finite positive"),
    (-1.0, ValueError, "must be a finite positive"),
])
def test_ssim_scalars_are_checked(bad, error, message):
    maps = torch.rand(2, 20, 20)
    with pytest.raises(error, match=f"data_range {message}"):
        pairwise_ssim(maps, maps, bad)
    assert pairwise_ssim(maps, maps, np.float32(1.0)).shape == (2, 2)  # numpy scalars are numbers


@pytest.mark.parametrize("ks", [(0,), (1, -5), (), (1.5,), (True,), 5, "15"])
def test_hits_at_k_refuses_meaningless_cut_offs(ks):
    with pytest.raises(ValueError, match="non-empty sequence of positive ints"):
        hits_at_k(torch.rand(3, 3), ks=ks)


def test_hits_at_k_refuses_empty_and_short_galleries():
    with pytest.raises(ValueError, match="at least one query"):
        hits_at_k(torch.rand(0, 3))
    with pytest.raises(ValueError, match="at least one query"):
        hits_at_k(torch.rand(3, 0))
    with pytest.raises(ValueError, match="gallery"):
        hits_at_k(torch.rand(3, 2))
    assert hits_at_k(torch.eye(3), ks=(1, 10)) == {1: 1.0, 10: 1.0}  # k beyond G counts every query


@pytest.mark.parametrize("offset", [0.0, 0.5, 1.0, 10.0])
@pytest.mark.parametrize("contrast", [1e-1, 1e-2, 1e-3, 1e-4])
@pytest.mark.parametrize("family", ["noise", "gradient + noise", "peaky"])
def test_float32_error_is_only_the_rounding_of_the_inputs(offset, contrast, family):
    """Maps ``offset + contrast * pattern``, given in float32: the result is the exact SSIM of the
    float32 values to 1e-6, so its distance to the SSIM of the float64 maps is what rounding the
    inputs to float32 costs, plus at most 1e-6 (the issue's 1.8e-4 at 0.5 + 1e-4 noise was that
    rounding: float32 holds 0.5 to 3e-8, 3e-4 of such a map's contrast)."""
    rng = np.random.default_rng(int(offset * 10 + 1 / contrast) % 2**32)
    pattern = rng.random((3, 30, 30))
    if family == "gradient + noise":
        pattern = 0.7 * np.linspace(0.0, 1.0, 30)[None, None, :] + 0.3 * pattern
    elif family == "peaky":
        pattern = pattern**4
    maps = offset + contrast * pattern
    maps[1] = maps[0] + 0.1 * (maps[2] - maps[0])  # a near match
    as32 = maps.astype(np.float32)
    values = as32.astype(np.float64)  # the float32 values, exactly
    ours = pairwise_ssim(torch.from_numpy(as32), torch.from_numpy(as32), None).double().numpy()
    of_values = np.array([[_exact_ssim(q, g, None) for g in values] for q in values])
    of_maps = np.array([[_exact_ssim(q, g, None) for g in maps] for q in maps])
    assert np.abs(ours - of_values).max() < 1e-6
    assert np.abs(ours - of_maps).max() <= np.abs(of_values - of_maps).max() + 1e-6
