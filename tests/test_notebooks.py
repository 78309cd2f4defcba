"""Every chapter executes at profile=smoke, a failing notebook fails the run by name, and the
book builds strictly (warnings are errors) from the executed chapters."""

from __future__ import annotations

import json
import math

import pytest
from conftest import NOTEBOOKS, ROOT, execute_smoke_chapter, load_runner


@pytest.mark.slow
@pytest.mark.parametrize("source", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_executes_at_smoke_profile(source, book_copy):
    execute_smoke_chapter(book_copy, source)
    out = book_copy / "book" / "generated" / f"{source.stem}.ipynb"
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
def test_book_builds_strictly_from_the_executed_chapters(smoke_book):
    assert smoke_book.returncode == 0, smoke_book.log
    assert (smoke_book.html / "book" / "intro.html").exists()


def test_toc_lists_every_notebook():
    toc = (ROOT / "_toc.yml").read_text()
    for source in NOTEBOOKS:
        assert f"book/generated/{source.stem}" in toc, f"{source.name} is not in _toc.yml"


def test_a_failing_notebook_fails_the_run_and_is_named(tmp_path, capsys):
    broken = tmp_path / "99_broken.py"
    broken.write_text('# %% tags=["parameters"]\nprofile = "default"\n\n# %%\nraise RuntimeError("boom")\n')
    status = load_runner().main([str(broken), "--profile", "smoke", "--out", str(tmp_path / "out")])
    assert status == 1
    assert "NOTEBOOK FAILED: " + str(broken) in capsys.readouterr().err


def test_profile_is_set_only_by_its_option(tmp_path, capsys):
    with pytest.raises(SystemExit):
        load_runner().main(["--profile", "smoke", "-p", "profile", "paper", "--out", str(tmp_path)])
    assert "--profile" in capsys.readouterr().err
