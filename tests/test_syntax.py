"""The OLA syntax probe: scores on a known case, first-sub-token maps, a probe that must learn."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from olacore.data import UDSentence
from olacore import syntax


def _sentence(heads, rels=None, upos=None, sent_id="t"):
    words = tuple(f"w{i}" for i in range(len(heads)))
    spans, cursor = [], 0
    for w in words:
        spans.append((cursor, cursor + len(w)))
        cursor += len(w) + 1
    rels = rels or tuple("root" if h == 0 else "dep" for h in heads)
    upos = upos or tuple("NOUN" for _ in heads)
    return UDSentence(sent_id, " ".join(words), words, tuple(spans), tuple(heads), tuple(rels), tuple(upos))


def test_attachment_scores_known_answer():
    gold_heads = [[2, 0, 2, 2], [0, 1]]
    gold_labels = [["nsubj", "root", "obj", "punct"], ["root", "obj"]]
    pred_heads = [[2, 0, 1, 2], [0, 1]]  # one wrong head (word 3 of sentence 1)
    pred_labels = [["obj", "root", "obj", "punct"], ["root", "obj"]]  # one wrong label on a right head
    upos = [["PRON", "VERB", "NOUN", "PUNCT"], ["VERB", "NOUN"]]
    scores = syntax.attachment_scores(gold_heads, gold_labels, pred_heads, pred_labels, upos,
                                      [["PRON", "VERB", "VERB", "PUNCT"], ["VERB", "NOUN"]])
    assert scores["words"] == 6 and scores["words_nopunct"] == 5
    assert math.isclose(scores["uas"], 100 * 5 / 6)
    assert math.isclose(scores["las"], 100 * 4 / 6)
    assert math.isclose(scores["uas_nopunct"], 100 * 4 / 5)
    assert math.isclose(scores["las_nopunct"], 100 * 3 / 5)
    assert math.isclose(scores["upos_acc"], 100 * 5 / 6)


def test_attachment_scores_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        syntax.attachment_scores([[0, 1]], [["root", "x"]], [[0]], [["root"]], [["X", "X"]])
    with pytest.raises(ValueError, match="no word"):
        syntax.attachment_scores([], [], [], [], [])


def test_universal_relation():
    assert syntax.universal_relation("nmod:poss") == "nmod"
    assert syntax.universal_relation("obl:unmarked") == "obl"
    assert syntax.universal_relation("madeup") == "dep"


def test_first_subtoken_maps_take_first_token_rows_and_columns():
    # text "ab cd": tokens [BOS] "a" "b" " cd" -> word 0 first token 1, word 1 first token 3
    offsets = [(0, 0), (0, 1), (1, 2), (3, 5)]
    spans = [(0, 2), (3, 5)]
    maps = torch.arange(16, dtype=torch.float32).view(1, 4, 4)
    assert syntax.first_token_indices(offsets, spans) == [1, 3]
    out = syntax.first_subtoken_maps(maps, offsets, spans)
    assert torch.equal(out[0], torch.tensor([[5.0, 7.0], [13.0, 15.0]]))
    with pytest.raises(ValueError):
        syntax.first_subtoken_maps(maps[..., :3, :3], offsets, spans)


def test_maps_from_results_pools_each_channel():
    from types import SimpleNamespace

    sentence = _sentence([0, 1])
    offsets = [(0, 0), (0, 2), (3, 5)]
    orders = torch.eye(3).expand(4, 3, 3).clone()
    result = SimpleNamespace(text=sentence.text, offsets=offsets, orders=orders, rollout=torch.full((3, 3), 1 / 3))
    word, first = (syntax.maps_from_results([result], [sentence], p)[0] for p in ("word", "first"))
    assert word.shape == first.shape == (4, 2, 2)  # orders 1..3 + rollout
    torch.testing.assert_close(word.sum(-1), torch.ones(4, 2))  # pooled rows stay stochastic
    torch.testing.assert_close(first[0], torch.eye(2))
    with pytest.raises(ValueError):
        syntax.maps_from_results([result], [_sentence([0, 1, 1])], "word")


def _toy(n, seed):
    """Sentences whose gold head is the argmax of the dependent's map row (self = root)."""
    g = torch.Generator().manual_seed(seed)
    sentences, maps = [], []
    for k in range(n):
        length = int(torch.randint(3, 11, (1,), generator=g))
        m = torch.rand(length, length, generator=g)
        targets = torch.randint(0, length, (length,), generator=g)
        m[torch.arange(length), targets] += 4.0
        heads = [0 if int(j) == i else int(j) + 1 for i, j in enumerate(targets)]
        rels = ["root" if h == 0 else "dep" for h in heads]
        sentences.append(_sentence(heads, rels, sent_id=f"toy{k}"))
        maps.append((m / m.sum(1, keepdim=True))[None])
    return sentences, maps


def test_probe_learns_heads_that_are_a_function_of_the_map():
    train, train_maps = _toy(160, 0)
    dev, dev_maps = _toy(40, 1)
    test, test_maps = _toy(40, 2)
    config = syntax.ProbeConfig(max_len=12, hidden=64, arc_dim=32, label_dim=16, epochs=10, batch_size=16, lr=5e-3, seed=0)
    run = syntax.train_probe(train_maps, train, dev_maps, dev, config)
    scores = run.test(test_maps, test)
    assert scores["uas"] > 85.0, scores
    assert scores["las"] > 80.0, scores  # labels follow from the head (root or not)
    assert 1 <= run.best_epoch <= 10 and len(run.history) == 10
    preds = syntax.predict(run.probe, test_maps[:2], test[:2])
    assert len(preds[0].heads) == len(test[0])
    np.testing.assert_allclose(preds[0].arc_probs.sum(-1), 1.0, rtol=1e-5)


def test_positional_baseline_sees_only_positions():
    sentences = [_sentence([0, 1, 1]), _sentence([2, 0])]
    maps = syntax.positional_maps(sentences)
    assert [tuple(m.shape) for m in maps] == [(1, 3, 3), (1, 2, 2)]
    assert torch.equal(maps[0][0], torch.eye(3))
    probe = syntax.BiaffineProbe(1, syntax.ProbeConfig(max_len=8, relative_position=True, clean_sinks=False))
    out = probe(torch.stack([torch.eye(3)[None]]), torch.ones(1, 3, dtype=torch.bool))
    assert out["arc"].shape == (1, 3, 4)
    assert torch.isinf(out["arc"][0, torch.arange(3), torch.arange(3) + 1]).all()  # no self-loops


def test_select_channels_and_shape_checks():
    maps = [torch.rand(4, 3, 3)]
    assert syntax.select_channels(maps, [0, 1])[0].shape == (2, 3, 3)
    with pytest.raises(ValueError, match="expected"):
        syntax.train_probe([torch.rand(1, 2, 2)], [_sentence([0, 1, 1])], [torch.rand(1, 2, 2)], [_sentence([0, 1])])


def test_long_sentences():
    sentences = [_sentence([0] + [1] * k) for k in (5, 31, 40)]
    assert syntax.long_sentences(sentences, 30) == [1, 2]


def test_draw_arcs_runs():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sentence = _sentence([2, 0, 2])
    fig, ax = plt.subplots()
    syntax.draw_arcs(ax, torch.rand(3, 3), sentence, [2, 0, 1], title="toy")
    assert "root" in ax.get_title()
    with pytest.raises(ValueError):
        syntax.draw_arcs(ax, torch.rand(2, 2), sentence, [2, 0, 1])
    plt.close(fig)


def test_cached_probe_is_read_back_and_keyed_by_its_inputs(tmp_path):
    from olacore.cache import TensorStore

    store = TensorStore(tmp_path)
    train, train_maps = _toy(24, 0)
    dev, dev_maps = _toy(8, 1)
    config = syntax.ProbeConfig(max_len=12, hidden=16, arc_dim=8, label_dim=8, epochs=2, batch_size=8, seed=0, device="cpu")
    first = syntax.cached_train_probe(train_maps, train, dev_maps, dev, config, store=store)
    again = syntax.cached_train_probe(train_maps, train, dev_maps, dev, config, store=store)
    assert (again.best_epoch, again.dev, again.history) == (first.best_epoch, first.dev, first.history)
    assert again.test(dev_maps, dev) == first.test(dev_maps, dev)  # the stored weights
    assert len(list(tmp_path.rglob("*.safetensors"))) == 1
    # the seed, the maps and the gold sentences are all in the key; the thread count is not
    syntax.cached_train_probe(train_maps, train, dev_maps, dev, dataclasses.replace(config, seed=1), store=store)
    syntax.cached_train_probe([m * 0.5 for m in train_maps], train, dev_maps, dev, config, store=store)
    relabelled = [dataclasses.replace(train[0], deprels=tuple("nsubj" for _ in train[0].deprels))] + train[1:]
    syntax.cached_train_probe(train_maps, relabelled, dev_maps, dev, config, store=store)
    syntax.cached_train_probe(train_maps, train, dev_maps, dev, dataclasses.replace(config, num_threads=2), store=store)
    assert len(list(tmp_path.rglob("*.safetensors"))) == 4


def test_probe_rows_in_two_workers_match_one(tmp_path):
    from olacore.cache import TensorStore

    # maps go to the workers as numpy arrays (by value): torch's own sharing, one file
    # descriptor per tensor, broke the pool in a notebook kernel with a full syntax grid
    train, train_maps = _toy(200, 0)
    dev, dev_maps = _toy(6, 1)
    test, test_maps = _toy(6, 2)
    splits = {"train": train, "dev": dev, "test": test}
    maps = {"train": train_maps, "dev": dev_maps, "test": test_maps}
    config = syntax.ProbeConfig(max_len=12, hidden=16, arc_dim=8, label_dim=8, epochs=1, batch_size=64, device="cpu")
    jobs = [syntax.ProbeJob(maps, dataclasses.replace(config, seed=seed), None, {"seed_label": seed}) for seed in (0, 1)]
    parallel = syntax.probe_rows(jobs, splits, workers=2, progress=False, store=TensorStore(tmp_path / "two"))
    serial = syntax.probe_rows(jobs, splits, workers=1, progress=False, store=TensorStore(tmp_path / "one"))
    strip = lambda row: {k: v for k, v in row.items() if k != "seconds"}  # noqa: E731
    assert [strip(r) for r, _ in parallel] == [strip(r) for r, _ in serial]
    assert [r["seed_label"] for r, _ in serial] == [0, 1]
    with pytest.raises(ValueError, match="workers"):
        syntax.probe_rows(jobs, splits, workers=0)
