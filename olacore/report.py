"""The paper's published numbers, the keys our numbers stand beside them by, and the chapters' verdict rules.

Liang et al., NeurIPS 2025 (arXiv 2511.05064): the published numbers typed in once from its tables (retrieval and
visual proxy: section 4.1; syntax: 4.3; TOA transfer: 4.4), with its model names (Q = Qwen2, G = Gemma-2, L =
Llama-3.x). Our records (:mod:`olacore.results`) stand in the rows their ``paper_keys`` name, in the column of their
``protocol``; our causal models stand in for the paper's by family (:data:`ZOO_FAMILIES`). The verdict rules are
fixed before the runs; the report page's own rule and table are its module's, ``notebooks/chapter_code/report.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from olacore import channels as vocabulary

__all__ = ["paper_retrieval", "paper_proxy", "paper_syntax", "paper_toa_relation_extraction", "CAUSAL_PROXY_TARGETS",
           "Published", "published", "ZOO_FAMILIES", "PROXY_TARGET_NAMES", "paper_family", "retrieval_keys",
           "proxy_keys", "published_value", "paper_comparison", "value_span", "HOLDS", "WEAK", "FAILS", "verdict",
           "better", "vanishes", "STRONG_NOISE", "MARGIN", "GOAL", "claim_verdict", "LEARNED_TOL", "NOT_TESTED",
           "learned", "CANNOT_JUDGE", "learned_training_maps", "protocol_verdict"]

# SSIM retrieval, first-order OLA, Hits@1 / Hits@5 % (1000 texts).
_RETRIEVAL = [
    ("Qwen2-1.5B", "gemma-2-2b", 83.6, 89.4),
    ("Qwen2-1.5B", "Llama-3.2-3B", 95.9, 97.0),
    ("Llama-3.2-3B", "Qwen2-1.5B", 92.9, 96.1),
    ("Llama-3.2-3B", "gemma-2-2b", 94.1, 96.5),
]

#: Targets of the paper's causal visual-proxy table, in its column order.
CAUSAL_PROXY_TARGETS = ("Q-1b5", "Q-7b", "G-2b", "G-9b", "L-3b", "L-8b")
# Visual proxy, causal models, target accuracy % (1000 classes, 100k steps), per channel.
_PROXY = {
    "rollout": (27.9, 7.7, 52.6, 26.0, 66.1, 59.7),
    "order1": (52.6, 49.2, 93.1, 92.4, 94.6, 94.1),
    "order2": (67.1, 49.9, 89.3, 86.2, 90.7, 91.9),
    "alti": (22.6, 15.5, 69.3, 71.8, 85.6, 79.8),
}

# Dependency parsing from OLA alone (UD EWT), UAS / LAS % per channel.
_SYNTAX = {
    "BERT-base": {"order1": (81.29, 72.16), "order2": (72.86, 61.05), "order3": (66.44, 53.17), "rollout": (46.20, 30.69)},
    "RoBERTa-base": {"order1": (80.00, 70.44), "order2": (72.68, 60.10), "order3": (36.99, 18.67), "rollout": (35.77, 17.94)},
    "ELECTRA-base": {"order1": (81.23, 72.63), "order2": (77.47, 66.78), "order3": (50.72, 33.90), "rollout": (50.35, 34.02)},
}

# TOA relation extraction (SemEval-2010 Task 8), accuracy %: source -> targets, and zero-shot.
_TOA_RE_TARGETS = ("Qwen2-1.5B", "Gemma-2-2B", "Llama-3.2-3B")
_TOA_RE = {
    "Llama-3.2-3B": (30.49, 33.49, 35.57),
    "Qwen2-1.5B": (34.90, 30.95, 31.08),
    "zero-shot prompting": (7.69, 5.01, 14.65),
}


def paper_retrieval() -> pd.DataFrame:
    """The paper's SSIM retrieval, first order (section 4.1): ``source, target, hits@1, hits@5`` (percent)."""
    return pd.DataFrame(_RETRIEVAL, columns=["source", "target", "hits@1", "hits@5"])


def paper_proxy() -> pd.DataFrame:
    """The paper's visual proxy, causal targets (section 4.1): rows = channel (``order1``, ``order2``, ``rollout``,
    ``alti``), columns = :data:`CAUSAL_PROXY_TARGETS` and ``mean``, accuracy %."""
    table = pd.DataFrame(_PROXY, index=list(CAUSAL_PROXY_TARGETS)).T
    table["mean"] = table.mean(axis=1)
    return table


def paper_syntax() -> pd.DataFrame:
    """The paper's dependency parsing from OLA (section 4.3): ``model, channel, uas, las`` (percent)."""
    rows = [(m, c, uas, las) for m, by in _SYNTAX.items() for c, (uas, las) in by.items()]
    return pd.DataFrame(rows, columns=["model", "channel", "uas", "las"])


def paper_toa_relation_extraction() -> pd.DataFrame:
    """The paper's TOA transfer for relation extraction (section 4.4): rows = source (or ``"zero-shot prompting"``),
    columns = targets, accuracy %."""
    return pd.DataFrame(_TOA_RE, index=list(_TOA_RE_TARGETS)).T


#: This book's causal models and the paper's model family each stands in for.
ZOO_FAMILIES = {"qwen2.5-0.5b": "Q", "gemma-3-270m": "G", "smollm2-135m": "L"}
_PAPER_FAMILIES = {"qwen": "Q", "gemma": "G", "llama": "L"}
#: The paper's abbreviations of its causal proxy targets (:data:`CAUSAL_PROXY_TARGETS`), spelled out.
PROXY_TARGET_NAMES = {"Q-1b5": "Qwen2-1.5B-Instruct", "Q-7b": "Qwen2-7B-Instruct", "G-2b": "Gemma-2-2B-it",
                      "G-9b": "Gemma-2-9B-it", "L-3b": "Llama-3.2-3B-Instruct", "L-8b": "Llama-3.1-8B-Instruct"}
#: Display spellings of the paper's model names where its tables differ (one spelling across the book).
_DISPLAY_NAMES = {"gemma-2-2b": "Gemma-2-2B"}


@dataclass(frozen=True)
class Published:
    """One published number (or qualitative claim) of the paper.

    Attributes:
        key: the id records name in ``paper_keys`` (``"proxy/order1/G-2b"``).
        section: the experiment (``"SSIM retrieval"``, ``"visual proxy"``, ...).
        paper: the published value (percent), or ``None`` for a qualitative claim.
        chapter: the notebook stem that measures it.
        reference: the key of the number the paper claims beats this one (its order 1 beside its rollout).
        bound: a lower bound the method is claimed to beat (zero-shot prompting).
    """

    key: str
    section: str
    claim: str
    paper: float | None
    chapter: str
    reference: str = ""
    bound: bool = False


def published_value(key: str) -> float | None:
    """The published value of one :func:`published` key (``None`` for a qualitative claim).

    Raises:
        KeyError: no published number has that key.
    """
    for item in published():
        if item.key == key:
            return item.paper
    raise KeyError(f"no published number {key!r}")


def paper_family(name: str) -> str:
    """The family letter (``"Q"``, ``"G"``, ``"L"``) of one of our causal models or of the paper's.

    Raises:
        ValueError: a model of no known family.
    """
    if name in ZOO_FAMILIES:
        return ZOO_FAMILIES[name]
    if len(name) > 1 and name[0] in "QGL" and name[1] == "-":  # the proxy table's "Q-1b5"
        return name[0]
    for prefix, letter in _PAPER_FAMILIES.items():
        if name.rsplit("/", 1)[-1].lower().startswith(prefix):
            return letter
    raise ValueError(f"{name!r} belongs to no family of the paper's causal models (Qwen, Gemma, Llama)")


def published() -> list[Published]:
    """Every published number of the paper, and the controls' qualitative claims, in book order."""
    rows: list[Published] = []
    for _, r in paper_retrieval().iterrows():
        for metric in ("hits@1", "hits@5"):
            rows.append(Published(f"retrieval/{r['source']}->{r['target']}/{metric}", "SSIM retrieval",
                                  f"{metric.replace('hits', 'Hits')}, {_DISPLAY_NAMES.get(r['source'], r['source'])} -> "
                                  f"{_DISPLAY_NAMES.get(r['target'], r['target'])}, 1st-order OLA",
                                  float(r[metric]), "03_retrieval"))
    proxy = paper_proxy()
    for channel in proxy.index:
        for target in CAUSAL_PROXY_TARGETS:
            rows.append(Published(f"proxy/{channel}/{target}", "visual proxy",
                                  f"accuracy on target {target}, {vocabulary.label(channel)}",
                                  float(proxy.loc[channel, target]), "04_proxy",
                                  reference=f"proxy/order1/{target}" if channel in ("rollout", "alti") else ""))
    for control, claim in (("random init", "OLAS vanishes with randomly initialised parameters"),
                           ("shuffled layers", "OLAS vanishes with the layers in a random order"),
                           ("noise", "OLAS vanishes under strong parameter noise")):
        rows.append(Published(f"controls/{control}", "controls", claim, None, "05_controls"))
    for _, r in paper_syntax().iterrows():
        for metric in ("uas", "las"):
            rows.append(Published(f"syntax/{r['model']}/{r['channel']}/{metric}", "syntax",
                                  f"{metric.upper()}, {r['model']}, {vocabulary.label(r['channel'])}",
                                  float(r[metric]), "06_syntax",
                                  reference=f"syntax/{r['model']}/order1/{metric}" if r["channel"] != "order1" else ""))
    toa = paper_toa_relation_extraction()
    for source in toa.index:
        for target in toa.columns:
            rows.append(Published(f"toa-re/{source}/{target}", "TOA relation extraction",
                                  f"accuracy on {target}, adapter trained on {source}" if source != "zero-shot prompting"
                                  else f"accuracy on {target}, zero-shot prompting", float(toa.loc[source, target]),
                                  "07_toa", bound=source == "zero-shot prompting"))
    return rows


def retrieval_keys(source: str, target: str, metric: str = "hits@1") -> list[str]:
    """Keys of the published retrieval numbers whose (source, target) families are those of ours."""
    pair = (paper_family(source), paper_family(target))
    return [f"retrieval/{r['source']}->{r['target']}/{metric}" for _, r in paper_retrieval().iterrows()
            if (paper_family(r["source"]), paper_family(r["target"])) == pair]


def proxy_keys(target: str, channel: str) -> list[str]:
    """Keys of the published proxy numbers of ``channel`` on targets of the family of our ``target``."""
    if channel not in paper_proxy().index:
        return []
    return [f"proxy/{channel}/{t}" for t in CAUSAL_PROXY_TARGETS if paper_family(t) == paper_family(target)]


def paper_comparison(section: str, ours: pd.DataFrame) -> pd.DataFrame:
    """One experiment's published numbers beside ours (``ours``: columns ``subject``, ``value`` (percent),
    ``paper_keys``), as a chapter shows them before its results are saved: ``published number, paper %, ours:
    model, ours %``.

    Raises:
        ValueError: no published number has that section.
        KeyError: ``ours`` lacks one of the columns above.
    """
    items = [item for item in published() if item.section == section]
    if not items:
        sections = sorted({item.section for item in published()})
        raise ValueError(f"no published numbers in section {section!r}; sections: {sections}")
    beside: dict[str, list[tuple[str, float]]] = {}
    for subject, value, keys in zip(ours["subject"], ours["value"], ours["paper_keys"]):
        for key in keys:
            beside.setdefault(key, []).append((subject, float(value)))
    rows = [{"published number": item.claim, "paper %": item.paper, "ours: model": subject, "ours %": value}
            for item in items for subject, value in beside.get(item.key, [])]
    return pd.DataFrame(rows, columns=["published number", "paper %", "ours: model", "ours %"])


def value_span(values: pd.Series) -> str:
    """``"low to high"`` of ``values`` at one decimal (one value where they agree; ``"-"`` where there are none)."""
    values = pd.Series(values).dropna()
    if values.empty:
        return "-"
    low, high = float(values.min()), float(values.max())
    return f"{low:.1f}" if round(low, 1) == round(high, 1) else f"{low:.1f} to {high:.1f}"


#: A claim holds / holds weakly / does not hold (:func:`verdict`, :func:`better`, :func:`claim_verdict`).
HOLDS, WEAK, FAILS = "holds", "holds weakly", "does not hold here"

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


