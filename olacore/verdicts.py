"""Verdict rules: fixed before the runs, so a chapter's conclusions are computed, never typed.

- :func:`verdict`: a claim measured as a rate against its chance level.
- :func:`better`: a claim that one measured value exceeds another.
- :func:`vanishes`: a control's verdict on "OLAS vanishes without learned knowledge".
- :func:`reproduction`: the report page's verdict on one published number.
"""

from __future__ import annotations

import math

__all__ = ["HOLDS", "WEAK", "FAILS", "verdict", "better", "vanishes", "STRONG_NOISE", "REPRODUCED", "BELOW",
           "NOT_REPRODUCED", "NOT_MEASURED", "TOLERANCE", "reproduction"]

HOLDS, WEAK, FAILS = "holds", "holds weakly", "does not hold here"

REPRODUCED, BELOW, NOT_REPRODUCED, NOT_MEASURED = (
    "reproduced", "holds here, below the paper", "not reproduced here", "not measured yet")

#: Points (percent) by which our number may fall short of the paper's and still reproduce it.
TOLERANCE = 10.0

#: Noise scales (x each tensor's own std) at and above which a control is expected to remove
#: OLAS; milder noise is a dose-response point, not a test of the claim.
STRONG_NOISE = 0.3


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
    :data:`STRONG_NOISE` or more, not to the trained model nor to mild noise. OLAS *vanishes*
    when the similarity that remains does not even hold weakly (:func:`verdict`).
    """
    if control == "trained" or (control == "noise" and scale < STRONG_NOISE):
        return "-"
    return "yes" if verdict(observed, chance) == FAILS else "no"


def reproduction(ours: float | None, paper: float | None, chance: float | None = None, claim: str = "") -> str:
    """The report page's verdict on one published number (percent values; fixed before the runs).

    - no number of ours: ``"not measured yet"``;
    - a qualitative claim (``paper`` is ``None``): the chapter's own verdict ``claim`` decides
      (``"yes"`` or ``"holds"``: reproduced; anything else: not reproduced);
    - ours does not hold even weakly against chance (:func:`verdict`, with ``chance``; without a
      chance level, the chapter's verdict ``claim``): ``"not reproduced here"``, however close
      to the paper's number (a number at chance reproduces nothing);
    - ``ours >= paper - TOLERANCE``: ``"reproduced"``; short of that: ``"holds here, below
      the paper"``;
    - with neither a chance level nor a chapter verdict, only the tolerance decides
      (reproduced, or not reproduced here).

    Raises:
        ValueError: ``ours``, ``paper`` or ``chance`` is NaN.
    """
    if ours is None:
        return NOT_MEASURED
    if any(x is not None and math.isnan(x) for x in (ours, paper, chance)):
        raise ValueError("a reproduction verdict needs defined numbers; got NaN")
    if paper is None:
        return REPRODUCED if claim in ("yes", HOLDS) else NOT_REPRODUCED
    close = ours >= paper - TOLERANCE
    holds = verdict(ours / 100, chance / 100) if chance is not None else claim
    if not holds:
        return REPRODUCED if close else NOT_REPRODUCED
    if holds not in (HOLDS, WEAK):
        return NOT_REPRODUCED
    return REPRODUCED if close else BELOW
