"""Run profiles (olacore.profiles): every chapter x profile validates; bad overrides are refused."""

from __future__ import annotations

import dataclasses
import json
import pickle

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


@pytest.mark.parametrize("chapter, override, names", [
    # an unknown field: its name, and the field meant among the known ones
    ("quantitative", {"num_textz": 5}, ["QuantitativeSettings.num_textz", "num_texts"]),
    ("quantitative", {"num_texts": 0}, ["QuantitativeSettings.num_texts", "0"]),
    ("quantitative", {"size": -50}, ["QuantitativeSettings.size", "-50"]),
    ("quantitative", {"proxy_num_texts": 9}, ["proxy_num_texts", "9", "num_texts", "8"]),
    ("quantitative", {"seeds": []}, ["QuantitativeSettings.seeds"]),
    ("quantitative", {"causal": []}, ["QuantitativeSettings.causal"]),
    ("quantitative", {"official_eval_every": 0}, ["QuantitativeSettings.official_eval_every"]),
    ("quantitative", {"official_eval_every": 11}, ["official_eval_every", "11", "10"]),
    ("quantitative", {"official_quirk_rows": ["frozen_batchnorm", "best_weights"]},
     ["QuantitativeSettings.official_quirk_rows[1]", "best_weights", "frozen_batchnorm"]),
    ("qualitative", {"encoders": ()}, ["QualitativeSettings.encoders"]),
    ("controls", {"encoder_noise": [0.1, -0.3]}, ["ControlsSettings.encoder_noise[1]", "-0.3"]),
    ("controls", {"seed": -1}, ["ControlsSettings.seed", "-1"]),
    ("derivation", {"bench_size": -2}, ["DerivationSettings.bench_size", "-2"]),
])
def test_bad_overrides_are_refused_on_one_line_naming_the_field(chapter, override, names):
    with pytest.raises(ValueError) as refused:
        settings(chapter, "smoke", **override)
    message = str(refused.value)
    assert all(name in message for name in names) and "\n" not in message, message


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


@pytest.mark.parametrize("override, named", [
    ({"syntax": {"adapter": 16}}, "SyntaxSettings.adapter"),  # a nested settings object given a number
    ({"syntax": {"training": {"augment": True}}}, "SyntaxSettings.training.augment"),  # None now: was stored raw
    ({"syntax": {"training": {"augment": {"sink_pp": 0.5}}}}, "SyntaxSettings.training.augment.sink_pp"),
    ({"syntax": {"training": {"device": "gpu"}}}, "SyntaxSettings.training.device"),
    ({"syntax": {"training": {"lr": "0.01"}}}, "SyntaxSettings.training.lr"),
    ({"syntax": {"training": {"lr": -0.01}}}, "SyntaxSettings.training.lr"),
    ({"syntax": {"training": {"epochs": True}}}, "SyntaxSettings.training.epochs"),  # a bool is no int here
    ({"syntax": {"adapter": {"heads": 3}}}, "SyntaxSettings.adapter"),  # 3 heads do not divide 16 channels
    ({"transfer": {"syntax": {"training": {"lr": "0.01"}}}}, "TransferSettings.syntax.training.lr"),
    ({"transfer": {"re": None}}, "TransferSettings.re"),
    ({"transfer": {"ner": {"o_weight": 0}}}, "TransferSettings.ner.o_weight"),
    ({"quantitative": {"proxy": {"iterations": 0}}}, "QuantitativeSettings.proxy"),
])
def test_wrongly_typed_overrides_are_refused_naming_the_field_path(override, named, monkeypatch):
    chapter = next(iter(override))
    monkeypatch.setenv("OLACORE_SETTINGS_OVERRIDES", json.dumps(override))
    with pytest.raises(ValueError) as refused:
        settings(chapter, "smoke")
    message = str(refused.value)
    assert named in message and "OLACORE_SETTINGS_OVERRIDES" in message and "\n" not in message, message
    # a notebook's own parameter takes the same check (None there leaves a field as it is)
    monkeypatch.delenv("OLACORE_SETTINGS_OVERRIDES")
    if None not in override[chapter].values():
        with pytest.raises(ValueError) as refused:
            settings(chapter, "smoke", **override[chapter])
        assert named in str(refused.value) and "\n" not in str(refused.value)


def test_valid_nested_overrides_build_what_they_name(monkeypatch):
    smoke = settings("syntax", "smoke")
    assert smoke.training.augment is None
    monkeypatch.setenv("OLACORE_SETTINGS_OVERRIDES", json.dumps(
        {"syntax": {"adapter": {"dim": 8}, "training": {"lr": 1, "device": "cuda:0", "augment": {"sink_p": 0.5}}}}))
    found = settings("syntax", "smoke")
    assert found.adapter == dataclasses.replace(smoke.adapter, dim=8)
    assert found.training.augment == Augmentation(sink_p=0.5)  # built from the class's defaults
    assert found.training.device == "cuda:0"  # a device name; whether this machine has it is checked when training
    assert found.training.lr == 1 and isinstance(found.training.lr, float)  # a number field holds a float
    assert found.training == dataclasses.replace(smoke.training, lr=1, device="cuda:0", augment=Augmentation(sink_p=0.5))
    monkeypatch.delenv("OLACORE_SETTINGS_OVERRIDES")  # a notebook's own parameter builds the same way
    assert settings("syntax", "smoke", training={"augment": {}}).training.augment == Augmentation()
    # a dict over a nested object keeps the fields it does not name (the profile's, not the class's defaults)
    assert settings("syntax", "smoke", adapter={"heads": 1}).adapter == dataclasses.replace(smoke.adapter, heads=1)


def test_the_device_is_checked_and_reaches_the_adapters_training():
    assert settings("syntax", "smoke", device="cpu").training.device == "cpu"
    assert settings("transfer", "smoke", device="cpu").syntax.training.device == "cpu"
    with pytest.raises(ValueError) as refused:
        settings("syntax", "smoke", device="gpu")
    assert "SyntaxSettings.training.device" in str(refused.value) and "gpu" in str(refused.value)
    with pytest.raises(ValueError, match="quantitative"):  # a chapter that trains no adapter
        settings("quantitative", "smoke", device="cpu")


def test_a_replaced_field_is_checked_again_and_equal_settings_are_equal_and_hashable():
    smoke = settings("syntax", "smoke")
    assert settings("syntax", "smoke") == smoke and hash(settings("syntax", "smoke")) == hash(smoke)
    assert pickle.loads(pickle.dumps(smoke)) == smoke  # jobs carry them to worker processes
    with pytest.raises(ValueError) as refused:
        dataclasses.replace(smoke, num_train=0)
    assert "SyntaxSettings.num_train" in str(refused.value)
