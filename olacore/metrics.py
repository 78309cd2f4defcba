"""Task metrics of the TOA chapter: POS accuracy, NER entity F1, SemEval RE scores, UAS/LAS.

Labels are plain Python sequences (strings or ints); scores are percentages in ``[0, 100]``. ``seqeval``
computes entity-level F1 (CoNLL-style chunking of BIO tags), scikit-learn's ``confusion_matrix`` the SemEval-2010
Task 8 counts. Gold labels a model could never predict are compared as given and count as errors.
"""

from __future__ import annotations

import warnings
from typing import Callable, Hashable, Sequence

import numpy as np

__all__ = [
    "token_accuracy",
    "entity_f1",
    "entity_counts",
    "f1_of_counts",
    "paired_bootstrap_se",
    "semeval_scores",
    "semeval_relation_type",
    "attachment_scores",
]


def token_accuracy(gold: Sequence[Sequence[Hashable]], pred: Sequence[Sequence[Hashable]]) -> float:
    """Share of labels predicted exactly, in percent (POS accuracy per word or per sub-token).

    ``gold``, ``pred``: per sentence, one label per unit (word, or sub-token for the official per-sub-token POS
    accuracy), in equal numbers.

    Raises:
        ValueError: there is no label to count.
    """
    hits = [g == p for gs, ps in zip(gold, pred) for g, p in zip(gs, ps)]
    if not hits:
        raise ValueError("token_accuracy: no label to score")
    return 100.0 * float(np.mean(hits))


def entity_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, float]:
    """Entity-level precision, recall and F1 of BIO tag sequences (``seqeval``, CoNLL chunking), in percent.

    An entity counts as found only when its type and both boundaries match. Tags are per word (the TOA tasks read
    each word's tag at its first sub-token), BIO (``"O"``, ``"B-<type>"``, ``"I-<type>"``), as many as the gold ones.
    Also returns ``"entities"``, the gold entity count.

    Raises:
        ValueError: no gold entity (F1 undefined).
    """
    from seqeval.metrics import f1_score, precision_score, recall_score
    from seqeval.metrics.sequence_labeling import get_entities

    gold, pred = [list(s) for s in gold], [list(s) for s in pred]
    if not get_entities(gold):
        raise ValueError(f"entity_f1: no entity in gold ({sum(map(len, gold))} words, all 'O'), so recall and F1 "
                         "are undefined; score a set with at least one gold entity")
    return {
        "precision": 100.0 * float(precision_score(gold, pred, zero_division=0)),
        "recall": 100.0 * float(recall_score(gold, pred, zero_division=0)),
        "f1": 100.0 * float(f1_score(gold, pred, zero_division=0)),
        "entities": len(get_entities(gold)),
    }


def entity_counts(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> np.ndarray:
    """Per sentence, the entities :func:`entity_f1` counts: ``(N, 3)`` ints, found, predicted, gold. Summed
    over sentences they give F1 ``200 found / (predicted + gold)``, as a bootstrap over sentences needs."""
    from seqeval.metrics.sequence_labeling import get_entities

    counts = np.zeros((len(gold), 3), dtype=np.int64)
    for i, (g, p) in enumerate(zip(gold, pred)):
        truth, guess = set(get_entities(list(g))), set(get_entities(list(p)))
        counts[i] = len(truth & guess), len(guess), len(truth)
    return counts


def f1_of_counts(counts: np.ndarray) -> np.ndarray:
    """Entity F1 (percent) of :func:`entity_counts` summed over sentences: ``(..., 3) -> (...)``; 0
    where there is neither a predicted nor a gold entity."""
    return 200.0 * counts[..., 0] / np.maximum(counts[..., 1] + counts[..., 2], 1)


def paired_bootstrap_se(ours: np.ndarray, theirs: np.ndarray, score: Callable[[np.ndarray], np.ndarray],
                        draws: int = 2000, seed: int = 0) -> float:
    """Standard error (points) of ``score(ours) - score(theirs)`` over test sentences, by a paired bootstrap.

    Args:
        ours, theirs: ``(N, k)`` per-sentence counts, row ``i`` the same sentence on both sides (e.g.
            :func:`entity_counts` of two taggers).
        score: the metric (percent) of counts summed over sentences, ``(..., k) -> (...)`` (e.g. :func:`f1_of_counts`).
        draws: resamples of the ``N`` sentences with replacement, the same for both sides
            (``numpy.random.default_rng(seed)``); NaN for fewer than two sentences.
    """
    if len(ours) < 2:
        return float("nan")
    picks = np.random.default_rng(seed).integers(0, len(ours), (draws, len(ours)))
    return float(np.std(score(ours[picks].sum(1)) - score(theirs[picks].sum(1))))


def semeval_relation_type(label: str) -> str:
    """The relation type of a directed SemEval label: ``"Cause-Effect(e2,e1)" -> "Cause-Effect"``."""
    return label.split("(", 1)[0]


def semeval_scores(gold: Sequence[str], pred: Sequence[str]) -> dict[str, float]:
    """Accuracy and the official SemEval-2010 Task 8 score of directed relation labels, in percent.

    The official score (scorer ``semeval2010_task8_scorer-v1.2.pl``, evaluation (iii): "(9+1)-way, directionality
    taken into account") is the macro-average over the relation types present in gold, ``Other`` excluded, of
    ``F1 = 2PR / (P + R)``: for a type, ``P`` and ``R`` are the predictions equal to the gold label, direction
    included, over the predictions and over the gold labels of that type (either direction; a right type with the
    wrong direction is an error that still counts in both denominators).

    Args:
        gold, pred: one directed label per example (``"Message-Topic(e1,e2)"``, ``"Other"``: no relation), as many
            predicted as gold; a ``None`` prediction (an answer that could not be parsed) counts as wrong.

    Returns:
        ``{"accuracy", "macro_f1", "macro_precision", "macro_recall", "examples"}`` (accuracy 19-way).

    Raises:
        ValueError: no label, or lists of unequal length (from scikit-learn).
    """
    from sklearn.metrics import confusion_matrix

    gold, pred = list(gold), list(pred)
    unparsed = "<unparsed>"  # a None prediction: wrong whatever the gold label, of no relation type
    while unparsed in gold:
        unparsed += "?"
    pred = [unparsed if p is None else p for p in pred]
    labels = sorted(set(gold) | set(pred))
    with warnings.catch_warnings():  # one label only (a trivial case) is not worth a warning
        warnings.simplefilter("ignore", UserWarning)
        matrix = confusion_matrix(gold, pred, labels=labels)  # rows: gold, columns: predicted
    index = {label: i for i, label in enumerate(labels)}
    types = sorted({semeval_relation_type(g) for g in gold if g != "Other"})
    precisions, recalls, f1s = [], [], []
    for kind in types:
        members = [index[label] for label in labels if semeval_relation_type(label) == kind]
        exact = int(sum(matrix[i, i] for i in members))
        predicted = int(matrix[:, members].sum())
        actual = int(matrix[members, :].sum())
        p = 100.0 * exact / predicted if predicted else 0.0
        r = 100.0 * exact / actual if actual else 0.0
        precisions.append(p)
        recalls.append(r)
        f1s.append(2 * p * r / (p + r) if p + r else 0.0)
    mean = (lambda values: float(np.mean(values)) if values else 0.0)
    return {
        "accuracy": 100.0 * float(np.trace(matrix)) / len(gold),
        "macro_f1": mean(f1s),
        "macro_precision": mean(precisions),
        "macro_recall": mean(recalls),
        "examples": len(gold),
    }


def attachment_scores(gold_heads: Sequence[Sequence[int]], gold_rels: Sequence[Sequence[str]],
                      pred_heads: Sequence[Sequence[int]], pred_rels: Sequence[Sequence[str]],
                      punct: Sequence[Sequence[bool]] | None = None) -> dict[str, float]:
    """Unlabelled and labelled attachment scores (UAS, LAS), with and without punctuation.

    Heads are compared as given (any consistent numbering); a label is right when the head and the relation are.
    ``punct``: per sentence, ``True`` for punctuation words, left out of the ``*_nopunct`` scores (``None``: only the
    scores with punctuation).

    Returns:
        ``{"uas", "las", "words"}`` and, with ``punct``, ``{"uas_nopunct", "las_nopunct", "words_nopunct"}``; scores
        in percent (NaN when no word is left).

    Raises:
        ValueError: there is no word at all.
    """
    head_ok = np.array([g == p for gs, ps in zip(gold_heads, pred_heads) for g, p in zip(gs, ps)], dtype=bool)
    rel_ok = np.array([g == p for gs, ps in zip(gold_rels, pred_rels) for g, p in zip(gs, ps)], dtype=bool)
    if head_ok.size == 0:
        raise ValueError("attachment_scores: no word to score")
    label_ok = head_ok & rel_ok
    scores: dict[str, float] = {"uas": 100.0 * head_ok.mean(), "las": 100.0 * label_ok.mean(), "words": int(head_ok.size)}
    if punct is not None:
        keep = ~np.array([bool(x) for xs in punct for x in xs], dtype=bool)
        scores["uas_nopunct"] = 100.0 * head_ok[keep].mean() if keep.any() else float("nan")
        scores["las_nopunct"] = 100.0 * label_ok[keep].mean() if keep.any() else float("nan")
        scores["words_nopunct"] = int(keep.sum())
    return scores
