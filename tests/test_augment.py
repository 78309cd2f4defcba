"""The OLA augmentations (olacore.augment): the official fake sinks and map noise, and the held-out proxy's batch variant.

The official rules are read from ``models/ola_augmentations.py`` and ``models/ola_utils.py``
(see the docstrings of ``fake_sinks`` and ``map_noise``).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import random_attention, sink_map
from hypothesis import given, settings, strategies as st

from olacore.augment import (
    COLUMN_DRAWS,
    TOA,
    VISUAL_PROXY,
    Augmentation,
    BatchAugmentation,
    augment,
    augment_batch,
    fake_sinks,
    map_noise,
)

SINKS_ONLY = dataclasses.replace(VISUAL_PROXY, sink_p=1.0, noise_p=0.0)
NOISE_ONLY = dataclasses.replace(VISUAL_PROXY, sink_p=0.0, noise_p=1.0)


# --- the official rules ------------------------------------------------------------------------


def test_fake_sink_columns_follow_the_stored_official_rule():
    maps = sink_map(12, 0)
    out = augment(maps, True, SINKS_ONLY, torch.Generator().manual_seed(3), stats="row", column_draw="multinomial")
    torch.testing.assert_close(out.sum(-1), torch.ones(1, 12))
    raised = (out * maps.sum(-1, keepdim=True) > maps + 1e-6).all(1)[0]  # columns raised in every row
    assert 1 <= int(raised.sum()) <= 3
    # with whole-row statistics (the official similarity scripts) the upper triangle is covered too
    assert out[0].triu(1).sum() > 0
    causal = augment(maps, True, SINKS_ONLY, torch.Generator().manual_seed(3), stats="causal", column_draw="multinomial")
    assert causal[0].triu(1).sum() == 0
    # before renormalisation each raised entry gained m1 + (u - 0.5)(m1 - m2): within half a gap of
    # its row's maximum m1 (m2: the second largest); the row's total gain is undone by the renormalisation
    top = maps[0].topk(2, dim=-1).values
    m1, m2 = top[:, 0], top[:, 1]
    for column in raised.nonzero().flatten().tolist():
        scale = 1 / out[0][:, [c for c in range(12) if not raised[c]]].sum(-1) * maps[0][:, ~raised].sum(-1)
        gained = out[0][:, column] * scale - maps[0][:, column]
        assert (gained >= m1 - (m1 - m2) / 2 - 1e-5).all() and (gained <= m1 + (m1 - m2) / 2 + 1e-5).all()
    off = Augmentation(sink_p=0.0, noise_p=0.0)
    assert not off.active and torch.equal(augment(maps, True, off, torch.Generator().manual_seed(0)), maps)


def test_noise_is_scaled_by_the_row_std_and_stays_where_the_statistics_look():
    maps = sink_map(16, 1)
    out = augment(maps, True, NOISE_ONLY, torch.Generator().manual_seed(0), stats="causal")
    assert (out >= 0).all() and out[0].triu(1).sum() == 0 and not torch.allclose(out, maps)
    torch.testing.assert_close(out.sum(-1), torch.ones(1, 16))
    small = augment(maps, True, dataclasses.replace(NOISE_ONLY, noise_std_ratio=1e-4), torch.Generator().manual_seed(0),
                    stats="causal")
    torch.testing.assert_close(small, maps, atol=1e-4, rtol=0)


def test_both_column_draws_pick_distinct_columns_uniformly():
    """The two draws differ only in the random stream: over many draws each column is picked
    about equally often, and never twice at once."""
    maps = random_attention(torch.Generator().manual_seed(0), 1, 1, 6, False, torch.float32)[0]
    for draw in COLUMN_DRAWS:
        counts = torch.zeros(6)
        gen = torch.Generator().manual_seed(1)
        for _ in range(600):
            out = fake_sinks(maps, False, 2, gen, stats="row", column_draw=draw)
            raised = ((out - maps) > 0).all(0).any(0)  # a column raised in at least one row
            counts += raised.float()
        assert counts.sum() >= 600 * 2 * 0.9  # two columns each time (a column may rarely gain nothing)
        assert counts.min() > 0.7 * counts.mean() and counts.max() < 1.3 * counts.mean()


def test_the_settings_are_checked():
    with pytest.raises(ValueError, match="sink_p"):
        Augmentation(sink_p=1.5)
    with pytest.raises(ValueError, match="sink_min"):
        Augmentation(sink_min=3, sink_max=2)
    with pytest.raises(ValueError, match="noise_std_ratio"):
        Augmentation(noise_std_ratio=-1.0)
    assert TOA.noise_p == 0.3 and VISUAL_PROXY.noise_p == 0.15  # utils/arguments.py, olas_visual_model.py


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 12), channels=st.integers(1, 3), causal=st.booleans(), stats=st.sampled_from(["row", "causal"]),
       draw=st.sampled_from(COLUMN_DRAWS), seed=st.integers(0, 2**31 - 1),
       strengths=st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 3)))
def test_augmented_maps_stay_row_stochastic_and_keep_causal_zeros(size, channels, causal, stats, draw, seed, strengths):
    """Property: whatever fires, entries stay non-negative and every row sums to one (map noise
    may clip a whole row to zero, which the official renormalisation leaves at zero: strong noise
    only), and with causal-part statistics a causal map stays zero above the diagonal."""
    sink_p, noise_p, ratio = strengths
    gen = torch.Generator().manual_seed(seed)
    maps = random_attention(gen, 1, channels, size, causal, torch.float32)[0]
    settings_ = Augmentation(sink_p=sink_p, sink_min=1, sink_max=3, noise_p=noise_p, noise_std_ratio=ratio)
    pieces = [augment(maps, causal, settings_, gen, stats=stats, column_draw=draw),
              fake_sinks(maps, causal, 3, gen, stats=stats, column_draw=draw),
              map_noise(maps, causal, ratio, gen, stats=stats)]
    torch.testing.assert_close(pieces[1].sum(-1), torch.ones(channels, size), atol=1e-5, rtol=0)
    for out in pieces:
        assert out.shape == maps.shape and bool((out >= 0).all())
        sums = out.sum(-1)
        assert bool((((sums - 1).abs() < 1e-5) | (sums == 0)).all())
        if causal and stats == "causal":
            assert float(out.triu(1).abs().sum()) == 0.0


# --- the held-out proxy's batch variant -------------------------------------------------------------


def test_batch_augmentation_keeps_row_mass_and_shape():
    maps = torch.rand(5, 2, 12, 12).softmax(-1)
    gen = torch.Generator().manual_seed(0)
    out = augment_batch(maps, BatchAugmentation(noise_p=1.0, sink_p=1.0), gen)
    assert out.shape == maps.shape and (out >= 0).all()
    torch.testing.assert_close(out.sum(-1), maps.sum(-1))
    assert not torch.allclose(out, maps)
    torch.testing.assert_close(augment_batch(maps, BatchAugmentation(noise_p=0.0, sink_p=0.0)), maps)
