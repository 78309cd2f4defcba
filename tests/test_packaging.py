"""environment.yml and pyproject.toml list the same dependencies; settings give clear errors."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_lists_the_packaging_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = set(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared |= set(extra)
    text = (ROOT / "environment.yml").read_text()
    pip_block = text.split("- pip:", 1)[1]
    listed = {line.strip()[2:].strip() for line in pip_block.splitlines() if line.strip().startswith("- ")}
    listed.discard("-e .")
    assert {_name(r): r for r in listed} == {_name(r): r for r in declared}


def test_missing_data_file_names_the_setting(monkeypatch, tmp_path):
    from olacore.settings import data_file

    monkeypatch.setenv("OLACORE_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="OLACORE_DATA") as info:
        data_file("ud_english_ewt", "en_ewt-ud-train.conllu")
    assert "en_ewt-ud-train.conllu" in str(info.value)
