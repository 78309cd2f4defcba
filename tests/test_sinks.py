"""Attention sinks (olacore.maps): the official rule (row maximum and mean + 3 std), and causal mirroring.

The rule (official ``models/ola_utils.py``, ``get_outliers_mask``), per row over the entries its
statistics cover (the whole row with ``stats="row"``; ``j <= i`` of a causal map with
``stats="causal"``): zero every entry equal to the row maximum and every entry above
``mean + 3 std`` (sample std, ``n - 1``), then renormalise. The reference below applies it with
plain loops, row by row.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from conftest import random_attention
from olacore.maps import clean_sinks, mirror_causal, sink_flags


def _reference(maps: np.ndarray, causal: bool, num_std: float = 3.0, stats: str = "row") -> np.ndarray:
    out = np.zeros_like(maps)
    for i, row in enumerate(maps):
        valid = row[: i + 1] if causal and stats == "causal" else row
        std = valid.std(ddof=1) if len(valid) > 1 else 0.0
        threshold = valid.mean() + num_std * std
        kept = np.where((valid > threshold) | (valid == valid.max()), 0.0, valid)
        if kept.sum() > 0:
            kept = kept / kept.sum()
        out[i, : len(kept)] = kept
    return out


def _threshold(values: np.ndarray) -> float:
    return float(values.mean() + 3 * values.std(ddof=1))


def _row_with(value: float, size: int = 30) -> np.ndarray:
    """A row: small background, a clear maximum 0.5 at the end, ``value`` at position 5."""
    row = np.full(size, 0.01)
    row[-1] = 0.5
    row[5] = value
    return row


def _crossing() -> float:
    """The value of entry 5 that sits exactly at mean + 3 std of its own row (bisection)."""
    low, high = 0.01, 0.5  # entry 5 is below its threshold at 0.01, above it at 0.5
    assert _row_with(low)[5] < _threshold(_row_with(low)) and _row_with(high)[5] > _threshold(_row_with(high))
    for _ in range(100):
        middle = (low + high) / 2
        if middle > _threshold(_row_with(middle)):
            high = middle
        else:
            low = middle
    return (low + high) / 2


def test_an_entry_above_mean_plus_three_std_is_removed_though_not_the_maximum():
    crossing = _crossing()
    assert 0.05 < crossing < 0.5  # a second peak, well below the row maximum
    above = _row_with(crossing * 1.001)
    below = _row_with(crossing * 0.999)
    assert above[5] > _threshold(above) and below[5] < _threshold(below)
    maps = torch.tensor(np.stack([above, below] + [np.full(30, 1 / 30)] * 28))
    cleaned = clean_sinks(maps, causal=False)
    assert cleaned[0, 5] == 0 and cleaned[0, -1] == 0  # the second peak and the maximum
    assert cleaned[1, 5] > 0 and cleaned[1, -1] == 0  # just below the threshold: kept
    # the rest of each row is kept, renormalised
    torch.testing.assert_close(cleaned[1, 5], torch.tensor(below[5] / below[:-1].sum(), dtype=torch.float64))
    torch.testing.assert_close(cleaned[0, :5], torch.full((5,), 1 / 28, dtype=torch.float64))
    torch.testing.assert_close(cleaned.sum(-1)[:2], torch.ones(2, dtype=torch.float64))


def test_a_hand_made_causal_map_is_flagged_differently_by_the_two_statistics():
    """Row 9 of a causal map: entry 8 is a sink over the whole row (the 20 structural zeros above the
    diagonal pull mean and std down) but not over its causal part; the row maximum is flagged by both."""
    size, i = 30, 9
    row = np.zeros(size)
    row[: i + 1] = [0.1] * 8 + [0.45, 0.5]
    row = row / row.sum()
    valid = row[: i + 1]
    assert _threshold(row) < row[8] < _threshold(valid)
    maps = torch.tensor(np.tril(np.full((size, size), 1.0)))
    maps = maps / maps.sum(-1, keepdim=True)
    maps[i] = torch.tensor(row)
    whole_row = sink_flags(maps, causal=True, stats="row")
    causal_part = sink_flags(maps, causal=True, stats="causal")
    assert whole_row[i, 8] and not causal_part[i, 8]
    assert whole_row[i, 9] and causal_part[i, 9]
    assert not whole_row[i, :8].any() and not causal_part[i, :8].any()
    cleaned_row, cleaned_causal = clean_sinks(maps, True, stats="row"), clean_sinks(maps, True, stats="causal")
    assert cleaned_row[i, 8] == 0 and cleaned_causal[i, 8] > 0
    torch.testing.assert_close(cleaned_row[i, :8], torch.full((8,), 1 / 8, dtype=torch.float64))
    # the default is the official similarity scripts' choice: the whole row
    assert torch.equal(clean_sinks(maps, causal=True), cleaned_row)
    # for an encoder the two are the same: the whole row
    assert torch.equal(clean_sinks(maps, False, stats="causal"), clean_sinks(maps, False, stats="row"))


def test_every_entry_tied_with_the_row_maximum_is_flagged():
    maps = torch.tensor([[0.4, 0.1, 0.4, 0.1], [0.25] * 4, [0.3, 0.3, 0.2, 0.2], [0.1, 0.2, 0.3, 0.4]])
    flags = sink_flags(maps, causal=False)
    assert flags[0].tolist() == [True, False, True, False]
    assert flags[1].all()  # a flat row: every entry is its maximum, the row becomes zeros
    assert flags[2].tolist() == [True, True, False, False]
    cleaned = clean_sinks(maps, causal=False)
    torch.testing.assert_close(cleaned[0], torch.tensor([0.0, 0.5, 0.0, 0.5]))
    assert torch.all(cleaned[1] == 0)


def test_the_threshold_uses_the_sample_standard_deviation():
    """A second peak between mean + 3 x population std and mean + 3 x sample std: the official
    (sample) rule keeps it, a population-std rule would flag it."""
    population = lambda v: v.mean() + 3 * v.std()  # noqa: E731
    low, high = 0.01, 0.5
    for _ in range(100):  # the value of entry 5 at its row's population threshold
        middle = (low + high) / 2
        low, high = (low, middle) if middle > population(_row_with(middle)) else (middle, high)
    row = _row_with(high * 1.001)
    assert population(row) < row[5] < _threshold(row)
    flags = sink_flags(torch.tensor(np.stack([row] * 30)), causal=False)
    assert flags[0, -1] and not flags[0, 5]


def test_an_unknown_statistic_is_refused_naming_both():
    with pytest.raises(ValueError, match="row"):
        clean_sinks(torch.eye(3), causal=True, stats="lower")


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 24), st.booleans(), st.integers(0, 10_000), st.sampled_from([1.0, 2.0, 3.0]),
       st.sampled_from(["row", "causal"]))
def test_clean_sinks_equals_the_rule_row_by_row(size, causal, seed, num_std, stats):
    maps = random_attention(torch.Generator().manual_seed(seed), 1, 1, size, causal)[0, 0] ** 3
    maps = maps / maps.sum(-1, keepdim=True)
    cleaned = clean_sinks(maps, causal=causal, num_std=num_std, stats=stats)
    expected = _reference(maps.numpy(), causal, num_std, stats)
    np.testing.assert_allclose(cleaned.numpy(), expected, atol=1e-12, rtol=0)


def test_clean_sinks_removes_the_sink_column_and_renormalises():
    size = 8
    maps = torch.full((size, size), 0.02).tril()
    maps[:, 0] = 1.0
    maps = maps / maps.sum(-1, keepdim=True)
    cleaned = clean_sinks(maps, causal=True, stats="causal")
    assert torch.all(cleaned[1:, 0] == 0)
    assert torch.all(cleaned[0] == 0)  # the first causal row only had its sink
    torch.testing.assert_close(cleaned[1:].sum(-1), torch.ones(size - 1))
    assert torch.equal(cleaned, cleaned.tril())


def test_clean_sinks_bidirectional_uses_whole_row():
    maps = torch.tensor([[0.1, 0.2, 0.7], [0.3, 0.3, 0.4], [0.25, 0.5, 0.25]])
    cleaned = clean_sinks(maps, causal=False)
    assert cleaned[0, 2] == 0 and cleaned[2, 1] == 0
    torch.testing.assert_close(cleaned.sum(-1), torch.ones(3))


def test_clean_sinks_keeps_leading_dimensions():
    maps = random_attention(torch.Generator().manual_seed(0), 2, 3, 6, True)
    cleaned = clean_sinks(maps, causal=True)
    assert cleaned.shape == maps.shape
    torch.testing.assert_close(cleaned[1, 2], clean_sinks(maps[1, 2], causal=True))


def test_mirror_causal_is_symmetric():
    maps = torch.rand(3, 5, 5).tril()
    mirrored = mirror_causal(maps)
    torch.testing.assert_close(mirrored, mirrored.transpose(-1, -2))
    torch.testing.assert_close(mirrored.tril(), maps)
