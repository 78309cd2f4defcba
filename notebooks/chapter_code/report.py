"""The report page (chapter 08): every published number of the paper beside ours, judged by the reproduction rule,
and the intro's claims-at-a-glance table.

The published numbers (:func:`olacore.report.published`) and the chapters' verdict rules live in
:mod:`olacore.report`; the rule of this page, :func:`reproduction`, is stated in words on the page "How claims are
judged" ({ref}`claims-reproduction`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from olacore.report import CANNOT_JUDGE, FAILS, HOLDS, MARGIN, NOT_TESTED, WEAK, published, value_span, verdict
from olacore.results import HELD_OUT, OFFICIAL, ChapterResults
from olacore.store import atomic_write_text

__all__ = ["REPRODUCED", "BELOW", "WEAKLY", "NOT_REPRODUCED", "NOT_MEASURED", "TOLERANCE", "reproduction",
           "report_chapters", "report_table", "report_summary", "HEADLINE_CLAIMS", "claims_table", "write_claims"]

#: The report page's verdicts (:func:`reproduction`).
REPRODUCED, BELOW, WEAKLY, NOT_REPRODUCED, NOT_MEASURED = (
    "reproduced", "holds here, below the paper", "holds weakly here", "not reproduced here", "not measured yet")

#: Points (percent) by which our number may miss the paper's and still reproduce it.
TOLERANCE = 10.0


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


def report_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Count of rows per section and verdict (from :func:`report_table`)."""
    return table.groupby(["section", "verdict"], sort=False).size().unstack("verdict", fill_value=0)


def report_chapters(notebooks: str | os.PathLike, report: str) -> list[str]:
    """The chapters a report reads: ``NN_*.py``, then ``aN_*.py``, less ``report``."""
    folder = Path(notebooks)
    sources = sorted(folder.glob("[0-9][0-9]_*.py")) + sorted(folder.glob("a[0-9]_*.py"))
    return [p.stem for p in sources if p.stem != report]


def report_table(results: Mapping[str, ChapterResults]) -> pd.DataFrame:
    """One row per published number and our subject (``results``: chapter stem -> its results): the paper, ours
    under both protocols, their difference and a verdict (NaN where a number does not exist).

    Raises:
        ValueError: two records of one subject, published number and protocol.
    """
    found: dict[str, dict[str, dict[str, object]]] = {}
    for chapter, chapter_results in results.items():
        for record in chapter_results.records:
            for key in record.paper_keys:
                entry = found.setdefault(key, {}).setdefault(record.subject or record.key, {"chapter": chapter})
                slot = HELD_OUT if record.protocol == HELD_OUT else OFFICIAL
                if slot in entry:
                    raise ValueError(f"{chapter}: two {slot} records of {key!r} for {record.subject or record.key!r}")
                entry[slot] = record
    rows = []
    for item in published():
        subjects = found.get(item.key) or {"": {"chapter": item.chapter}}
        for subject, entry in subjects.items():
            official, held_out = entry.get(OFFICIAL), entry.get(HELD_OUT)
            chosen = official or held_out
            slot = OFFICIAL if official is not None else HELD_OUT
            beside = found.get(item.reference, {}).get(subject, {}).get(slot) if item.reference else None
            value = lambda r: np.nan if r is None else r.value  # noqa: E731
            # an official number whose protocol did not learn is compared with nothing
            gap = np.nan if official is not None and official.verdict == CANNOT_JUDGE else value(official) - value(held_out)
            verdict = reproduction(None if chosen is None else chosen.value, item.paper,
                                   None if chosen is None else chosen.chance, "" if chosen is None else chosen.verdict,
                                   reference=None if beside is None else beside.value, bound=item.bound)
            rows.append({"section": item.section, "published number": item.claim,
                         "paper %": np.nan if item.paper is None else item.paper, "ours: model": subject or "-",
                         "ours: official protocol %": value(official), "ours: held-out protocol %": value(held_out),
                         "official - held-out": gap, "verdict": verdict,
                         "chapter": entry["chapter"]})
    return pd.DataFrame(rows)


#: The paper's headline claims, for the intro's table: (section of :func:`published`, words every
#: one of its published numbers must contain, the claim in words).
HEADLINE_CLAIMS = (
    ("SSIM retrieval", ("Hits@1", "1st-order"),
     "First-order OLA of a text is similar enough across models to retrieve the text (SSIM Hits@1)"),
    ("visual proxy", ("order 1",),
     "A classifier trained on other models' first-order OLA names the text from a new model's (accuracy)"),
    ("visual proxy", ("rollout",), "First-order OLA beats rollout as the classifier's input (accuracy on rollout)"),
    ("controls", (), "The similarity vanishes without learned knowledge: random weights, shuffled layers, noise "
                     "(Hits@1)"),
    ("syntax", ("UAS", "order 1"), "A parser reads dependency heads from first-order OLA alone (UAS)"),
    ("syntax", ("UAS", "rollout"), "First-order OLA carries more syntax than rollout (UAS from rollout)"),
    ("TOA relation extraction", ("adapter trained",),
     "An adapter trained on one model's OLA works on another's without training (accuracy)"),
    ("TOA relation extraction", ("zero-shot",), "Zero-shot prompting is a lower bound the adapter beats (accuracy)"),
)


def claims_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per headline claim (:data:`HEADLINE_CLAIMS`) of a :func:`report_table`: ``claim, paper %, ours %``
    (spans) and the verdicts counted."""
    rows = []
    for section, words, claim in HEADLINE_CLAIMS:
        group = table[(table["section"] == section)
                      & table["published number"].map(lambda name, words=words: all(word in name for word in words))]
        if group.empty:
            continue
        ours = group["ours: official protocol %"].fillna(group["ours: held-out protocol %"])
        measured = group[ours.notna()]
        if measured.empty:
            rows.append({"claim": claim, "paper %": value_span(group["paper %"]), "ours %": "-",
                         "verdict": f"not measured at this profile (0 of {len(group)} published numbers)"})
            continue
        counts = measured["verdict"].value_counts()
        rows.append({"claim": claim, "paper %": value_span(measured["paper %"]), "ours %": value_span(ours[ours.notna()]),
                     "verdict": ", ".join(f"{verdict} {count}" for verdict, count in counts.items())
                     + f" ({len(measured)} of {len(group)} published numbers measured)"})
    return pd.DataFrame(rows, columns=["claim", "paper %", "ours %", "verdict"])


def write_claims(table: pd.DataFrame, profile: str, path: str | os.PathLike) -> Path:
    """Write the intro page's one-glance table (:func:`claims_table` of a :func:`report_table`) as MyST to ``path``."""
    from olacore.plots import LabelledTable

    claims = LabelledTable(claims_table(table), "tbl-claims-at-a-glance",
                           f"The paper's headline claims at a glance ({profile} profile): the span of the paper's "
                           "numbers that we measured and of ours beside them (%; a dash: none, or none published), and "
                           "how many of them got each verdict ({doc}`/book/generated/08_report` has every number and "
                           "the rule).", decimals=1)
    return atomic_write_text(path, claims.to_markdown() + "\n")
