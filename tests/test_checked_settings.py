"""Checked settings (olacore.settings): one-line refusals naming the field path; settings key cached runs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from olacore.augment import Augmentation
from olacore.settings import Items, PositiveInt, SettingsError, Str, settings_class
from olacore.profiles import settings
from olacore.toa.data import InputSpec
from olacore.toa.model import AdapterConfig
from olacore.toa.train import AdapterJob, TrainConfig


@settings_class
class Inner:
    size: PositiveInt = 1
    augment: Augmentation | None = None


@settings_class
class Outer:
    name: Str
    models: Items[Str] = ("a",)
    inner: Inner = Inner()


def _refusal(make) -> str:
    with pytest.raises(SettingsError) as refused:
        make()
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_a_refusal_names_every_bad_field_by_its_path_on_one_line():
    message = _refusal(lambda: Outer("x", models=["a", 3], inner={"size": 0}))
    assert "Outer.models[1]" in message and "Outer.inner.size" in message
    assert "Outer.name" in _refusal(lambda: Outer(7))  # a positional argument is named by its field
    assert "Outer.name" in _refusal(lambda: Outer())  # and a missing one
    unknown = _refusal(lambda: Outer("x", inner={"augment": {"sink_pp": 0.5}}))
    assert "Outer.inner.augment.sink_pp" in unknown and "sink_p," in unknown  # the known fields are listed
    assert "Outer.models" in _refusal(lambda: Outer("x", models=[]))
    assert "['a']" in _refusal(lambda: Outer("x", models="a"))  # a bare string: the list it may have meant


def test_a_checked_class_stays_a_frozen_dataclass_that_checks_replacements():
    made = Outer("x", models=["a", "b"], inner={"size": 2})
    assert made.models == ("a", "b") and made.inner == Inner(2)  # a list became a tuple, a dict its object
    assert dataclasses.asdict(made) == {"name": "x", "models": ("a", "b"), "inner": {"size": 2, "augment": None}}
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.name = "y"
    assert "Outer.inner" in _refusal(lambda: dataclasses.replace(made, inner=3))


def _job(adapter: AdapterConfig, training: TrainConfig) -> AdapterJob:
    maps = np.arange(2 * 4 * 4, dtype=np.float32).reshape(2, 1, 4, 4)
    return AdapterJob(task="pos", spec=InputSpec(("order1",)), adapter=adapter, training=training,
                      vocab=("NOUN", "VERB"), causal=False, train_raw=[maps[0]], train_targets=[{"labels": np.zeros(4, np.int64)}],
                      dev_raw=[maps[1]], dev_targets=[{"labels": np.ones(4, np.int64)}], dev_items=[])


def test_equal_settings_give_equal_keys_and_a_changed_rate_another(monkeypatch):
    smoke = settings("syntax", "smoke", device="cpu")
    key = _job(smoke.adapter, smoke.training).key()
    again = settings("syntax", "smoke", device="cpu")  # made anew: equal, so the same key
    assert _job(again.adapter, again.training).key() == key
    rebuilt = settings("syntax", "smoke", device="cpu", training={"lr": smoke.training.lr}, adapter={})
    assert _job(rebuilt.adapter, rebuilt.training).key() == key  # a no-op override changes nothing
    monkeypatch.setenv("OLACORE_SETTINGS_OVERRIDES", '{"syntax": {"training": {"lr": 0.001}}}')
    faster = settings("syntax", "smoke", device="cpu")
    assert faster.training.lr == 0.001 and _job(faster.adapter, faster.training).key() != key
    assert _job(dataclasses.replace(smoke.adapter, dim=8), smoke.training).key() != key
