"""Run profiles (olacore.profiles): every chapter x profile validates; bad overrides are refused."""

from __future__ import annotations

import dataclasses
import json

import pytest

from olacore.augment import Augmentation
from olacore.profiles import PROFILES, _PROFILES, settings

CHAPTERS = sorted(_PROFILES)
CASES = [(chapter, profile) for chapter in CHAPTERS for profile in PROFILES]


@pytest.mark.parametrize("chapter, profile", CASES)
def test_every_chapter_and_profile_validates(chapter, profile):
    found = settings(chapter, profile)
    # made again from its own fields, it passes validation (a frozen, checked dataclass)
    again = type(found)(**{f.name: getattr(found, f.name) for f in dataclasses.fields(found)})
    assert again == found
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(found, dataclasses.fields(found)[0].name, None)
    for f in dataclasses.fields(found):
        value = getattr(found, f.name)
        assert not isinstance(value, list), f"{chapter}/{profile}.{f.name} is a list: settings must be hashable"


def test_sizes_grow_from_smoke_to_paper():
    for chapter in ("qualitative", "quantitative"):
        smoke, default, paper = (settings(chapter, p) for p in PROFILES)
        assert smoke.num_texts < default.num_texts < paper.num_texts


def test_overrides_apply_and_lists_become_tuples():
    found = settings("quantitative", "smoke", seeds=[3, 4], num_texts=10, size=None)
    assert found.seeds == (3, 4) and found.num_texts == 10
    assert found.size == settings("quantitative", "smoke").size  # None leaves a field as it is


@pytest.mark.parametrize("chapter, override, message", [
    ("quantitative", {"num_textz": 5}, "no field num_textz; its fields: .*num_texts"),
    ("quantitative", {"num_texts": 0}, r"QuantitativeSettings.num_texts must be positive; got 0"),
    ("quantitative", {"size": -50}, "size must be positive"),
    ("quantitative", {"proxy_num_texts": 9}, r"proxy_num_texts \(9\) cannot exceed num_texts \(8\)"),
    ("quantitative", {"seeds": []}, "seeds must not be empty"),
    ("quantitative", {"causal": []}, "causal must not be empty"),
    ("quantitative", {"official_eval_every": 0}, "official_eval_every must be positive"),
    ("quantitative", {"official_eval_every": 11}, r"official_eval_every \(11\) exceeds the proxy's 10 steps"),
    ("quantitative", {"official_quirk_rows": ["frozen_batchnorm", "best_weights"]}, "official_quirk_rows.*best_weights"),
    ("qualitative", {"encoders": ()}, "encoders must not be empty"),
    ("controls", {"encoder_noise": [0.1, -0.3]}, "negative value"),
    ("controls", {"seed": -1}, "seed must be >= 0"),
    ("derivation", {"bench_size": -2}, "bench_size must be positive"),
])
def test_bad_overrides_are_refused(chapter, override, message):
    with pytest.raises(ValueError, match=message):
        settings(chapter, "smoke", **override)


def test_seed_zero_is_allowed_and_unknown_names_list_the_known_ones():
    assert settings("controls", "smoke", seed=0).seed == 0
    with pytest.raises(ValueError, match="smoke, default, paper"):
        settings("quantitative", "fast")
    with pytest.raises(ValueError, match="controls, derivation, qualitative, quantitative"):
        settings("retrieval", "smoke")


@pytest.mark.parametrize("field, names", [
    ("size_models", ["qwen2.5-0.5b", "qwen2.5-15b"]),
    ("extra_encoders", ["embedding-gemma"]),
])
def test_extra_models_of_the_quantitative_chapter_must_be_zoo_models(field, names, monkeypatch):
    unknown = names[-1]
    with pytest.raises(ValueError, match=unknown) as refused:
        settings("quantitative", "smoke", **{field: names})
    assert field in str(refused.value)
    # the same check at the environment's boundary
    monkeypatch.setenv("OLACORE_SETTINGS_OVERRIDES", f'{{"quantitative": {{"{field}": {list(names)!r}}}}}'.replace("'", '"'))
    with pytest.raises(ValueError, match=unknown):
        settings("quantitative", "smoke")


def test_extra_models_of_the_quantitative_chapter_run_at_default_only():
    smoke, default, paper = (settings("quantitative", p) for p in PROFILES)
    assert smoke.size_models == paper.size_models == () and smoke.extra_encoders == paper.extra_encoders == ()
    assert default.size_models[0] in default.causal and default.size_models[1] not in default.causal
    assert not set(default.extra_encoders) & set(default.encoders)
    with pytest.raises(ValueError, match="encoder"):  # a causal model is no encoder
        settings("quantitative", "smoke", extra_encoders=["qwen2.5-1.5b"])
    with pytest.raises(ValueError, match="size_models"):  # the larger model must be outside the grid
        settings("quantitative", "smoke", size_models=["qwen2.5-1.5b", "qwen2.5-0.5b"])


def test_the_size_pair_is_one_family_and_a_list_is_a_list(monkeypatch):
    with pytest.raises(ValueError, match="famil"):  # Llama's SmolLM2 against a Qwen is no size step
        settings("quantitative", "default", size_models=["smollm2-135m", "qwen2.5-1.5b"])
    # a bare string would be read as a list of its characters
    monkeypatch.setenv("OLACORE_SETTINGS_OVERRIDES", '{"syntax": {"extra_models": "embeddinggemma-300m"}}')
    with pytest.raises(ValueError, match="extra_models") as refused:
        settings("syntax", "smoke")
    assert "list" in str(refused.value)
    monkeypatch.setenv("OLACORE_SETTINGS_OVERRIDES", '{"quantitative": {"size_models": null}}')
    with pytest.raises(ValueError, match="size_models"):
        settings("quantitative", "smoke")


@pytest.mark.parametrize("override, error, named", [
    ({"syntax": {"adapter": 16}}, TypeError, "adapter"),  # a nested settings object given a number
    ({"syntax": {"training": {"augment": True}}}, TypeError, "augment"),  # None now: was stored raw
    ({"syntax": {"training": {"augment": {"sink_pp": 0.5}}}}, ValueError, "sink_pp"),
    ({"syntax": {"training": {"device": "gpu"}}}, ValueError, "device"),
    ({"syntax": {"training": {"lr": "0.01"}}}, TypeError, "lr"),
    ({"syntax": {"training": {"epochs": True}}}, TypeError, "epochs"),  # a bool is no int here
    ({"transfer": {"syntax": {"training": {"lr": "0.01"}}}}, TypeError, "syntax.training.lr"),
    ({"transfer": {"re": None}}, TypeError, "re"),
])
def test_wrongly_typed_overrides_are_refused_naming_the_field(override, error, named, monkeypatch):
    chapter = next(iter(override))
    monkeypatch.setenv("OLACORE_SETTINGS_OVERRIDES", json.dumps(override))
    with pytest.raises(error) as refused:
        settings(chapter, "smoke")
    assert named in str(refused.value) and "\n" not in str(refused.value)
    # a notebook's own parameter takes the same check (None there leaves a field as it is)
    monkeypatch.delenv("OLACORE_SETTINGS_OVERRIDES")
    if None not in override[chapter].values():
        with pytest.raises(error, match=named.split(".")[-1]):
            settings(chapter, "smoke", **override[chapter])


def test_valid_nested_overrides_build_what_they_name(monkeypatch):
    smoke = settings("syntax", "smoke")
    assert smoke.training.augment is None
    monkeypatch.setenv("OLACORE_SETTINGS_OVERRIDES", json.dumps(
        {"syntax": {"adapter": {"dim": 8}, "training": {"lr": 1, "device": "cuda:0", "augment": {"sink_p": 0.5}}}}))
    found = settings("syntax", "smoke")
    assert found.adapter == dataclasses.replace(smoke.adapter, dim=8)
    assert found.training.augment == Augmentation(sink_p=0.5)  # built from the class's defaults
    assert found.training.device == "cuda:0"  # a device name; whether this machine has it is checked when training
    assert found.training.lr == 1 and isinstance(found.training.lr, int)  # as given: it keys cached runs
    assert found.training == dataclasses.replace(smoke.training, lr=1, device="cuda:0", augment=Augmentation(sink_p=0.5))
    monkeypatch.delenv("OLACORE_SETTINGS_OVERRIDES")  # a notebook's own parameter builds the same way
    assert settings("syntax", "smoke", training={"augment": {}}).training.augment == Augmentation()
