"""TOA transfer: settings, the readings of the matrices on hand-made rows, and at smoke size on real models
the kind check, unaligned sentences, the random-init control and adapter reuse."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

from olacore.profiles import TaskSizes, TransferSettings, settings
from olacore.augment import Augmentation
from olacore.report import paper_comparison

from chapter_code.transfer import (UNDEFINED_FINDING, _adjacent_uas, capitalisation_bound, capitalisation_tags,
                                   findings_markdown, gap_table, re_paper_numbers, record_transfer, similarity_hits,
                                   similarity_vs_transfer, verdict_table, zero_shot_rows)


def _rows(cells):
    return pd.DataFrame([{"task": t, "kind": k, "source": s, "target": g, "seed": 0, "diagonal": s == g, "score": v}
                         for t, k, s, g, v in cells])


CAUSAL = ("smollm2-135m", "gemma-3-270m", "qwen2.5-0.5b")


# ---------------------------------------------------------------- settings

def test_profiles_build_and_validate():
    for profile in ("smoke", "default", "paper"):
        s = settings("transfer", profile)
        assert set(s.zero_shot_models) <= set(s.causal)
    with pytest.raises(ValueError, match="unknown profile"):
        settings("transfer", "huge")
    with pytest.raises(ValueError, match="tasks"):
        TransferSettings(tasks=("sentiment",))
    with pytest.raises(ValueError, match="encoder"):
        TransferSettings(zero_shot_models=("minilm-l6",))
    with pytest.raises(ValueError, match="bert-base-cased"):
        TransferSettings(control_models=("bert-base-cased",))
    with pytest.raises(ValueError, match=r"TaskSizes\.dev\b"):  # the field given 0, by name
        TaskSizes(10, 0, 5)
    with pytest.raises(ValueError, match="seed"):
        TransferSettings(seeds=())


def test_training_for_sets_epochs_of_re_and_ner_only():
    s = TransferSettings(re=TaskSizes(20, 10, 10, epochs=3), ner=TaskSizes(20, 10, 10), wnut=TaskSizes(20, 10, 10, epochs=4),
                         augment=None)
    base = s.syntax.training
    assert s.training_for("re") == dataclasses.replace(base, epochs=3)
    assert s.training_for("wnut") == dataclasses.replace(base, epochs=4)
    assert s.training_for("ner") == base and s.training_for("dp") == base and s.training_for("pos") == base
    official = dataclasses.replace(s, augment=Augmentation())
    assert official.training_for("re") == dataclasses.replace(base, epochs=3, augment=Augmentation())
    assert official.training_for("ner").augment == Augmentation() and official.training_for("dp") == base
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="epochs"):
            TaskSizes(10, 5, 5, epochs=bad)


def test_an_entity_task_takes_its_own_o_weight():
    s = TransferSettings(ner=TaskSizes(20, 10, 10, epochs=5, o_weight=0.1), wnut=TaskSizes(20, 10, 10), augment=None)
    base = s.syntax.training
    assert s.training_for("ner") == dataclasses.replace(base, epochs=5, ner_o_weight=0.1)
    assert s.training_for("wnut").ner_o_weight == base.ner_o_weight == 0.5  # the official weight by default
    for bad in (0, -0.5, True, "0.1"):
        with pytest.raises(ValueError, match="o_weight"):
            TaskSizes(10, 5, 5, o_weight=bad)


# ---------------------------------------------------------------- readings on hand-made rows

def test_gap_recovered_and_verdicts():
    rows = _rows([("re", "causal", "a", "a", 40.0), ("re", "causal", "b", "b", 50.0),
                  ("re", "causal", "a", "b", 25.0), ("re", "causal", "b", "a", 10.0),
                  ("ner", "causal", "a", "a", 0.0), ("ner", "causal", "b", "a", 0.0)])
    gaps = gap_table(rows)
    ab = gaps[(gaps["source"] == "a") & (gaps["target"] == "b")].iloc[0]
    assert ab["gap"] == pytest.approx(25.0) and ab["recovered"] == pytest.approx(50.0)
    ner = gaps[gaps["task"] == "ner"].iloc[0]
    assert math.isnan(ner["recovered"])  # a target-trained score of 0 leaves the share undefined
    control = pd.DataFrame([{"task": "re", "source": "a", "target": "b", "score": 30.0, "transfer": 25.0, "se": 2.0}])
    bounds = pd.DataFrame([{"task": "re", "bound": "majority", "score": 19.0}, {"task": "ner", "bound": "O", "score": 0.0}])
    zs = pd.DataFrame([{"task": "re", "model": "b", "score": 5.0}, {"task": "re", "model": "a", "score": 10.0}])
    v = verdict_table(gaps, control, bounds, zs).set_index(["task", "source", "target"])
    assert v.loc[("re", "a", "b"), "beats zero-shot"] == "holds"
    assert v.loc[("re", "a", "b"), "beats random init"] == "does not hold here"  # 25 < 30, on the same sentences
    assert v.loc[("re", "a", "b"), "SE vs random init"] == 2.0 and math.isnan(v.loc[("re", "b", "a"), "SE vs random init"])
    paired = control.assign(transfer=31.0)  # the matrix cell (25) is not what the twin is compared with
    assert verdict_table(gaps, paired, bounds, zs).set_index(["task", "source", "target"]).loc[
        ("re", "a", "b"), "beats random init"] == "holds"
    assert v.loc[("re", "b", "a"), "beats random init"] == "-"  # no twin ran
    assert v.loc[("re", "b", "a"), "beats zero-shot"] == "does not hold here"  # 10 == 10 does not beat
    assert v.loc[("re", "b", "a"), "beats majority"] == "does not hold here"


def test_spearman_over_pairs():
    rows = _rows([(t, "causal", s, g, v) for t in ("re",) for s, g, v in
                  [("a", "a", 50), ("b", "b", 50), ("c", "c", 50), ("a", "b", 10), ("b", "a", 20), ("a", "c", 30),
                   ("c", "a", 40)]])
    hits = pd.DataFrame([{"kind": "causal", "source": s, "target": g, "hits@1": h}
                         for s, g, h in [("a", "b", 1), ("b", "a", 2), ("a", "c", 3), ("c", "a", 4)]])
    pairs, rho = similarity_vs_transfer(gap_table(rows), hits)
    assert len(pairs) == 4 and pairs["hits@1"].notna().all()
    first = rho.iloc[0]
    assert first["pairs"] == 4 and first["rho"] == pytest.approx(1.0)
    hits["hits@1"] = 7.0  # a constant side has no rank correlation
    _, rho = similarity_vs_transfer(gap_table(rows), hits)
    assert rho["rho"].isna().all()


def _chapter_03(folder, pairs, *, profile="smoke", label="official texts, whole row sink statistics",
                kind="causal"):
    """Save chapter 03's results as the chapter does: pair records keyed with ``label`` and the kept pairs table
    (``pairs``: ``(source, target, Hits@1 %)``)."""
    from olacore.results import OFFICIAL, ChapterResults
    from chapter_code.retrieval import PAIRS_TABLE, pairs_rows

    grid = pd.DataFrame([{"group": kind, "variant": "resize, clean", "source": s, "target": g, "channel": "order1",
                          "sinks": "clean", "hits@1": h / 100, "hits@5": 1.0} for s, g, h in pairs])
    results = ChapterResults("03_retrieval", profile)
    for _, r in grid.iterrows():
        results.add(f"retrieval/{kind}/{r['source']}->{r['target']}/order1/hits@1/{label}", f"hits@1, {label}",
                    100 * r["hits@1"])
    results.add_table(PAIRS_TABLE, pairs_rows(grid, OFFICIAL))
    return results.save(folder)


def test_similarity_read_from_chapter_03s_table_whatever_its_labels(tmp_path):
    """What chapter 03 keeps as typed rows is read; its record keys and labels play no part."""
    from olacore.results import HELD_OUT, load_results
    from chapter_code.retrieval import PAIRS_TABLE

    chapter = TransferSettings(causal=CAUSAL[:2], encoders=("minilm-l6",), control_models=(), zero_shot_models=())
    pairs = [(CAUSAL[0], CAUSAL[1], 80.0), (CAUSAL[1], CAUSAL[0], 70.0), (CAUSAL[0], CAUSAL[2], 1.0)]
    path = _chapter_03(tmp_path, pairs)
    saved = json.loads(path.read_text())  # rows of another channel or protocol are not the official order-1 table
    saved["tables"][PAIRS_TABLE] += [dict(saved["tables"][PAIRS_TABLE][0], channel="order2", **{"hits@1": 5.0}),
                                     dict(saved["tables"][PAIRS_TABLE][0], protocol=HELD_OUT, **{"hits@1": 6.0})]
    path.write_text(json.dumps(saved))
    hits, where = similarity_hits(chapter, tmp_path, profile="smoke")
    assert "causal: chapter 03" in where
    expected = pd.DataFrame([{"kind": "causal", "source": s, "target": g, "hits@1": 100 * (h / 100)}  # as recorded
                             for s, g, h in pairs[:2]])
    pd.testing.assert_frame_equal(hits, expected)
    for label in ("renamed label", ""):  # a renamed label, or records of no recognisable key, read the same numbers
        _chapter_03(tmp_path, pairs, label=label)
        assert all(label in r.key for r in load_results("03_retrieval", tmp_path).records)
        pd.testing.assert_frame_equal(similarity_hits(chapter, tmp_path, profile="smoke")[0], expected)


@pytest.mark.parametrize("text, match", [("not JSON", "03_retrieval.json is not a chapter's saved results"),
                                         ('{"chapter": "03_retrieval", "profile": "smoke"}', "KeyError: 'records'"),
                                         ('{"chapter": "03_retrieval", "profile": "smoke", "records": [], '
                                          '"tables": {"retrieval pairs": [{"kind": "causal"}]}}', "lacks the columns")])
def test_similarity_a_malformed_chapter_03_file_is_one_line(tmp_path, text, match):
    (tmp_path / "03_retrieval.json").write_text(text)
    chapter = TransferSettings(causal=CAUSAL[:2], encoders=("minilm-l6",), control_models=(), zero_shot_models=())
    with pytest.raises(ValueError, match=match) as info:
        similarity_hits(chapter, tmp_path, profile="smoke")
    assert "\n" not in str(info.value) and "execute" in str(info.value)


@pytest.mark.slow
def test_similarity_computed_unless_chapter_03_saved_every_pair_at_this_profile(tmp_path, one_thread):
    """No file, a file of another profile, labels alone (no table) or a missing pair: computed, the same numbers."""
    from olacore.loading import twin_name

    encoders = ("minilm-l6", twin_name("minilm-l6"))
    chapter = TransferSettings(causal=("smollm2-135m",), encoders=encoders, control_models=(), zero_shot_models=(),
                               similarity_texts=4)
    computed, where = similarity_hits(chapter, tmp_path / "none", profile="smoke")
    assert "encoder: computed here (4 " in where and len(computed) == 2
    assert computed["hits@1"].between(0, 100).all()
    every = [(encoders[0], encoders[1], 99.0), (encoders[1], encoders[0], 98.0)]
    for pairs, profile in ((every, "default"), (every[:1], "smoke")):
        path = _chapter_03(tmp_path, pairs, profile=profile, kind="encoder")
        hits, where = similarity_hits(chapter, tmp_path, profile="smoke")
        pd.testing.assert_frame_equal(hits, computed)
        assert ("not used" in where) == (profile == "default")
    path = _chapter_03(tmp_path, every, kind="encoder")
    hits, where = similarity_hits(chapter, tmp_path, profile="smoke")
    assert "encoder: chapter 03" in where and list(hits["hits@1"]) == [99.0, 98.0]
    saved = json.loads(path.read_text())
    saved["tables"] = {}  # the records' keys alone are not read
    path.write_text(json.dumps(saved))
    pd.testing.assert_frame_equal(similarity_hits(chapter, tmp_path, profile="smoke")[0], computed)


def test_similarity_no_pairs_gives_empty_table(tmp_path):
    hits, where = similarity_hits(TransferSettings(causal=("smollm2-135m",), encoders=("minilm-l6",),
                                                   control_models=(), zero_shot_models=()), tmp_path, profile="smoke")
    assert hits.empty and "two models" in where


def test_adjacent_baseline():
    sentence = type("S", (), {"heads": (2, 0, 2)})()  # a <- b -> c
    assert _adjacent_uas([sentence], 1) == (1, 3)   # right neighbour: a->b right; b->c wrong; c->root wrong
    assert _adjacent_uas([sentence], -1) == (1, 3)  # left neighbour: a->root wrong; b->a wrong; c->b right


def test_paper_keys_exist_in_the_report():
    from olacore.report import published
    from olacore.results import ChapterResults

    rows = _rows([("re", "causal", s, g, 30.0) for s in CAUSAL for g in CAUSAL])
    gaps = gap_table(rows)
    bounds = pd.DataFrame([{"task": "re", "bound": "majority", "score": 19.0}])
    zs = pd.DataFrame([{"task": "re", "model": m, "score": 5.0, "n": 10, "unparseable": 1} for m in CAUSAL])
    verdicts = verdict_table(gaps, pd.DataFrame(), bounds, zs)
    results = ChapterResults("07_toa", "smoke")
    record_transfer(results, rows, verdicts, zs, bounds, "test")
    known = {p.key for p in published()}
    keys = [k for r in results.records for k in r.paper_keys]
    assert len(keys) == 6 + 3 and set(keys) <= known  # 2 published sources x 3 targets + zero-shot x 3
    cells = [r for r in results.records if r.paper_keys and "->" in r.subject]
    assert {r.verdict for r in cells if r.subject.split(" -> ")[0] != r.subject.split(" -> ")[1]} == {"holds"}  # 30 > 5
    comparison = paper_comparison("TOA relation extraction", re_paper_numbers(rows, zs))
    assert len(comparison) == 9 and comparison["paper %"].notna().all()
    numbers = re_paper_numbers(rows, zs)
    assert sorted(k for ks in numbers["paper_keys"] for k in ks) == sorted(keys)  # the chapter and the report pair alike


def test_zero_shot_answers_outside_the_label_set_are_counted(monkeypatch):
    import chapter_code.zeroshot as zeroshot

    def fake(model, task, examples, **_):
        gold = [x.label for x in examples]
        labels = [None] + gold[1:]  # the first answer names no label of the 19
        status = ["outside"] + ["ok"] * (len(gold) - 1)
        return pd.DataFrame({"model": model, "form": "chat", "gold": gold, "label": labels, "status": status})

    monkeypatch.setattr(zeroshot, "zero_shot", fake)
    chapter = settings("transfer", "smoke", tasks=("re",))
    z = zero_shot_rows(chapter).iloc[0]
    assert z["unparseable"] == 1 and z["outside_label_set"] == 1
    assert z["score"] == pytest.approx(100 * (z["n"] - 1) / z["n"])  # counted as wrong


# ---------------------------------------------------------------- real models, smoke size

def _adapters(data, chapter):
    """The chapter's adapters: one per (task, model, seed), trained on its train split, chosen on dev."""
    from olacore.toa.data import TOA_INPUT, input_spec
    from olacore.toa.train import make_job, train_adapters

    cells = [(task, model, seed) for task, by_model in data.items() for model in by_model for seed in chapter.seeds]
    jobs = [make_job(data[t][m]["train"], data[t][m]["dev"], input_spec(TOA_INPUT), chapter.syntax.adapter,
                     chapter.training_for(t), seed=seed) for t, m, seed in cells]
    return dict(zip(cells, train_adapters(jobs, workers=1, progress=False)))


@pytest.fixture(scope="module")
def smoke():
    from chapter_code.transfer import all_task_data

    chapter = settings("transfer", "smoke", tasks=("re",), causal=("smollm2-135m",), encoders=("minilm-l6",),
                       control_models=("smollm2-135m",), zero_shot_models=("smollm2-135m",))
    data = all_task_data(chapter, workers=1)
    return chapter, data, _adapters(data, chapter)


@pytest.mark.slow
def test_adapter_of_the_other_kind_is_refused(smoke, one_thread):
    from chapter_code.transfer import transfer_scores

    _, data, adapters = smoke
    causal = adapters[("re", "smollm2-135m", 0)]
    with pytest.raises(ValueError, match="kind"):
        causal.evaluate(data["re"]["minilm-l6"]["test"])
    scores = transfer_scores(causal, data["re"]["smollm2-135m"]["test"])
    assert 0 <= scores["score"] <= 100 and scores["score"] == scores["accuracy"]
    assert scores["examples"] == len(data["re"]["smollm2-135m"]["test"])


@pytest.mark.slow
def test_unaligned_sentence_is_counted(smoke, one_thread):
    from olacore.corpora import NERSentence, join_words
    from chapter_code.syntax import data_reports
    from chapter_code.transfer import task_data

    chapter = smoke[0]
    words = ("Hello", "\u200b", "world")  # a zero-width space: BERT's tokenizer drops it, no token covers that word
    text, spans = join_words(words)
    good_text, good_spans = join_words(("Hello", "world"))
    good = NERSentence("t-0", good_text, ("Hello", "world"), good_spans, ("O", "O"))
    bad = NERSentence("t-1", text, words, spans, ("O", "B-person", "O"))
    data = task_data("ner", chapter, ["minilm-l6"], splits={"test": [good, bad]}, workers=1)
    table = data_reports({"ner": data}, ("task", "model", "split"), ("dropped beyond cut", "entities beyond cut"))
    assert table.loc[0, "not aligned"] == 1 and table.loc[0, "kept"] == 1


@pytest.mark.slow
def test_random_init_control_reads_the_twin(smoke, one_thread):
    from chapter_code.transfer import random_init_rows

    chapter, data, adapters = smoke
    control = random_init_rows(adapters, data, chapter)
    assert set(control["control"]) == {"random init"} and set(control["target"]) == {"smollm2-135m"}
    assert set(control["source"]) == {"smollm2-135m"}  # only adapters of the twin's kind
    assert np.isfinite(control["score"]).all() and np.isfinite(control["transfer"]).all()
    assert (control["se"] >= 0).all()  # a paired standard error over the test sentences
    assert (control.loc[control["score"] != control["transfer"], "se"] > 0).all()  # the two differ: a spread
    re_cells = control[control["task"] == "re"]  # RE's twin reads the whole test subset: the matrix's sentences
    for _, row in re_cells.iterrows():
        from chapter_code.transfer import transfer_scores
        real = transfer_scores(adapters["re", row["source"], row["seed"]], data["re"][row["target"]]["test"])
        assert row["transfer"] == pytest.approx(real["score"])


@pytest.mark.slow
def test_sentence_counts_sum_to_every_tasks_headline_score(smoke, one_thread):
    from chapter_code.transfer import counts_score, sentence_counts
    from chapter_code.transfer import transfer_scores

    _, data, adapters = smoke
    for (task, source, _), adapter in adapters.items():
        test = data[task][source]["test"]
        counts = sentence_counts(task, test.items, adapter.predict(test), adapter.vocab)
        assert len(counts) == len(test)
        assert counts_score(task, counts.sum(0)) == pytest.approx(transfer_scores(adapter, test)["score"]), task


@pytest.mark.slow
def test_adapter_trained_on_other_data_is_not_reused(smoke, one_thread):
    from olacore.toa.data import input_spec
    from olacore.toa.train import make_job

    chapter, data, _ = smoke
    splits = data["re"]["smollm2-135m"]
    train = splits["train"]
    fewer = dataclasses.replace(train, items=train.items[1:], records=train.records[1:])
    spec, syntax = input_spec("order 1+2"), chapter.syntax
    same = make_job(train, splits["dev"], spec, syntax.adapter, syntax.training)
    again = make_job(train, splits["dev"], spec, syntax.adapter, syntax.training, model="a label only")
    other = make_job(fewer, splits["dev"], spec, syntax.adapter, syntax.training)
    assert same.key() == again.key()
    assert same.key() != other.key()


def test_heatmaps_one_panel_per_task_and_kind():
    import matplotlib

    matplotlib.use("Agg")
    from chapter_code.transfer import transfer_heatmaps

    rows = _rows([("re", "causal", s, g, 10.0 * i) for i, (s, g) in enumerate([("a", "a"), ("a", "b"), ("b", "a"),
                                                                               ("b", "b")])]
                 + [("dp", "encoder", "x", "x", 50.0)])
    fig = transfer_heatmaps(rows, ["re", "dp"])
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(axes) == 4
    assert len(bars) == 2  # a colour bar beside each drawn panel, none beside a blank one
    assert axes[0].get_title().startswith("RE accuracy") and not axes[1].axison  # no encoder RE rows: blank panel
    texts = [t.get_text() for t in axes[0].texts]
    assert texts == ["0.0", "10.0", "20.0", "30.0"]


def test_learned_table_counts_diagonals_above_the_majority_bound():
    import pandas as pd

    from chapter_code.transfer import learned_table

    rows = pd.DataFrame([
        {"task": "re", "kind": "causal", "source": "a", "target": "a", "diagonal": True, "score": 19.0},
        {"task": "re", "kind": "causal", "source": "b", "target": "b", "diagonal": True, "score": 25.0},
        {"task": "re", "kind": "causal", "source": "a", "target": "b", "diagonal": False, "score": 90.0},
        {"task": "dp", "kind": "encoder", "source": "c", "target": "c", "diagonal": True, "score": 10.0},
    ])
    bounds = pd.DataFrame([{"task": "re", "bound": "majority", "score": 19.0},
                           {"task": "dp", "bound": "neighbour", "score": 30.0}])
    table = learned_table(rows, bounds).set_index("task")
    assert table.loc["re", "models"] == 2 and table.loc["re", "above majority"] == 1  # a tie does not count
    assert table.loc["re", "best target-trained"] == 25.0  # the off-diagonal 90 is not a diagonal
    assert table.loc["dp", "above majority"] == 0


def test_settings_refuse_re_that_is_not_task_sizes():
    with pytest.raises(ValueError, match="TransferSettings.re"):
        TransferSettings(re=(300, 100, 100))


def test_settings_refuse_no_model():
    with pytest.raises(ValueError, match="at least one model"):
        TransferSettings(causal=(), encoders=(), control_models=(), zero_shot_models=())


def test_settings_refuse_model_in_both_kinds():
    with pytest.raises(ValueError, match="twice"):
        TransferSettings(causal=("smollm2-135m",), encoders=("smollm2-135m",), control_models=(),
                         zero_shot_models=())


def test_extra_encoders_join_dp_and_pos_only_and_must_be_zoo_encoders():
    s = TransferSettings(causal=("smollm2-135m",), encoders=("minilm-l6",), extra_encoders=("embeddinggemma-300m",),
                         control_models=("embeddinggemma-300m",), zero_shot_models=())
    assert s.models_for("dp") == s.models_for("pos") == ("smollm2-135m", "minilm-l6", "embeddinggemma-300m")
    assert all(s.models_for(task) == ("smollm2-135m", "minilm-l6") for task in ("re", "ner", "wnut"))
    for extra in (("smollm2-135m",), ("not-a-model",)):
        with pytest.raises(ValueError, match="extra_encoders"):
            TransferSettings(causal=(), encoders=("minilm-l6",), extra_encoders=extra, control_models=(),
                             zero_shot_models=())
    with pytest.raises(ValueError, match="twice"):
        TransferSettings(causal=(), encoders=("minilm-l6",), extra_encoders=("minilm-l6",), control_models=(),
                         zero_shot_models=())
    with pytest.raises(ValueError, match="list"):
        TransferSettings(causal=(), encoders=("minilm-l6",), extra_encoders="embeddinggemma-300m", control_models=(),
                         zero_shot_models=())


def test_settings_refuse_zoo_model_in_wrong_kind():
    with pytest.raises(ValueError, match="causal"):
        TransferSettings(causal=("minilm-l6",), encoders=(), control_models=(), zero_shot_models=())


def test_settings_accept_non_zoo_model_in_either_kind():
    s = TransferSettings(causal=("my-lm",), encoders=("my-enc",), control_models=(), zero_shot_models=())
    assert s.models == ("my-lm", "my-enc")


def test_heatmap_text_colour_follows_cell_brightness():
    import matplotlib
    matplotlib.use("Agg")
    from chapter_code.transfer import transfer_heatmaps
    rows = pd.DataFrame([dict(task="re", kind="causal", source=s, target=t, seed=0, score=v)
                         for s, t, v in [("a", "a", 90), ("a", "b", 10), ("b", "a", 85), ("b", "b", 80)]])
    fig = transfer_heatmaps(rows, ["re"], ["causal"])
    colours = {t.get_text(): t.get_color() for t in fig.axes[0].texts}
    assert colours["10.0"] == "white" and colours["85.0"] == "black"


def test_verdicts_not_tested_when_source_did_not_learn():
    from olacore.report import NOT_TESTED
    rows = pd.DataFrame([dict(task="re", kind="causal", source=s, target=t, seed=0, score=v)
                         for s, t, v in [("a", "a", 19.0), ("a", "b", 25.0), ("b", "a", 30.0), ("b", "b", 60.0)]])
    bounds = pd.DataFrame([{"task": "re", "bound": "majority class (x)", "score": 19.0}])
    v = verdict_table(gap_table(rows), pd.DataFrame(), bounds).set_index("source")
    assert v.loc["a", "beats majority"] == NOT_TESTED  # measured bound, source at the majority bound
    assert (v.loc["a", ["beats zero-shot", "beats random init"]] == "-").all()  # bounds not measured: no verdict
    assert v.loc["b", "beats majority"] == "holds"
    assert math.isnan(v.loc["b", "recovered"])  # target a's own score is the majority bound
    assert math.isnan(v.loc["b", "recovered above majority"])
    assert v.loc["a", "recovered"] == pytest.approx(100 * 25 / 60)
    assert v.loc["a", "recovered above majority"] == pytest.approx(100 * 6 / 41)


# ---------------------------------------------------------------- bad input, empty results, lazy twin

def _smoke_re():
    return settings("transfer", "smoke", tasks=("re",), causal=("smollm2-135m",), encoders=("minilm-l6",),
                             control_models=("smollm2-135m",), zero_shot_models=("smollm2-135m",))


def test_surface_margins_score_the_rule_on_the_adapters_own_words():
    """On the smoke UNER test split, every third sentence cut to half its words: an adapter that
    predicts the rule's own tags is the rule (margin 0, no spread); one that predicts the gold tags
    scores F1 100; the rule's F1 is entity_f1 on the kept words."""
    from olacore.toa.train import entity_f1
    from olacore.toa.data import LabelVocab, TaskItem
    from chapter_code.transfer import surface_margins, task_splits

    chapter = settings("transfer", "smoke", tasks=("ner",), causal=("smollm2-135m",), encoders=(), control_models=(),
                       zero_shot_models=())
    splits = task_splits("ner", chapter)
    kind = capitalisation_bound(splits["train"], splits["test"])["type"]
    sentences = splits["test"]
    kept = [len(x.words) // 2 if i % 3 == 0 else len(x.words) for i, x in enumerate(sentences)]
    items = [TaskItem(x.sent_id, x.text, n, word_tokens=tuple(range(n)), word_labels=tuple(x.tags[:n]))
             for x, n in zip(sentences, kept)]
    rule = [capitalisation_tags(x.words, kind)[:n] for x, n in zip(sentences, kept)]
    vocab = LabelVocab.from_labels([t for x in sentences for t in x.tags] + [t for r in rule for t in r])

    class Tagger:  # predicts given word tags (the adapter's interface: predict and vocab)
        def __init__(self, tags):
            self.tags, self.vocab = tags, vocab

        def predict(self, data):
            return [{"labels": np.array([vocab.index(t) for t in tags])} for tags in self.tags]

    class Test(list):  # the target's test data: its items, and whether it is causal
        causal = True

        @property
        def items(self):
            return list(self)

    data = {"ner": {"smollm2-135m": {"test": Test(items)}}}
    gold = [list(i.word_labels) for i in items]
    same = surface_margins({("ner", "smollm2-135m", 0): Tagger(rule)}, data, chapter)
    assert len(same) == 1 and same.loc[0, "margin"] == 0 and same.loc[0, "se"] == 0
    assert same.loc[0, "capitalisation"] == pytest.approx(entity_f1(gold, rule)["f1"])
    perfect = surface_margins({("ner", "smollm2-135m", 0): Tagger(gold)}, data, chapter)
    assert perfect.loc[0, "f1"] == pytest.approx(100) and perfect.loc[0, "se"] > 0
    assert perfect.loc[0, "entities"] == entity_f1(gold, gold)["entities"] and perfect.loc[0, "sentences"] == len(items)


def test_capitalisation_bound_tags_capitalised_runs_off_the_sentence_start():
    from olacore.corpora import NERSentence, join_words
    from olacore.toa.train import entity_f1

    words = ["Yesterday", "I", "met", "Anna", "Lee", "in", "Paris", "and", "berlin", "."]
    assert capitalisation_tags(words, "LOC") == ["O", "B-LOC", "O", "B-LOC", "I-LOC", "O", "B-LOC", "O", "O", "O"]
    assert capitalisation_tags(["Paris"], "LOC") == ["O"]  # the first word is never tagged

    def sentence(words, tags):
        text, spans = join_words(words)
        return NERSentence("s", text, tuple(words), spans, tuple(tags))

    gold = ["O", "O", "O", "B-PER", "I-PER", "O", "B-LOC", "O", "B-LOC", "O"]
    train = [sentence(["Bob", "and", "Ann"], ["B-PER", "O", "B-PER"]), sentence(["in", "Rome"], ["O", "B-LOC"])]
    bound = capitalisation_bound(train, [sentence(words, gold)])
    # Commonest training type PER; predicted entities: I (wrong), Anna Lee (right), Paris (typed PER: wrong).
    assert bound["type"] == "PER"
    assert bound["precision"] == pytest.approx(100 / 3) and bound["recall"] == pytest.approx(100 / 3)
    expected = entity_f1([gold], [["O", "B-PER", "O", "B-PER", "I-PER", "O", "B-PER", "O", "O", "O"]])
    assert bound["f1"] == pytest.approx(expected["f1"])
    with pytest.raises(ValueError, match="entity"):
        capitalisation_bound([sentence(["no", "names"], ["O", "O"])], train)


def test_no_tasks_give_an_empty_majority_frame():
    from chapter_code.transfer import majority_bounds

    empty = majority_bounds(_smoke_re(), [])
    assert empty.empty and list(empty.columns) == ["task", "bound", "score"]


def test_zero_shot_rows_skip_the_unprompted_tasks_of_the_settings():
    from chapter_code.transfer import PROMPTED, ZERO_SHOT_COLUMNS

    assert PROMPTED == ("re", "wnut")
    syntax_only = settings("transfer", "smoke", tasks=("dp", "pos"))
    empty = zero_shot_rows(syntax_only)  # dp / pos have no zero-shot form: passed over by design
    assert empty.empty and list(empty.columns) == list(ZERO_SHOT_COLUMNS)


def test_no_rows_give_empty_frames_with_their_columns():
    from chapter_code.transfer import ROW_COLUMNS, matrix, random_init_rows

    rows = pd.DataFrame(columns=list(ROW_COLUMNS))
    with pytest.raises(ValueError, match="causal"):
        matrix(rows, "re", "causal")
    assert gap_table(rows).empty
    control = random_init_rows({}, {"re": {"minilm-l6": None}}, _smoke_re())  # the control model is in no task
    assert control.empty and list(control.columns) == [*ROW_COLUMNS, "control", "transfer", "se"]


def test_findings_never_show_an_undefined_number():
    lines = ["- order 1: 42.0 % (chance 2.0 %).", "- rollout: nan % (chance 2.0 %).", "- gap -inf points."]
    assert findings_markdown(lines, "none") == "\n".join(["- order 1: 42.0 % (chance 2.0 %).", UNDEFINED_FINDING,
                                                         UNDEFINED_FINDING])
    assert findings_markdown([], "No claim could be judged.") == "No claim could be judged."
    assert findings_markdown(["- the nano model and the info line"], "none") == "- the nano model and the info line"
