"""The OLA syntax probe (olacore.probe): scores on a known case, a probe that must learn, cached jobs."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from olacore import probe as probe_module
from olacore.maps import Maps
from olacore.probe import (
    BiaffineProbe,
    ProbeConfig,
    ProbeJob,
    attachment_scores,
    positional_maps,
    predict,
    probe_rows,
    train_probe,
)
from olacore.store import TensorStore
from olacore.ud import UDSentence


def _sentence(heads, rels=None, upos=None, sent_id="t"):
    words = tuple(f"w{i}" for i in range(len(heads)))
    spans, cursor = [], 0
    for w in words:
        spans.append((cursor, cursor + len(w)))
        cursor += len(w) + 1
    rels = rels or tuple("root" if h == 0 else "dep" for h in heads)
    upos = upos or tuple("NOUN" for _ in heads)
    return UDSentence(sent_id, " ".join(words), words, tuple(spans), tuple(heads), tuple(rels), tuple(upos))


def _word_maps(tensors, sentences, channels=("order1",)) -> Maps:
    return Maps(tensors=tuple(tensors), channels=tuple(channels), causal=False, model="toy", align="words",
                sinks="raw", size=None, texts=tuple(s.text for s in sentences))


def test_attachment_scores_known_answer():
    gold_heads = [[2, 0, 2, 2], [0, 1]]
    gold_labels = [["nsubj", "root", "obj", "punct"], ["root", "obj"]]
    pred_heads = [[2, 0, 1, 2], [0, 1]]  # one wrong head (word 3 of sentence 1)
    pred_labels = [["obj", "root", "obj", "punct"], ["root", "obj"]]  # one wrong label on a right head
    upos = [["PRON", "VERB", "NOUN", "PUNCT"], ["VERB", "NOUN"]]
    scores = attachment_scores(gold_heads, gold_labels, pred_heads, pred_labels, upos,
                               [["PRON", "VERB", "VERB", "PUNCT"], ["VERB", "NOUN"]])
    assert scores["words"] == 6 and scores["words_nopunct"] == 5
    assert math.isclose(scores["uas"], 100 * 5 / 6)
    assert math.isclose(scores["las"], 100 * 4 / 6)
    assert math.isclose(scores["uas_nopunct"], 100 * 4 / 5)
    assert math.isclose(scores["las_nopunct"], 100 * 3 / 5)
    assert math.isclose(scores["upos_acc"], 100 * 5 / 6)


def test_attachment_scores_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        attachment_scores([[0, 1]], [["root", "x"]], [[0]], [["root"]], [["X", "X"]])
    with pytest.raises(ValueError, match="no word"):
        attachment_scores([], [], [], [], [])


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
    return sentences, _word_maps(maps, sentences)


def test_probe_learns_heads_that_are_a_function_of_the_map(one_thread):
    train, train_maps = _toy(160, 0)
    dev, dev_maps = _toy(40, 1)
    test, test_maps = _toy(40, 2)
    config = ProbeConfig(max_len=12, hidden=64, arc_dim=32, label_dim=16, epochs=10, batch_size=16, lr=5e-3, seed=0)
    run = train_probe(train_maps, train, dev_maps, dev, config)
    scores = run.test(test_maps, test)
    assert scores["uas"] > 85.0, scores
    assert scores["las"] > 80.0, scores  # labels follow from the head (root or not)
    assert 1 <= run.best_epoch <= 10 and len(run.history) == 10
    assert run.dev["las"] == max(h["dev_las"] for h in run.history)  # the epoch kept is the best on dev
    preds = predict(run.probe, test_maps.subset([0, 1]), test[:2])
    assert len(preds[0].heads) == len(test[0])
    np.testing.assert_allclose(preds[0].arc_probs.sum(-1), 1.0, rtol=1e-5)


def test_positional_baseline_sees_only_positions():
    sentences = [_sentence([0, 1, 1]), _sentence([2, 0])]
    maps = positional_maps(sentences)
    assert maps.channels == ("order0",) and maps.align == "words" and maps.texts == tuple(s.text for s in sentences)
    assert [tuple(m.shape) for m in maps.tensors] == [(1, 3, 3), (1, 2, 2)]
    assert torch.equal(maps.tensors[0][0], torch.eye(3))
    probe = BiaffineProbe(1, ProbeConfig(max_len=8, relative_position=True, clean_sinks=False))
    out = probe(torch.stack([torch.eye(3)[None]]), torch.ones(1, 3, dtype=torch.bool))
    assert out["arc"].shape == (1, 3, 4)
    assert torch.isinf(out["arc"][0, torch.arange(3), torch.arange(3) + 1]).all()  # no self-loops


def test_maps_must_fit_their_sentences():
    one = [_sentence([0, 1, 1])]
    with pytest.raises(ValueError, match="expected"):
        train_probe(_word_maps([torch.rand(1, 2, 2)], one), one, _word_maps([torch.rand(1, 3, 3)], one), one)
    with pytest.raises(ValueError, match="1 maps for 2 sentences"):
        train_probe(_word_maps([torch.rand(1, 3, 3)], one), one * 2, _word_maps([torch.rand(1, 3, 3)], one), one)
    with pytest.raises(ValueError, match="at least one sentence"):
        train_probe(_word_maps([], []), [], _word_maps([torch.rand(1, 3, 3)], one), one)


def _splits(num_train=24, seed=0, channels=("order1", "order2")):
    """Toy splits with two channels: order1 carries the heads, order2 is its transpose."""
    out_maps, out_splits = {}, {}
    for offset, (name, size) in enumerate((("train", num_train), ("dev", 8), ("test", 6))):
        sentences, maps = _toy(size, seed + offset)
        two = [torch.cat([m, m.transpose(-1, -2)]) for m in maps.tensors]
        out_maps[name], out_splits[name] = _word_maps(two, sentences, channels), sentences
    return out_maps, out_splits


def test_probe_job_key_holds_what_changes_the_result():
    maps, splits = _splits()
    config = ProbeConfig(max_len=12, hidden=16, arc_dim=8, label_dim=8, epochs=2, batch_size=8, seed=0, device="cpu")
    job = ProbeJob(maps, splits, config, ("order1",), {"model": "toy"})
    assert job.key() == ProbeJob(maps, splits, config, ("order1",), {"model": "renamed"}).key()
    assert job.inputs("train").channels == ("order1",)
    assert torch.equal(job.inputs("dev").tensors[0], maps["dev"].tensors[0][:1])
    scaled = dict(maps, train=dataclasses.replace(maps["train"], tensors=tuple(t * 0.5 for t in maps["train"].tensors)))
    relabelled = dict(splits, train=[dataclasses.replace(splits["train"][0], deprels=tuple(
        "nsubj" for _ in splits["train"][0].deprels))] + splits["train"][1:])
    others = [
        ProbeJob(maps, splits, dataclasses.replace(config, seed=1), ("order1",)),
        ProbeJob(maps, splits, dataclasses.replace(config, epochs=3), ("order1",)),
        ProbeJob(maps, splits, config, ("order2",)),
        ProbeJob(maps, splits, config, None),
        ProbeJob(scaled, splits, config, ("order1",)),
        ProbeJob(maps, relabelled, config, ("order1",)),
    ]
    keys = {job.key()} | {other.key() for other in others}
    assert len(keys) == len(others) + 1
    # test sentences never enter the key: the probe is chosen on dev only
    other_test = dict(splits, test=splits["test"][:2])
    assert ProbeJob(maps, other_test, config, ("order1",)).key() == job.key()


def test_probe_rows_are_read_back_without_training(tmp_path, monkeypatch, one_thread):
    maps, splits = _splits()
    config = ProbeConfig(max_len=12, hidden=16, arc_dim=8, label_dim=8, epochs=2, batch_size=8, seed=0, device="cpu")
    jobs = [ProbeJob(maps, splits, config, ("order1",), {"input": "order 1"}),
            ProbeJob(maps, splits, config, None, {"input": "both"})]
    store = TensorStore(tmp_path)
    first = probe_rows(jobs, progress=False, store=store)
    assert [row["input"] for row, _ in first] == ["order 1", "both"]
    assert len(list(tmp_path.rglob("*.safetensors"))) == 2
    monkeypatch.setattr(probe_module.ProbeJob, "train", lambda self: (_ for _ in ()).throw(AssertionError("trained")))
    again = probe_rows(jobs, progress=False, store=store)
    for job, (a, run_a), (b, run_b) in zip(jobs, first, again):
        assert a == b  # the stored record, training time included
        test = job.inputs("test")
        assert run_b.test(test, splits["test"]) == run_a.test(test, splits["test"])  # the stored weights
    row = first[0][0]
    assert {"uas", "las", "dev_uas", "dev_las", "upos_acc", "epoch", "seed"} <= set(row)


@pytest.mark.slow  # two spawned processes: ~20 s on a shared 2-core machine
def test_probe_rows_in_two_workers_match_one(tmp_path):
    # maps go to the workers pickled with the job; torch's own sharing, one file descriptor
    # per tensor, broke the pool in a notebook kernel with a full syntax grid
    maps, splits = _splits(num_train=200)
    config = ProbeConfig(max_len=12, hidden=16, arc_dim=8, label_dim=8, epochs=1, batch_size=64, device="cpu")
    jobs = [ProbeJob(maps, splits, dataclasses.replace(config, seed=seed), None, {"seed_label": seed}) for seed in (0, 1)]
    parallel = probe_rows(jobs, workers=2, progress=False, store=TensorStore(tmp_path / "two"))
    serial = probe_rows(jobs, workers=1, progress=False, store=TensorStore(tmp_path / "one"))
    strip = lambda row: {k: v for k, v in row.items() if k != "seconds"}  # noqa: E731
    assert [strip(r) for r, _ in parallel] == [strip(r) for r, _ in serial]
    assert [r["seed_label"] for r, _ in serial] == [0, 1]
    with pytest.raises(ValueError, match="workers"):
        probe_rows(jobs, workers=0)
