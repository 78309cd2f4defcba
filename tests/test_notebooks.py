"""Every chapter executes at profile=smoke, and a failing notebook fails the run by name."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.py"))


def _runner():
    spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("source", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_executes_at_smoke_profile(source, tmp_path):
    out = _runner().execute(source, tmp_path, {"profile": "smoke"})
    assert out.exists()


def test_toc_lists_every_notebook():
    toc = (ROOT / "_toc.yml").read_text()
    for source in NOTEBOOKS:
        assert f"book/generated/{source.stem}" in toc, f"{source.name} is not in _toc.yml"


def test_a_failing_notebook_fails_the_run_and_is_named(tmp_path, capsys):
    broken = tmp_path / "99_broken.py"
    broken.write_text('# %% tags=["parameters"]\nprofile = "default"\n\n# %%\nraise RuntimeError("boom")\n')
    status = _runner().main([str(broken), "--profile", "smoke", "--out", str(tmp_path / "out")])
    assert status == 1
    assert "NOTEBOOK FAILED" in capsys.readouterr().err
