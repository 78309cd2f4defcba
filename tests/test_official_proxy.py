"""The official proxy protocol (olacore.proxy): every quirk's switch, on hand-made maps.

What each switch must do is read from the official ``olas_visual_model.py``,
``models/ola_augmentations.py`` and ``models/ola_utils.py`` (see the docstring of ``OfficialQuirks``).
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
import torch
from conftest import sink_map

from olacore.augment import VISUAL_PROXY, augment
from olacore.pipeline import TokenMaps
from olacore.proxy import (
    OfficialQuirks,
    ProxyConfig,
    family_splits,
    official_proxy_experiment,
    official_view,
    train_official,
)
from olacore import proxy as loop_module
from olacore import proxy as official_module
from olacore.proxy import make_resnet18
from olacore.proxy import batchnorm_freeze_step, reported_accuracy
from olacore.texts import resize_maps
from olacore.maps import clean_sinks
from olacore.store import TensorStore

OFF = dataclasses.replace(VISUAL_PROXY, sink_p=0.0, noise_p=0.0)


def official_augment(maps, causal, settings, generator, stats="row"):
    """The official proxy's augmentation of one text (whole-row statistics, its column draw)."""
    return augment(maps, causal, settings, generator, stats=stats, column_draw="multinomial")


def _class_maps(num_classes: int, size: int, seed: int) -> list[torch.Tensor]:
    """One raw causal map per class: a bright band of key columns whose place is the class."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for c in range(num_classes):
        maps = 0.02 + 0.01 * torch.rand(size, size, generator=gen)
        start = 1 + (c * (size - 5)) // num_classes
        maps[start:, start : start + 4] += 0.3
        maps[:, 0] += 0.5  # a sink column the cleaning removes
        maps = maps.tril()
        out.append((maps / maps.sum(-1, keepdim=True))[None])
    return out


# --- the switches as data -------------------------------------------------------------------


def test_quirks_are_named_and_a_wrong_name_lists_them():
    quirks = OfficialQuirks()
    assert quirks.names() == ("family_split", "augment_before_cleaning", "raw_inputs", "official_optimiser",
                              "frozen_batchnorm", "reaugment_targets", "max_over_evaluations")
    fewer = quirks.without("raw_inputs", "frozen_batchnorm")
    assert [n for n in fewer.names() if not getattr(fewer, n)] == ["raw_inputs", "frozen_batchnorm"]
    with pytest.raises(ValueError, match="family_split, augment_before_cleaning, raw_inputs"):
        quirks.without("best_weights")
    # read-out quirks do not change training: the training key resets them
    assert quirks.without("reaugment_targets", "max_over_evaluations").for_training() == quirks
    assert quirks.without("raw_inputs").for_training() != quirks


def test_family_split_holds_out_each_model_its_own_family():
    names = ["q-small", "q-big", "g", "l"]
    assert family_splits(names) == [(["q-big", "g", "l"], ["q-small"]), (["q-small", "g", "l"], ["q-big"]),
                                    (["q-small", "q-big", "l"], ["g"]), (["q-small", "q-big", "g"], ["l"])]
    with pytest.raises(ValueError, match="two models"):
        family_splits(["a"])


def test_reported_number_is_the_maximum_or_the_last_of_the_chosen_evaluations():
    history = [{"step": 10, "test_acc": 0.2, "test_acc_clean": 0.5}, {"step": 20, "test_acc": 0.6, "test_acc_clean": 0.3},
               {"step": 30, "test_acc": 0.4, "test_acc_clean": 0.4}]
    quirks = OfficialQuirks()
    assert reported_accuracy(history, quirks) == (0.6, 20)
    assert reported_accuracy(history, quirks.without("max_over_evaluations")) == (0.4, 30)
    assert reported_accuracy(history, quirks.without("reaugment_targets")) == (0.5, 10)
    assert reported_accuracy(history, quirks.without("reaugment_targets", "max_over_evaluations")) == (0.4, 30)


# --- where the augmentations are applied (their rules: tests/test_augment.py) ------------------------


def test_the_switch_puts_the_augmentation_before_or_after_cleaning_and_resizing():
    """Official order: augment the raw token-level maps, then clean sinks, then resize; switched
    off: clean and resize, then augment the resized maps."""
    for seed in range(3):
        maps = sink_map(20, seed)
        plain = official_view(maps, True, 16, None, None)
        torch.testing.assert_close(plain, resize_maps(clean_sinks(maps, True, stats="row"), 16))
        settings = dataclasses.replace(VISUAL_PROXY, sink_p=1.0, noise_p=1.0)
        before = official_view(maps, True, 16, torch.Generator().manual_seed(seed), settings, before_cleaning=True)
        after = official_view(maps, True, 16, torch.Generator().manual_seed(seed), settings, before_cleaning=False)
        expected_before = resize_maps(clean_sinks(official_augment(maps, True, settings, torch.Generator().manual_seed(seed)),
                                                  True, stats="row"), 16)
        expected_after = official_augment(plain, False, settings, torch.Generator().manual_seed(seed))
        torch.testing.assert_close(before, expected_before)
        torch.testing.assert_close(after, expected_after)
        assert not torch.allclose(before, after)


# --- training: inputs, BatchNorm mode, evaluations -----------------------------------------------


class _Recorder(torch.nn.Module):
    """The real network, recording what training feeds it and in which mode."""

    def __init__(self, net: torch.nn.Module, seen: list):
        super().__init__()
        self.net, self.seen = net, seen

    def forward(self, x):
        if torch.is_grad_enabled():  # a training step, not an evaluation
            self.seen.append((self.training, float(x.mean()), float(x.std())))
        return self.net(x)


@pytest.fixture()
def recorder(monkeypatch):
    seen: list = []
    monkeypatch.setattr(loop_module, "make_resnet18", lambda *a, **k: _Recorder(make_resnet18(*a, **k), seen))
    return seen


CONFIG = ProxyConfig(iterations=12, batch_size=4, lr=0.05, width=8, eval_every=4)


def test_batchnorm_freezes_after_the_official_fraction_of_training():
    # olas_visual_model.py: its first evaluation, step 100 of 100k; at least one step
    assert [batchnorm_freeze_step(n) for n in (100_000, 400, 10, 2_000, 1)] == [100, 1, 1, 2, 1]


@pytest.mark.parametrize("frozen", [True, False])
def test_batchnorm_stays_in_eval_mode_from_the_freeze_step_only_with_the_quirk(recorder, frozen, monkeypatch,
                                                                               one_thread):
    # freeze after half of the 12 steps: between the evaluations at steps 4 and 8, so the
    # freeze does not follow the evaluation interval and the evaluation at step 4 restores train mode
    monkeypatch.setattr(official_module, "BATCHNORM_FREEZE_FRACTION", 0.5)
    sources, target = [_class_maps(4, 14, 0), _class_maps(4, 12, 1)], [_class_maps(4, 13, 2)]
    quirks = OfficialQuirks() if frozen else OfficialQuirks().without("frozen_batchnorm")
    history = train_official(sources, target, True, CONFIG, quirks, size=16, seed=0, device="cpu", progress=False)
    modes = [training for training, _, _ in recorder]
    assert len(modes) == 12 and all(modes[:6])  # steps 1-6 train BatchNorm
    assert (not any(modes[6:])) if frozen else all(modes[6:])
    assert [h["step"] for h in history] == [4, 8, 12]
    assert all({"test_acc", "test_acc_clean", "train_acc", "train_loss"} <= set(h) for h in history)


def test_the_official_optimiser_replaces_the_configs_and_its_switch_restores_it(one_thread):
    sources, target = [_class_maps(4, 14, 0), _class_maps(4, 12, 1)], [_class_maps(4, 13, 2)]
    kwargs = {"size": 16, "seed": 0, "device": "cpu", "progress": False}
    as_official = ProxyConfig(iterations=12, batch_size=4, width=8, eval_every=4, lr=0.007, momentum=0.9,
                              weight_decay=5e-4, cosine=False)
    other = dataclasses.replace(as_official, lr=0.5, momentum=0.0, weight_decay=0.0, cosine=True)
    official = train_official(sources, target, True, other, OfficialQuirks(), **kwargs)
    # with the quirk, the config's SGD settings are ignored: the same run as a config holding the official ones
    assert official == train_official(sources, target, True, as_official, OfficialQuirks(), **kwargs)
    assert official == train_official(sources, target, True, as_official,
                                      OfficialQuirks().without("official_optimiser"), **kwargs)
    # without it, the config's own settings train
    assert official != train_official(sources, target, True, other,
                                      OfficialQuirks().without("official_optimiser"), **kwargs)


@pytest.mark.parametrize("raw", [True, False])
def test_inputs_are_raw_maps_or_standardised_with_the_quirk_switched_off(recorder, raw, one_thread):
    sources, target = [_class_maps(4, 14, 0), _class_maps(4, 12, 1)], [_class_maps(4, 13, 2)]
    quirks = OfficialQuirks() if raw else OfficialQuirks().without("raw_inputs")
    train_official(sources, target, True, CONFIG, quirks, size=16, augment=OFF,
                   seed=0, device="cpu", progress=False)
    means = [mean for _, mean, _ in recorder]
    if raw:  # rows of cleaned maps sum to one: the mean entry of a 16 x 16 resized map is about 1/16
        assert all(0.02 < m < 0.1 for m in means)
    else:
        assert all(abs(m) < 0.5 for m in means) and any(abs(m) > 0 for m in means)
        assert sum(std for _, _, std in recorder) / len(recorder) > 0.5


def test_evaluations_never_change_training_and_the_reaugmented_ones_vary(one_thread):
    sources, target = [_class_maps(6, 14, 0), _class_maps(6, 12, 1)], [_class_maps(6, 13, 2)]
    strong = dataclasses.replace(VISUAL_PROXY, sink_p=1.0, noise_p=1.0, noise_std_ratio=2.0)
    a = train_official(sources, target, True, CONFIG, OfficialQuirks(), size=16, augment=strong, seed=1,
                       device="cpu", progress=False)
    b = train_official(sources, target, True, CONFIG, OfficialQuirks().without("reaugment_targets"), size=16,
                       augment=strong, seed=1, device="cpu", progress=False)
    assert [h["train_loss"] for h in a] == [h["train_loss"] for h in b]
    assert a == b  # both evaluations are recorded by every run
    assert reported_accuracy(b, OfficialQuirks().without("reaugment_targets"))[0] == max(h["test_acc_clean"] for h in b)


def test_official_runs_learn_a_toy_set_and_read_out_variants_share_one_training(tmp_path, one_thread):
    names = ["m1", "m2", "m3"]
    sizes = {"m1": 14, "m2": 12, "m3": 16}
    tokens = {n: [TokenMaps(text=f"text {i}", tokens=[], offsets=[], causal=True, model=n, channels=("order1",),
                            maps=m) for i, m in enumerate(_class_maps(4, sizes[n], seed))]
              for seed, n in enumerate(names)}
    config = ProxyConfig(iterations=60, batch_size=8, lr=0.05, width=8, eval_every=20)
    variants = {"official": OfficialQuirks(), "last clean evaluation": OfficialQuirks().without(
        "reaugment_targets", "max_over_evaluations"), "BatchNorm trained": OfficialQuirks().without("frozen_batchnorm")}
    store = TensorStore(tmp_path)
    runs, histories = official_proxy_experiment(tokens, ("order1",), config, [0], variants, size=16, store=store,
                                                progress=False)
    assert len(runs) == 9 and set(runs["variant"]) == set(variants)
    assert len(list(tmp_path.rglob("*.safetensors"))) == 6  # 3 targets x 2 trainings (read-outs share one)
    official = runs[runs["variant"] == "official"]
    assert (official["reported"] >= official["last_acc"]).all()
    assert runs[runs["variant"] == "BatchNorm trained"]["reported"].mean() > 0.5  # chance is 1/4
    again, _ = official_proxy_experiment(tokens, ("order1",), config, [0], variants, size=16, store=store,
                                         progress=False)
    assert again.equals(runs)
    assert set(histories) == {(v, n, 0) for v in variants for n in names}
    with pytest.raises(ValueError, match="lack channels"):
        official_proxy_experiment(tokens, ("order2",), config, [0], variants, store=store, progress=False)


# --- reading the runs -----------------------------------------------------------------------


def test_protocol_table_and_selection_figure_on_hand_made_runs():
    import matplotlib

    matplotlib.use("Agg")
    from chapter_code.official_protocol import protocol_table, selection_figure

    official = pd.DataFrame([
        {"variant": v, "target": t, "seed": s, "reported": r}
        for v, base in (("official protocol", 0.6), ("without raw inputs", 0.5)) for t in ("a", "b") for s, r in
        ((0, base), (1, base + 0.1))])
    held_out = pd.DataFrame([{"target": t, "seed": s, "test_acc": 0.3 + 0.1 * s} for t in ("a", "b") for s in (0, 1)])
    table = protocol_table(official, held_out, ["official protocol", "without raw inputs"], held_out_label="held-out")
    assert list(table.index) == ["official protocol", "without raw inputs", "held-out"]
    assert table.loc["official protocol", "a"] == "65.0 ± 7.1"
    assert table.loc["held-out", "mean over targets"] == pytest.approx(35.0)
    assert table["points vs official protocol"].tolist() == pytest.approx([0.0, -10.0, -30.0])
    histories = {("official protocol", t, s): [{"step": 5, "test_acc": 0.2}, {"step": 10, "test_acc": 0.6 + 0.1 * s}]
                 for t in ("a", "b") for s in (0, 1)}
    fig = selection_figure(official, histories, held_out, "official protocol", chance=0.1)
    assert [ax.get_title() for ax in fig.axes] == ["a", "b"]
