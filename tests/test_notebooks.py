"""Every chapter executes at profile=smoke, a failing notebook fails the run by name, and the
book builds strictly (warnings are errors) from the executed chapters."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import subprocess
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


@pytest.fixture(scope="module")
def book_copy(tmp_path_factory):
    """A copy of the book sources; the smoke-executed chapters land in its book/generated."""
    root = tmp_path_factory.mktemp("book")
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(ROOT / "book", root / "book", ignore=shutil.ignore_patterns("generated", "_build"))
    return root


@pytest.mark.slow
@pytest.mark.parametrize("source", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_executes_at_smoke_profile(source, book_copy):
    out = _runner().execute(source, book_copy / "book" / "generated", {"profile": "smoke"})
    assert out.exists()
    # its results (olacore.results, saved in $OLACORE_RESULTS = <out>/results): at least one record,
    # every number finite, so a chapter that silently made an empty or NaN table fails here
    saved = out.parent / "results" / f"{source.stem}.json"
    assert saved.is_file(), f"{source.stem} saved no results"
    records = json.loads(saved.read_text())["records"]
    assert records, f"{source.stem} recorded nothing"
    for record in records:
        numbers = [record["value"]] + [record[k] for k in ("paper", "chance") if record.get(k) is not None]
        assert all(isinstance(x, (int, float)) and math.isfinite(x) for x in numbers), record


@pytest.mark.slow
def test_book_builds_strictly_from_the_executed_chapters(book_copy):
    missing = [s.stem for s in NOTEBOOKS if not (book_copy / "book" / "generated" / f"{s.stem}.ipynb").exists()]
    assert not missing, f"chapters that did not execute: {missing}"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(book_copy), "--warningiserror", "--nitpick", "--keep-going"],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert (book_copy / "_build" / "html" / "book" / "intro.html").exists()


def test_toc_lists_every_notebook():
    toc = (ROOT / "_toc.yml").read_text()
    for source in NOTEBOOKS:
        assert f"book/generated/{source.stem}" in toc, f"{source.name} is not in _toc.yml"


def test_a_failing_notebook_fails_the_run_and_is_named(tmp_path, capsys):
    broken = tmp_path / "99_broken.py"
    broken.write_text('# %% tags=["parameters"]\nprofile = "default"\n\n# %%\nraise RuntimeError("boom")\n')
    status = _runner().main([str(broken), "--profile", "smoke", "--out", str(tmp_path / "out")])
    assert status == 1
    assert "NOTEBOOK FAILED: " + str(broken) in capsys.readouterr().err


def test_profile_is_set_only_by_its_option(tmp_path, capsys):
    with pytest.raises(SystemExit):
        _runner().main(["--profile", "smoke", "-p", "profile", "paper", "--out", str(tmp_path)])
    assert "--profile" in capsys.readouterr().err
