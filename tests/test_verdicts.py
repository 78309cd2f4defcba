"""Verdict rules (olacore.report, and the transfer bound rule of chapter_code.transfer) on their boundaries; an
undefined measurement is refused."""

from __future__ import annotations

import pytest

from olacore.report import (
    CANNOT_JUDGE,
    FAILS,
    HOLDS,
    LEARNED_TOL,
    MARGIN,
    NOT_TESTED,
    STRONG_NOISE,
    WEAK,
    better,
    claim_verdict,
    learned,
    learned_training_maps,
    protocol_verdict,
    vanishes,
    verdict,
)

from chapter_code.transfer import beats_bound

NAN = float("nan")


@pytest.mark.parametrize("observed, chance, expected", [
    # chance 0.02: holds from 0.5, holds weakly from 5 x chance = 0.1
    (0.5, 0.02, HOLDS), (0.4999, 0.02, WEAK), (0.1, 0.02, WEAK), (0.0999, 0.02, FAILS), (0.0, 0.02, FAILS),
    (1.0, 0.02, HOLDS),
    # chance 0.25: the strong bar is 3 x chance = 0.75, and no weak band is left below it
    (0.75, 0.25, HOLDS), (0.7499, 0.25, FAILS), (0.6, 0.25, FAILS),
    # chance 0.1: 5 x chance reaches the strong bar 0.5 itself
    (0.5, 0.1, HOLDS), (0.4999, 0.1, FAILS),
    # chance 0.001 (1000 texts): weak from 0.005
    (0.005, 0.001, WEAK), (0.0049, 0.001, FAILS),
])
def test_verdict_boundaries(observed, chance, expected):
    assert verdict(observed, chance) == expected


@pytest.mark.parametrize("observed, chance", [(NAN, 0.1), (0.5, NAN), (NAN, NAN)])
def test_verdict_refuses_nan(observed, chance):
    with pytest.raises(ValueError, match="NaN"):
        verdict(observed, chance)


def test_better_is_strict_and_refuses_nan():
    assert better(0.6, 0.5) == HOLDS
    assert better(0.5, 0.5) == FAILS
    assert better(0.6, 0.5, margin=0.1) == FAILS and better(0.61, 0.5, margin=0.1) == HOLDS
    for a, b in ((NAN, 0.5), (0.5, NAN)):
        with pytest.raises(ValueError, match="NaN"):
            better(a, b)


def test_vanishes_applies_only_to_structural_controls_and_strong_noise():
    assert vanishes("trained", 0.0, 0.01, 0.02) == "-"
    assert vanishes("noise", STRONG_NOISE - 1e-9, 0.0, 0.02) == "-"  # mild noise: a dose-response point
    assert vanishes("noise", STRONG_NOISE, 0.0, 0.02) == "yes"
    assert vanishes("noise", 1.0, 0.9, 0.02) == "no"
    assert vanishes("random init", NAN, 0.0999, 0.02) == "yes"  # structural controls have no scale
    assert vanishes("random init", NAN, 0.1, 0.02) == "no"  # still holds weakly: it has not vanished
    assert vanishes("shuffled layers", NAN, 0.6, 0.02) == "no"
    with pytest.raises(ValueError, match="NaN"):
        vanishes("shuffled layers", NAN, NAN, 0.02)


def test_claim_verdict_rule():
    assert claim_verdict([5.0, 4.0]) == HOLDS
    assert claim_verdict([8.0, -1.0]) == WEAK  # large mean, but behind on one seed
    assert claim_verdict([1.0]) == WEAK
    assert claim_verdict([MARGIN, MARGIN]) == WEAK  # the margin itself is not beyond it
    assert claim_verdict([-2.0, 1.0]) == FAILS
    for bad in ([], [NAN]):
        with pytest.raises(ValueError, match="differences"):
            claim_verdict(bad)


def test_a_toa_adapter_learned_only_beyond_the_tolerance():
    assert learned(19.0 + LEARNED_TOL + 0.1, 19.0) and not learned(19.0 + LEARNED_TOL, 19.0)
    assert not learned(NAN, 19.0) and not learned(60.0, NAN)


def test_a_transferred_cell_against_a_bound():
    assert beats_bound(25.0, 19.0) == HOLDS
    assert beats_bound(19.0 + 1e-9, 19.0) == FAILS  # equal up to rounding does not beat
    assert beats_bound(25.0, NAN) == "-"  # bound not measured
    assert beats_bound(25.0, 19.0, source_learned=False) == NOT_TESTED


def test_a_proxy_protocol_whose_network_did_not_learn_its_training_maps_cannot_be_judged():
    # chance 0.02: the training maps must be recognised at the "holds" bar, 50 %
    assert learned_training_maps(0.5, 0.02) and not learned_training_maps(0.4999, 0.02)
    assert protocol_verdict(0.9, 0.02, train_acc=0.02) == CANNOT_JUDGE  # a high target number does not rescue it
    assert protocol_verdict(0.03, 0.02, train_acc=1.0) == FAILS and protocol_verdict(0.6, 0.02, 1.0) == HOLDS
    with pytest.raises(ValueError, match="NaN"):
        protocol_verdict(0.5, 0.02, NAN)
