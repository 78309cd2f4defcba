"""Chapter results (olacore.results): undefined values and empty chapters refused, atomic save, round trip."""

from __future__ import annotations

import json

import pytest

from olacore.results import ChapterResults, Record, load_results, results_dir


def _results() -> ChapterResults:
    results = ChapterResults("03_quantitative", "smoke")
    results.add("retrieval/causal/order1/hits@1", "Hits@1, first order, causal models", 87.5, paper=83.6,
                protocol="official", verdict="holds", chance=12.5, note="8 texts", anchor="tab-retrieval")
    results.add("proxy/time", "proxy training time", 12.0, unit="s")
    return results


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), "nan"])
def test_undefined_values_are_refused(value):
    results = ChapterResults("x", "smoke")
    with pytest.raises(ValueError, match="empty or undefined"):
        results.add("k", "a claim", value)
    assert results.records == []


def test_a_key_is_recorded_once():
    results = _results()
    with pytest.raises(ValueError, match="recorded twice"):
        results.add("proxy/time", "again", 1.0)


def test_an_empty_chapter_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no result recorded"):
        ChapterResults("05_controls", "smoke").save(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_save_and_load_round_trip(tmp_path):
    results = _results()
    path = results.save(tmp_path)
    assert path == tmp_path / "03_quantitative.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["03_quantitative.json"]  # no temporary file left
    loaded = load_results("03_quantitative", tmp_path)
    assert loaded == results
    assert isinstance(loaded.records[0], Record) and loaded.records[0].paper == 83.6
    payload = json.loads(path.read_text())
    assert payload["chapter"] == "03_quantitative" and payload["profile"] == "smoke"


def test_a_failed_save_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    _results().save(tmp_path)
    before = (tmp_path / "03_quantitative.json").read_text()
    broken = _results()
    broken.add("bad", "a record whose paper value is undefined", 1.0, paper=float("nan"))
    with pytest.raises(ValueError):
        broken.save(tmp_path)
    assert (tmp_path / "03_quantitative.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["03_quantitative.json"]


def test_the_folder_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("OLACORE_RESULTS", str(tmp_path / "results"))
    assert results_dir() == tmp_path / "results"
    path = _results().save()
    assert path.parent == tmp_path / "results"
    assert load_results("03_quantitative") == _results()
    with pytest.raises(FileNotFoundError, match="06_syntax"):
        load_results("06_syntax")


def test_files_written_before_the_report_fields_still_load(tmp_path):
    """Records saved without ``paper_keys`` / ``subject`` (older chapters) load with their defaults."""
    payload = {"chapter": "05_controls", "profile": "smoke",
               "records": [{"key": "k", "claim": "c", "value": 1.0, "unit": "%", "paper": None, "protocol": "",
                            "verdict": "", "chance": None, "note": "", "anchor": ""}]}
    (tmp_path / "05_controls.json").write_text(json.dumps(payload))
    record = load_results("05_controls", tmp_path).records[0]
    assert record.paper_keys == [] and record.subject == ""
    payload["records"][0]["from_the_future"] = 1
    (tmp_path / "05_controls.json").write_text(json.dumps(payload))
    assert load_results("05_controls", tmp_path).records[0].value == 1.0


def test_a_kept_table_round_trips_and_older_files_have_none(tmp_path):
    results = _results()
    rows = [{"kind": "causal", "source": "a", "target": "b", "hits@1": 0.1 + 0.2, "n": 3, "ok": True}]
    results.add_table("pairs", rows)
    results.save(tmp_path)
    loaded = load_results("03_quantitative", tmp_path)
    assert loaded.tables == {"pairs": rows} and loaded.tables["pairs"][0]["hits@1"] == 0.1 + 0.2  # the same bits
    _results().save(tmp_path)
    assert load_results("03_quantitative", tmp_path).tables == {}
    assert "tables" not in json.loads((tmp_path / "03_quantitative.json").read_text())  # a chapter keeping none


def test_a_table_kept_twice_or_undefined_is_refused():
    results = _results()
    results.add_table("pairs", [])
    with pytest.raises(ValueError, match="pairs.*twice"):
        results.add_table("pairs", [])
    with pytest.raises(ValueError, match="not finite"):
        results.add_table("other", [{"hits@1": float("nan")}])
    assert list(results.tables) == ["pairs"]


@pytest.mark.parametrize("text", ["{", "[]", '{"chapter": "05_controls"}', '{"chapter": "05_controls", "profile": "smoke", '
                                  '"records": [{"key": "k"}]}', '{"chapter": "05_controls", "profile": "smoke", '
                                  '"records": [], "tables": []}'])
def test_a_malformed_file_is_named_in_one_line(tmp_path, text):
    (tmp_path / "05_controls.json").write_text(text)
    with pytest.raises(ValueError, match="05_controls.json is not a chapter's saved results") as info:
        load_results("05_controls", tmp_path)
    assert "\n" not in str(info.value) and "--force notebooks/05_controls.py" in str(info.value)
