"""The syntax chapter's readings of the TOA grid: settings, data sets, verdicts, baselines, records.

Hand-made grids and toy maps only (no real model); the chapter itself runs in test_notebooks.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from olacore.corpora import join_words
from olacore.extraction import Extraction
from olacore.profiles import settings
from olacore.report import paper_comparison
from olacore.results import ChapterResults
from olacore.toa.data import SYNTAX_GRID, InputSpec, LabelVocab, build_task_data, input_spec
from olacore.toa.train import score

from chapter_code.syntax import (DataSet, baseline_table, best_layer, data_reports, direction_table, grid_cells,
                                 grid_datasets, grid_plan, grid_table, head_directions, layer_cells, layer_screen,
                                 learning_curve, main_data_sets, paired_margin, record_rows, record_syntax,
                                 subset_splits, syntax_keys, syntax_paper_numbers, syntax_verdicts, wide_table)
from olacore.corpora import UDSentence
from olacore.report import FAILS, GOAL, HOLDS, WEAK

# ---------------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------------


def test_input_names_map_to_specs_and_layers():
    assert input_spec("order 1+2") == InputSpec(("order1", "order2"))
    assert input_spec("ALTI").channels == ("alti",)
    assert input_spec("layer 3").channels == ("layer3",)
    for bad in ("layer 0", "layer x", "order 9", ""):
        with pytest.raises(KeyError, match="known"):
            input_spec(bad)


def test_data_sets_and_cells_of_a_profile():
    chosen = settings("syntax", "default", alti_subset=(20, 10, 10), curve_sizes=(100, 600))
    sets = grid_datasets(chosen)
    assert sets["minilm-l6 [ALTI subset]"] == DataSet("minilm-l6 [ALTI subset]", "minilm-l6", 20, 10, 10, ("ola", "alti"))
    assert "smollm2-135m [train 100]" in sets and "smollm2-135m [train 600]" not in sets  # not above num_train
    assert sets["minilm-l6 [random init]"].random_init and "attention" in sets["minilm-l6"].sources
    cells = grid_cells(chosen)
    assert len(cells) == len(set(cells)) and all(name in sets for name, _, _ in cells)
    assert ("minilm-l6 [ALTI subset]", "ALTI", 0) in cells and not any(i == "ALTI" for m, i, _ in cells if m in sets
                                                                        and sets[m].model == m)
    on_main = grid_cells(replace(settings("syntax", "default"), alti_subset=None))  # None: ALTI on the main splits
    assert ("qwen2.5-0.5b", "ALTI", 0) in on_main and not any("[ALTI subset]" in m for m, _, _ in on_main)
    assert all(cell[1] in SYNTAX_GRID for cell in cells)
    plan = grid_plan(chosen).set_index("data set")
    assert plan["adapters"].sum() == len(cells) and plan.loc["minilm-l6 [ALTI subset]", "train"] == 20
    assert plan.loc["minilm-l6", "train"] == chosen.num_train and plan.loc["minilm-l6", "seeds"] == (
        "0, 1 (" + ", ".join(i for i in SYNTAX_GRID if i in chosen.seed_inputs) + "); 0 (" +
        ", ".join(i for i in plan.loc["minilm-l6", "inputs"].split(", ") if i not in chosen.seed_inputs) + ")")
    assert plan.loc["qwen2.5-0.5b", "inputs"] == ", ".join(chosen.basic_inputs)


@pytest.mark.parametrize("override, names", [
    ({"alti_subset": (10, 0, 10)}, ["SyntaxSettings.alti_subset[1]"]),
    ({"alti_subset": (10, 10)}, ["SyntaxSettings.alti_subset"]),
    ({"curve_sizes": (-5,)}, ["SyntaxSettings.curve_sizes[0]", "-5"]),
    ({"layer_models": ("bert-base-cased",)}, ["SyntaxSettings.layer_models", "bert-base-cased"]),
    ({"alti_models": ("bert-base-cased",)}, ["SyntaxSettings.alti_models", "bert-base-cased"]),
    ({"seeds": ()}, ["SyntaxSettings.seeds"]),
    ({"basic_inputs": ("order 9",)}, ["SyntaxSettings.basic_inputs[0]", "order 9"]),
    ({"grid": "chars"}, ["SyntaxSettings.grid", "chars"]),
])
def test_bad_settings_are_refused_with_the_field(override, names):
    with pytest.raises(ValueError) as refused:
        settings("syntax", "smoke", **override)
    assert all(name in str(refused.value) for name in names) and "\n" not in str(refused.value), refused.value


def test_extra_models_refuse_an_unknown_model_or_one_of_the_grid(monkeypatch):
    assert settings("syntax", "smoke").extra_models == () and settings("syntax", "paper").extra_models == ()
    assert set(settings("syntax", "default").extra_models) <= {"embeddinggemma-300m", "qwen2.5-1.5b"}
    assert settings("syntax", "smoke", extra_models=["qwen2.5-1.5b"]).extra_models == ("qwen2.5-1.5b",)
    with pytest.raises(ValueError, match="gemma-9b") as error:
        settings("syntax", "smoke", extra_models=["embeddinggemma-300m", "gemma-9b"])
    assert "extra_models" in str(error.value) and "embeddinggemma-300m" in str(error.value)  # the zoo names listed
    with pytest.raises(ValueError, match="minilm-l6"):  # already in the grid: its records would repeat
        settings("syntax", "smoke", extra_models=["minilm-l6"])
    monkeypatch.setenv("OLACORE_SETTINGS_OVERRIDES", '{"syntax": {"extra_models": ["qwen-1.5b"]}}')
    with pytest.raises(ValueError, match="qwen-1.5b") as error:
        settings("syntax", "smoke")
    assert "OLACORE_SETTINGS_OVERRIDES" in str(error.value)


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


def test_subset_splits_cut_train_and_dev_and_spread_test():
    splits = {"train": list(range(10)), "dev": list(range(5)), "test": list(range(100)), "test_long": [7]}
    out = subset_splits(splits, 3, 2, 5)
    assert out["train"] == [0, 1, 2] and out["dev"] == [0, 1] and out["test"] == [0, 25, 50, 74, 99]
    assert "test_long" not in out
    assert subset_splits(splits)["test_long"] == [7] and subset_splits(splits)["test"] == list(range(100))


class _Record:
    """An OLA record with the fields the TOA code reads."""

    def __init__(self, text, offsets, orders, causal=False):
        self.text, self.offsets, self.orders, self.rollout, self.is_causal = text, offsets, orders, orders[1], causal
        self.tokens = [text[a:b] for a, b in offsets]


def _planted(count, seed, layers=3, planted_layer=2):
    """Sentences (one token per word) and attention records whose ``planted_layer`` holds each
    word's gold head as its row's second peak (the first is a sink on word 0, as real maps have
    one, and the official sink rule removes a row's maximum); the other layers are noise."""
    rng = np.random.default_rng(seed)
    sources, records, attention = [], [], []
    for index in range(count):
        size = int(rng.integers(5, 9))
        words = tuple(f"w{k}" for k in range(size))
        text, spans = join_words(words)
        root = int(rng.integers(size))
        heads = [0 if w == root else int(rng.choice([h for h in range(1, size) if h != w])) + 1 for w in range(size)]
        maps = rng.random((layers, size, size)) + 0.5
        maps[:, :, 0] += 6.0  # the sink
        for w, head in enumerate(heads):
            if head:
                maps[planted_layer - 1, w, head - 1] += 2.0
        maps = torch.tensor(maps / maps.sum(-1, keepdims=True), dtype=torch.float32)
        orders = torch.stack([torch.eye(size), maps.mean(0), maps.mean(0) @ maps.mean(0)])
        records.append(_Record(text, list(spans), orders))
        attention.append(Extraction(text, records[-1].tokens, list(spans), False, maps))
        sources.append(UDSentence(f"p{index}", text, words, spans, tuple(heads), ("dep",) * size, ("X",) * size))
    data = build_task_data("dp", "toy", sources, "dev", records=records, max_tokens=None)
    data.sources = {"attention": attention}
    return data, sources


def test_inputs_read_their_own_source_and_a_missing_one_is_named():
    data, _ = _planted(3, 0)
    assert data.source_records(input_spec("layer 2")) == data.sources["attention"]
    assert data.source_records(input_spec("order 1")) == data.records
    assert data.inputs(input_spec("layer 2"))[0].shape[0] == input_spec("layer 2").num_channels
    with pytest.raises(ValueError, match="alti"):
        data.source_records(input_spec("ALTI"))


def test_layer_screen_finds_the_planted_layer_and_layer_cells_pick_it():
    data, _ = _planted(12, 1)
    screen = layer_screen(data)
    assert screen["layer"].tolist() == [1, 2, 3]
    assert screen["attachment"].idxmax() == 1 and screen.loc[1, "attachment"] > 75
    assert screen.loc[0, "attachment"] < 50 and screen["words"].iloc[0] == sum(
        sum(h >= 0 and h != item.word_tokens[w] for w, h in enumerate(item.heads)) for item in data.items)
    assert layer_cells({"toy": screen}, seed=1) == [("toy", "layer 2", 1)]
    with pytest.raises(ValueError, match="attention records"):
        layer_screen(replace(data, sources={}))


class _FixedAdapter:
    """Predicts the given heads (grid positions) for every item, in order."""

    def __init__(self, heads):
        self.heads = heads

    def predict(self, data):
        return [{"heads": torch.tensor(h)} for h in self.heads]


def test_head_directions_split_words_by_where_the_gold_head_lies():
    data, _ = _planted(2, 2)
    gold = [list(item.heads) for item in data.items]
    perfect = head_directions(_FixedAdapter(gold), data).set_index("direction")
    assert perfect["uas"].dropna().eq(100.0).all() and perfect["share"].sum() == pytest.approx(100.0)
    counts = {"left": 0, "right": 0, "root": 0}
    for item in data.items:
        for w, head in enumerate(item.heads):
            counts["root" if head == w else ("left" if head < w else "right")] += 1
    assert perfect["words"].to_dict() == counts
    # predict "the next word" (the last word: itself): right heads that are the next word count, nothing else
    nxt = [[min(w + 1, len(item.heads) - 1) for w in range(len(item.heads))] for item in data.items]
    scored = head_directions(_FixedAdapter(nxt), data).set_index("direction")
    assert scored.loc["left", "uas"] == 0.0
    table = direction_table({("toy", "order 1", 0): _FixedAdapter(gold)}, {"toy": {"test": data}},
                            [("toy", "order 1", 0)])
    assert set(table["direction"]) == {"left", "right", "root"} and (table["model"] == "toy").all()


class _LabelledAdapter(_FixedAdapter):
    """Predicts the given heads and relation ids, with a vocabulary."""

    def __init__(self, heads, rels, labels=("dep", "other")):
        super().__init__(heads)
        self.rels, self.vocab = rels, LabelVocab(labels)

    def predict(self, data):
        return [{"heads": torch.tensor(h), "rels": torch.tensor(r)} for h, r in zip(self.heads, self.rels)]


def test_paired_margin_is_the_score_difference_with_a_sentence_standard_error():
    data, _ = _planted(40, 5)
    rng = np.random.default_rng(0)
    gold = [np.array(item.heads) for item in data.items]

    def noisy(p_right, p_label):
        heads = [np.where(rng.random(len(g)) < p_right, g, (g + 1) % len(g)) for g in gold]
        return _LabelledAdapter(heads, [(rng.random(len(g)) > p_label).astype(int) for g in gold])

    good, poor, other = noisy(0.8, 0.9), noisy(0.4, 0.5), noisy(0.6, 0.7)
    scores = {a: score("dp", data.items, a.predict(data), a.vocab) for a in (good, poor, other)}
    found = paired_margin([good], [poor], data)
    both = paired_margin([good, other], [poor, poor], data)
    for metric in ("uas", "las"):
        assert found[metric]["margin"] == pytest.approx(scores[good][metric] - scores[poor][metric])
        assert found[metric]["words"] == scores[good]["words"] and found[metric]["sentences"] == len(data.items)
        # seeds: the mean of the per-seed margins
        assert both[metric]["margin"] == pytest.approx((scores[good][metric] + scores[other][metric]) / 2
                                                       - scores[poor][metric])
    # the bootstrap standard error agrees with the ratio estimator's textbook formula (an independent estimate:
    # the sentence-clustered standard error of sum(diff) / sum(words))
    right = lambda a: np.array([sum(int(h) == g for h, g in zip(p["heads"], item.heads))
                                for item, p in zip(data.items, a.predict(data))], dtype=float)
    diff, words = right(good) - right(poor), np.array([len(item.heads) for item in data.items], dtype=float)
    n, share = len(words), diff.sum() / words.sum()
    formula = 100 * np.sqrt(n / (n - 1) * ((diff - share * words) ** 2).sum()) / words.sum()
    assert found["uas"]["se"] == pytest.approx(formula, rel=0.15) and found["uas"]["se"] > 0
    same = paired_margin([good], [good], data)
    assert same["las"] == {"margin": 0.0, "se": 0.0, "sentences": 40, "words": found["uas"]["words"]}
    with pytest.raises(ValueError, match="adapters"):
        paired_margin([good], [], data)


class _ScoredAdapter(_LabelledAdapter):
    """A labelled adapter with a training record, scored as a trained one (olacore.toa.train.score)."""

    def __init__(self, heads, rels, epoch):
        super().__init__(heads, rels)
        self.record = {"best_epoch": epoch, "dev": {"uas": 50.0 + epoch, "las": 40.0 + epoch}, "train_seconds": 2.0,
                       "sentences_per_second": 10.0}

    def evaluate(self, data):
        return score("dp", data.items, self.predict(data), self.vocab)


def test_grid_table_has_one_row_per_cell_with_its_test_score_and_record():
    data, _ = _planted(6, 7)
    gold = [np.array(item.heads) for item in data.items]
    perfect = _ScoredAdapter(gold, [np.zeros(len(g), int) for g in gold], epoch=2)
    shifted = _ScoredAdapter([(g + 1) % len(g) for g in gold], [np.zeros(len(g), int) for g in gold], epoch=1)
    splits = {"toy": {"train": data, "test": data}}
    table = grid_table({("toy", "order 1", 0): perfect, ("toy", "distance", 1): shifted}, splits)
    assert table[["model", "kind", "input", "seed"]].values.tolist() == [["toy", "encoder", "order 1", 0],
                                                                          ["toy", "encoder", "distance", 1]]
    assert table.loc[0, "uas"] == 100.0 and table.loc[0, "las"] == 100.0
    assert table.loc[1, "uas"] == pytest.approx(shifted.evaluate(data)["uas"]) and table.loc[1, "uas"] < 100.0
    assert table["epoch"].tolist() == [2, 1] and table["dev_las"].tolist() == [42.0, 41.0]
    assert (table["train"] == len(data)).all() and (table["words"] == table.loc[0, "words"]).all()
    assert "long_uas" not in table  # no test_long split, no long columns


def test_data_reports_count_per_data_set_and_split():
    data, _ = _planted(4, 3)
    report = data_reports({"toy": {"dev": data}})
    assert report.loc[0, ["data set", "split", "sentences", "kept"]].tolist() == ["toy", "dev", 4, 4]
    assert report.loc[0, "words"] == sum(len(item.heads) for item in data.items)


# ---------------------------------------------------------------------------------------------
# Verdicts and tables from a hand-made grid
# ---------------------------------------------------------------------------------------------


def _grid():
    rows = []

    def add(model, name, seed, uas, kind="encoder", dev_las=0.0, train=500):
        rows.append({"model": model, "kind": kind, "input": name, "seed": seed, "uas": uas, "las": uas - 10,
                     "uas_nopunct": uas + 1, "las_nopunct": uas - 9, "dev_las": dev_las, "train": train})

    for seed, (o1, o2, o3, roll) in enumerate([(60, 50, 40, 30), (62, 52, 63, 33)]):
        for name, value in (("order 1", o1), ("order 2", o2), ("order 3", o3), ("rollout", roll)):
            add("enc", name, seed, value)
    add("enc", "distance", 0, 35)
    add("enc", "layer 4", 0, 50, dev_las=40)
    add("enc", "layer 2", 0, 55, dev_las=30)
    add("enc [random init]", "order 1", 0, 36)
    add("enc [train 125]", "order 1", 0, 45, train=125)
    add("enc [ALTI subset]", "order 1", 0, 50)
    add("enc [ALTI subset]", "ALTI", 0, 52)
    add("clm", "order 1", 0, 48, kind="causal")
    add("clm", "distance", 0, 34, kind="causal")
    return pd.DataFrame(rows)


def test_verdicts_tables_and_baselines_from_a_hand_made_grid():
    table = _grid()
    verdicts = syntax_verdicts(table)
    first = verdicts[(verdicts["claim"] == "first order beats higher orders and rollout") & (verdicts["model"] == "enc")]
    by_other = first.set_index("other")
    assert by_other.loc["order 2", "verdict"] == HOLDS and by_other.loc["order 3", "verdict"] == WEAK
    assert by_other.loc["order 3", "mean_diff"] == pytest.approx((20 - 1) / 2) and (first["overall"] == WEAK).all()
    distance = verdicts[verdicts["other"] == "distance"].set_index("model")
    assert distance.loc["enc", "goal_met"] and not distance.loc["clm", "goal_met"]  # 25 vs 14 points, GOAL 20
    assert distance.loc["clm", "mean_diff"] == pytest.approx(14.0) and 14.0 < GOAL
    alti = verdicts[verdicts["claim"] == "first-order OLA beats ALTI"]
    assert alti["model"].tolist() == ["enc [ALTI subset]"] and alti["verdict"].iloc[0] == FAILS

    wide = wide_table(table, ["clm", "enc"], ["order 1", "distance"])
    assert wide.index.tolist() == ["clm", "enc"] and wide.loc["enc", ("uas", "order 1")] == pytest.approx(61.0)
    assert list(wide.columns)[:2] == [("uas", "order 1"), ("uas", "distance")]

    layers = best_layer(table)
    assert layers["input"].tolist() == ["layer 4"]  # best dev LAS, not best test UAS
    baselines = baseline_table(table, ["enc", "clm"]).set_index("model")
    assert baselines.loc["enc", "order 1 - distance"] == pytest.approx(25.0)
    assert baselines.loc["enc", "random init"] == 36 and baselines.loc["enc", "best layer"] == "layer 4"
    assert np.isnan(baselines.loc["clm", "random init"]) and baselines.loc["clm", "best layer"] == ""

    curve = learning_curve(table, ["enc"])
    assert curve["train"].tolist() == [125, 500] and curve["uas"].tolist() == [45, 60]


def test_the_paper_beside_ours_and_the_records():
    table = _grid()
    assert syntax_keys("order 1", "uas", "causal") == [] and syntax_keys("order 1+2", "uas", "encoder") == []
    keys = syntax_keys("order 1", "las", "encoder")
    assert keys and all(k.startswith("syntax/") and k.endswith("/order1/las") for k in keys)
    assert main_data_sets(table["model"]) == ["enc", "clm"]
    numbers = syntax_paper_numbers(table)
    assert set(numbers["subject"]) == {"enc", "clm"}  # main data sets only, never the smaller or control ones
    assert set(numbers[numbers["paper_keys"].map(bool)]["subject"]) == {"enc"}  # a causal LM has no paper number
    beside = paper_comparison("syntax", numbers)
    assert len(beside) == 3 * 4 * 2  # every paper encoder x order 1-3 and rollout x UAS / LAS, beside enc
    bert = beside[beside["published number"] == "UAS, BERT-base, order 1"].iloc[0]
    assert (bert["paper %"], bert["ours: model"], bert["ours %"]) == (81.29, "enc", pytest.approx(61.0))

    results = ChapterResults("06_syntax", "smoke")
    record_syntax(results, table, syntax_verdicts(table), anchor="tbl")
    by_key = {r.key: r for r in results.records}
    assert by_key["syntax/enc/order 1/uas"].value == pytest.approx(61.0)
    assert by_key["syntax/enc/order 1/uas"].paper_keys == syntax_keys("order 1", "uas", "encoder")
    assert by_key["syntax/enc/order 1/uas"].protocol == "held-out"
    for control in ("enc [random init]", "enc [train 125]", "enc [ALTI subset]"):
        assert by_key[f"syntax/{control}/order 1/uas"].paper_keys == []  # never beside the paper
    assert by_key["syntax/clm/order 1/uas"].paper_keys == []
    assert any(k.startswith("verdict/OLA carries syntax beyond distance/clm/") for k in by_key)

    rows = ChapterResults("06_syntax", "smoke")
    record_rows(rows, pd.DataFrame({"model": ["a", "b"], "accuracy": [90.0, float("nan")]}), "pos", ["model"],
                ["accuracy"], "POS")
    assert [r.key for r in rows.records] == ["pos/a/accuracy"]
    with pytest.raises(ValueError, match="twice"):
        record_rows(rows, pd.DataFrame({"model": ["a"], "accuracy": [1.0]}), "pos", ["model"], ["accuracy"], "POS")


@pytest.mark.slow
def test_syntax_data_with_alti_runs_one_forward_pass_per_sentence(tmp_path, monkeypatch):
    """ALTI's pass stores the attention the OLA is made of: with sources ("ola", "alti") extraction never runs."""
    from olacore import pipeline
    from olacore.store import TensorStore
    from olacore.toa.data import syntax_data
    from olacore.corpora import ewt_splits

    def no_second_pass(*args, **kwargs):
        raise AssertionError("extract_attention ran although ALTI's pass gave the attention")

    monkeypatch.setattr(pipeline, "extract_attention", no_second_pass)
    splits = subset_splits(ewt_splits(6, 2, 2), 6, 2, 2)
    cfg = settings("syntax", "smoke")
    store = TensorStore(tmp_path)
    data = syntax_data("minilm-l6", splits, cfg, sources=("ola", "alti"), store=store, device="cpu")
    assert len(data["train"].sources["alti"]) == len(data["train"].items) > 0
    assert all(record.orders.shape[0] == 4 for record in data["train"].records)
