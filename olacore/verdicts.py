"""Verdict rules, all in one place: fixed before the runs, so a chapter's conclusions are computed, never typed.

Each rule names the sentence it prints (the constants below) and the margin or goal it reads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["HOLDS", "WEAK", "FAILS", "verdict", "better", "vanishes", "STRONG_NOISE", "MARGIN", "GOAL",
           "claim_verdict", "LEARNED_TOL", "NOT_TESTED", "NOT_MEASURED_HERE", "learned", "beats_bound",
           "CANNOT_JUDGE", "learned_training_maps", "protocol_verdict",
           "REPRODUCED", "BELOW", "WEAKLY", "NOT_REPRODUCED", "NOT_MEASURED", "TOLERANCE", "reproduction"]

#: A claim holds / holds weakly / does not hold (:func:`verdict`, :func:`better`, :func:`claim_verdict`).
HOLDS, WEAK, FAILS = "holds", "holds weakly", "does not hold here"

#: The report page's verdicts (:func:`reproduction`).
REPRODUCED, BELOW, WEAKLY, NOT_REPRODUCED, NOT_MEASURED = (
    "reproduced", "holds here, below the paper", "holds weakly here", "not reproduced here", "not measured yet")

#: Points (percent) by which our number may miss the paper's and still reproduce it.
TOLERANCE = 10.0

#: Noise scale (x each tensor's own std) from which a control is expected to remove OLAS; milder
#: noise is a dose-response point, not a test of the claim.
STRONG_NOISE = 0.3

#: Points by which one input must beat another, on the mean over seeds, for a claim to hold (about 3x
#: the seed std of order-1 UAS); a smaller positive difference holds weakly. The report page reads the
#: paper's orderings ("order 1 beats rollout") with the same margin.
MARGIN = 3.0
#: The syntax goal: order-1 UAS at least this many points above the distance-only baseline.
GOAL = 20.0

#: Points by which a target-trained TOA score must beat its task's majority bound to count as
#: learned: the claim margin (:data:`MARGIN`); a smaller edge is within sampling noise at these test sizes.
LEARNED_TOL = MARGIN
#: A transfer verdict where the source adapter did not learn its own task (:func:`learned`).
NOT_TESTED = "not tested: source did not learn"
#: A transfer verdict whose bound was not measured (no random-init twin, no zero-shot prompting).
NOT_MEASURED_HERE = "-"

#: The verdict on a number from a protocol whose network did not learn the maps it trains on
#: (:func:`protocol_verdict`): its target accuracy says nothing about OLAS, in either direction.
CANNOT_JUDGE = "cannot be judged here"


def verdict(observed: float, chance: float) -> str:
    """A claim measured as a rate (fraction) against its chance level.

    ``"holds"`` when ``observed >= max(0.5, 3 x chance)``; ``"holds weakly"`` when it is short
    of that but at least ``min(5 x chance, that bar)``; otherwise ``"does not hold here"``.

    Raises:
        ValueError: ``observed`` or ``chance`` is NaN (an empty or failed measurement).
    """
    if math.isnan(observed) or math.isnan(chance):
        raise ValueError("a verdict needs a measured rate and a chance level; got NaN")
    strong = max(0.5, 3 * chance)
    if observed >= strong:
        return HOLDS
    if observed >= min(5 * chance, strong):
        return WEAK
    return FAILS


def better(a: float, b: float, margin: float = 0.0) -> str:
    """``"holds"`` when ``a > b + margin``, else ``"does not hold here"`` (NaN refused)."""
    if math.isnan(a) or math.isnan(b):
        raise ValueError("a comparison needs two measured values; got NaN")
    return HOLDS if a > b + margin else FAILS


def vanishes(control: str, scale: float, observed: float, chance: float) -> str:
    """Does OLAS vanish under this control? ``"yes"``, ``"no"``, or ``"-"`` where the claim does not apply.

    It applies to the structural controls (random init, shuffled layers) and to noise at
    :data:`STRONG_NOISE` or more. OLAS *vanishes* when what remains does not even hold weakly (:func:`verdict`).
    """
    if control == "trained" or (control == "noise" and scale < STRONG_NOISE):
        return "-"
    return "yes" if verdict(observed, chance) == FAILS else "no"


def claim_verdict(differences: Sequence[float], margin: float = MARGIN) -> str:
    """The verdict on "A beats B" from the paired differences ``A - B`` (one per seed, points).

    ``"holds"`` when the mean difference exceeds ``margin`` and A is ahead on every seed;
    ``"holds weakly"`` when the mean difference is positive; otherwise ``"does not hold here"``.

    Raises:
        ValueError: no difference, or a NaN one.
    """
    values = np.asarray(list(differences), dtype=float)
    if values.size == 0 or np.isnan(values).any():
        raise ValueError(f"a verdict needs measured differences; got {values.tolist()}")
    if values.mean() > margin and (values > 0).all():
        return HOLDS
    return WEAK if values.mean() > 0 else FAILS


def learned(score: float, majority: float) -> bool:
    """Did a target-trained TOA adapter learn its task: ``score > majority + LEARNED_TOL`` (percent)?
    False where either value is NaN."""
    return bool(score > majority + LEARNED_TOL)


def beats_bound(transfer: float, bound: float, source_learned: bool = True) -> str:
    """A transferred TOA cell against one bound (zero-shot, random init, majority; percent).

    ``"-"`` where the bound is NaN (not measured); else :data:`NOT_TESTED` where the source adapter
    did not learn (:func:`learned`); else ``"holds"`` when above the bound by more than 1e-6,
    ``"does not hold here"`` otherwise.
    """
    if math.isnan(bound):
        return NOT_MEASURED_HERE
    return better(transfer, bound, margin=1e-6) if source_learned else NOT_TESTED


def learned_training_maps(train_acc: float, chance: float) -> bool:
    """Did a visual proxy learn the maps it trains on: its accuracy on its own (clean) training
    maps holds against chance (:func:`verdict` gives ``"holds"``)? Fractions; NaN refused.
    """
    return verdict(train_acc, chance) == HOLDS


def protocol_verdict(observed: float, chance: float, train_acc: float) -> str:
    """The verdict on a proxy protocol's target accuracy ``observed`` (fraction): :data:`CANNOT_JUDGE`
    where its network did not learn its training maps (:func:`learned_training_maps`, ``train_acc``),
    else :func:`verdict` against ``chance``."""
    return verdict(observed, chance) if learned_training_maps(train_acc, chance) else CANNOT_JUDGE


def reproduction(ours: float | None, paper: float | None, chance: float | None = None, claim: str = "",
                 reference: float | None = None, bound: bool = False) -> str:
    """The report page's verdict on one published number, judged against the paper's *claim*
    (percent values; fixed before the runs).

    In this order:

    - no number of ours: ``"not measured yet"``;
    - the chapter's verdict ``claim`` is :data:`CANNOT_JUDGE`: :data:`CANNOT_JUDGE`;
    - a qualitative claim (``paper`` is ``None``): ``claim`` ``"yes"`` or ``"holds"`` reproduces, anything
      else does not;
    - a rate whose chance is so high that :func:`verdict` cannot pass (``3 x chance`` above 100 %, e.g.
      Hits@5 among few texts; not for a lower ``bound``): :data:`CANNOT_JUDGE`;
    - a number the paper claims is beaten (``reference``: our number of what beats it, e.g. our
      order 1 beside our rollout): the claim is the ordering, read like the chapters' with
      :data:`MARGIN`: ours at or above the reference is ``"not reproduced here"``; the reference
      ahead by :data:`MARGIN` points or less, ``"holds weakly here"``; further ahead, ``"reproduced"``
      when ours is within :data:`TOLERANCE` points of the paper's or above it, else ``"holds here, below
      the paper"`` (no chance test: the paper itself reports the beaten number as weak);
    - ``claim`` is ``"does not hold here"`` or :data:`NOT_TESTED`: ``"not reproduced here"``;
    - a lower bound (``bound``, e.g. zero-shot prompting; no chance test): ``"reproduced"`` within
      :data:`TOLERANCE` points of the paper's either way, else ``"not reproduced here"``;
    - ours does not hold even weakly against chance (:func:`verdict` with ``chance``; without it,
      ``claim``): ``"not reproduced here"``, however close to the paper's number;
    - ``ours >= paper - TOLERANCE``: ``"reproduced"``, else ``"holds here, below the paper"``;
      with neither ``chance`` nor ``claim``, ``"reproduced"`` or ``"not reproduced here"``.

    Raises:
        ValueError: ``ours``, ``paper``, ``chance`` or ``reference`` is NaN.
    """
    if ours is None:
        return NOT_MEASURED
    if claim == CANNOT_JUDGE:
        return CANNOT_JUDGE
    if any(x is not None and math.isnan(x) for x in (ours, paper, chance, reference)):
        raise ValueError("a reproduction verdict needs defined numbers; got NaN")
    if paper is None:
        return REPRODUCED if claim in ("yes", HOLDS) else NOT_REPRODUCED
    if chance is not None and not bound and 3 * chance > 100:
        return CANNOT_JUDGE
    close = ours >= paper - TOLERANCE
    if reference is not None:
        if reference <= ours:
            return NOT_REPRODUCED
        if reference - ours <= MARGIN:
            return WEAKLY
        return REPRODUCED if close else BELOW
    if claim in (FAILS, NOT_TESTED):
        return NOT_REPRODUCED
    if bound:
        return REPRODUCED if abs(ours - paper) <= TOLERANCE else NOT_REPRODUCED
    holds = verdict(ours / 100, chance / 100) if chance is not None else claim
    if not holds:
        return REPRODUCED if close else NOT_REPRODUCED
    if holds not in (HOLDS, WEAK):
        return NOT_REPRODUCED
    return REPRODUCED if close else BELOW
