"""olacore.toa.train on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from hypothesis import given, settings, strategies as st

import numpy as np

from chapter_code.transfer import entity_counts, f1_of_counts
from olacore.toa.train import (attachment_scores, entity_f1, paired_bootstrap_se, semeval_relation_type,
                               semeval_scores, token_accuracy)


def test_token_accuracy_counts_exact_matches():
    gold = [["DT", "NN"], ["VB", "<pad>"]]
    pred = [["DT", "VB"], ["VB", "NN"]]
    assert token_accuracy(gold, pred) == pytest.approx(50.0)
    with pytest.raises(ValueError, match="no label"):
        token_accuracy([[]], [[]])


_TAGS = st.sampled_from(["O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=6).flatmap(
    lambda lengths: st.tuples(*[st.tuples(st.lists(_TAGS, min_size=n, max_size=n), st.lists(_TAGS, min_size=n, max_size=n))
                                for n in lengths])))
def test_entity_counts_summed_over_sentences_give_entity_f1(sentences):
    gold, pred = [list(g) for g, _ in sentences], [list(p) for _, p in sentences]
    counts = entity_counts(gold, pred)
    assert counts.shape == (len(gold), 3) and (counts[:, 0] <= counts[:, 1:].min(1)).all()
    found, guessed, truth = counts.sum(0)
    if truth:  # entity_f1 needs a gold entity
        assert 200 * found / (guessed + truth) == pytest.approx(entity_f1(gold, pred)["f1"])
        assert f1_of_counts(counts.sum(0)) == pytest.approx(entity_f1(gold, pred)["f1"])


def _accuracy(counts):
    return 100.0 * counts[..., 0] / counts[..., 1]


def test_paired_bootstrap_se_matches_the_binomial_and_cancels_what_both_sides_share():
    right = np.random.default_rng(1).random(900) < 0.3  # one unit per sentence, p = 0.3
    ours = np.stack([right, np.ones(900, dtype=bool)], 1).astype(np.int64)
    nothing = np.stack([np.zeros(900), np.ones(900)], 1).astype(np.int64)
    binomial = 100 * math.sqrt(0.3 * 0.7 / 900)  # the textbook standard error of an accuracy: 1.53 points
    assert paired_bootstrap_se(ours, nothing, _accuracy) == pytest.approx(binomial, rel=0.1)
    assert paired_bootstrap_se(ours, ours, _accuracy) == 0.0  # the same predictions: no spread in the difference
    assert math.isnan(paired_bootstrap_se(ours[:1], nothing[:1], _accuracy))


def test_entity_f1_needs_type_and_both_boundaries():
    gold = [["B-person", "I-person", "O", "B-location"], ["B-group", "O"]]
    pred = [["B-person", "I-person", "O", "O"], ["B-group", "B-group"]]
    # found: person (right), group (right), a spurious group; missed: location.
    scores = entity_f1(gold, pred)
    assert scores["precision"] == pytest.approx(200 / 3)
    assert scores["recall"] == pytest.approx(200 / 3)
    assert scores["f1"] == pytest.approx(200 / 3)
    assert scores["entities"] == 3
    # a boundary error is a miss and a false alarm
    assert entity_f1([["B-person", "I-person"]], [["B-person", "O"]])["f1"] == 0.0


def test_semeval_official_score_counts_wrong_direction_in_both_denominators():
    gold = ["Cause-Effect(e1,e2)", "Cause-Effect(e2,e1)", "Component-Whole(e1,e2)", "Other"]
    pred = ["Cause-Effect(e1,e2)", "Cause-Effect(e1,e2)", "Other", "Component-Whole(e1,e2)"]
    scores = semeval_scores(gold, pred)
    assert scores["accuracy"] == pytest.approx(25.0)
    # Cause-Effect: 1 exact / 2 predicted, 1 / 2 gold -> F1 50; Component-Whole: 0 / 1 -> 0.
    assert scores["macro_precision"] == pytest.approx(25.0)
    assert scores["macro_recall"] == pytest.approx(25.0)
    assert scores["macro_f1"] == pytest.approx(25.0)
    assert semeval_relation_type("Message-Topic(e2,e1)") == "Message-Topic"
    assert semeval_scores(["Other", "Other"], ["Other", "Other"])["macro_f1"] == 0.0
    with pytest.raises(ValueError):
        semeval_scores([], [])


def test_attachment_scores_with_and_without_punctuation():
    gold_heads, gold_rels = [[2, 0, 2]], [["det", "root", "punct"]]
    pred_heads, pred_rels = [[2, 0, 1]], [["nsubj", "root", "punct"]]
    scores = attachment_scores(gold_heads, gold_rels, pred_heads, pred_rels, [[False, False, True]])
    assert scores["uas"] == pytest.approx(200 / 3)
    assert scores["las"] == pytest.approx(100 / 3)
    assert scores["uas_nopunct"] == pytest.approx(100.0)
    assert scores["las_nopunct"] == pytest.approx(50.0)
    assert (scores["words"], scores["words_nopunct"]) == (3, 2)
    only_punct = attachment_scores([[1]], [["punct"]], [[1]], [["punct"]], [[True]])
    assert math.isnan(only_punct["uas_nopunct"])
    with pytest.raises(ValueError, match="no word"):
        attachment_scores([[]], [[]], [[]], [[]], [[]])


def test_entity_f1_without_gold_entity_says_so_instead_of_zero():
    with pytest.raises(ValueError) as refused:
        entity_f1([["O", "O"], ["O"]], [["O", "O"], ["O"]])  # a perfect prediction of no entity
    assert "no entity in gold" in str(refused.value)
    for empty in ([], [[]]):
        with pytest.raises(ValueError):
            entity_f1(empty, empty)
