"""The notebook runner: `-p` values checked against declared types before any cell runs, the
skip logic of the manifest, and the executed notebook prepared for reading."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import NOTEBOOKS, ROOT, load_runner

sys.path.insert(0, str(ROOT / "scripts"))
import notebook_manifest  # noqa: E402
from notebook_parameters import ParameterError, check_parameters, check_value, declared_parameters  # noqa: E402

CELL = '''profile = "default"  # smoke, default or paper
seeds: list[int] | None = None  # None: the profile's seeds
device: str | None = None
rate = 0.5
steps = 10
verbose = False
names = ["a", "b"]
legacy = None  # no type declared
'''


@pytest.fixture(scope="module")
def declared():
    return declared_parameters(CELL)


def test_declared_types_come_from_annotations_or_defaults(declared):
    kinds = {name: str(item.kind) for name, item in declared.items()}
    assert kinds == {"profile": "str", "seeds": "list[int] | None", "device": "str | None", "rate": "float",
                     "steps": "int", "verbose": "bool", "names": "list[str]", "legacy": "None"}
    assert declared["seeds"].help == "None: the profile's seeds"
    assert declared["rate"].default == 0.5


@pytest.mark.parametrize("name, text, expected", [
    ("seeds", "0", [0]),                       # one value where a list is expected
    ("seeds", "[0, 1, 2]", [0, 1, 2]),
    ("seeds", "(3, 4)", [3, 4]),
    ("seeds", "None", None),
    ("device", "cpu", "cpu"),                  # free text for a text parameter
    ("device", "None", None),
    ("device", "'cpu'", "cpu"),               # quotes are the literal's (cuda:0 needs a GPU: checked)
    ("rate", "1", 1.0),
    ("rate", "2.5e-3", 0.0025),
    ("steps", "7", 7),
    ("verbose", "True", True),
    ("verbose", "false", False),
    ("names", "c", ["c"]),
    ("names", "['c', 'd']", ["c", "d"]),
    ("profile", "123", "123"),
])
def test_values_are_coerced_where_unambiguous(declared, name, text, expected):
    value = check_value(declared[name], text, "nb.py")
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("name, text", [
    ("seeds", "zero"),          # does not parse: never silently a string
    ("seeds", "0.5"),
    ("seeds", "[0, 'a']"),
    ("seeds", "True"),
    ("steps", "3.5"),
    ("steps", "many"),
    ("steps", "True"),
    ("rate", "fast"),
    ("verbose", "1"),
    ("verbose", "yes"),
    ("device", "[1, 2]"),
])
def test_values_of_the_wrong_form_are_refused_in_one_line(declared, name, text):
    with pytest.raises(ParameterError) as info:
        check_value(declared[name], text, "nb.py")
    message = str(info.value)
    assert "\n" not in message and f"-p {name}" in message and str(declared[name].kind) in message
    assert "for example" in message


def test_a_parameter_without_declared_type_is_refused(declared):
    with pytest.raises(ParameterError, match="annotate it"):
        check_value(declared["legacy"], "3", "nb.py")


def test_unknown_names_are_refused_listing_the_known(declared):
    with pytest.raises(ParameterError, match=r"sedes.*profile, seeds"):
        check_parameters(declared, {"sedes": "0"}, "nb.py")


def test_unsupported_annotations_are_named():
    with pytest.raises(ParameterError, match="unsupported parameter type"):
        declared_parameters("options: dict[str, int] = {}\n")


def test_every_chapter_declares_a_type_for_every_parameter():
    runner = load_runner()
    for source in NOTEBOOKS:
        declared_here = runner.declared(source)
        assert "profile" in declared_here, source.name
        untyped = [name for name, item in declared_here.items() if item.kind is None]
        assert not untyped, f"{source.name}: annotate {untyped} in the parameters cell"


def test_proxy_chapter_takes_one_seed_as_a_list_and_refuses_text(capsys):
    runner = load_runner()
    chapter = ROOT / "notebooks" / "04_proxy.py"
    assert runner.resolve_parameters(chapter, "smoke", {"seeds": "0"}) == {"profile": "smoke", "seeds": [0]}
    status = runner.main(["--profile", "smoke", "-p", "seeds", "zero", str(chapter), "--out", "/nonexistent/out"])
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("PARAMETER ERROR: -p seeds 'zero': expected list[int] | None") and "\n" not in err


# ---- the runner on a tiny notebook: refusal before any cell, skip logic, prepared for reading ----

TINY = '''# %% [markdown]
# # A tiny chapter

# %% tags=["parameters"]
profile = "default"  # smoke, default or paper
seeds: list[int] | None = None  # None: one seed

# %%
import os
from pathlib import Path

Path(os.environ["OLACORE_TEST_MARKER"]).write_text(repr(seeds))
'''


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    source = tmp_path / "07_tiny.py"
    source.write_text(TINY)
    marker = tmp_path / "ran.txt"
    monkeypatch.setenv("OLACORE_TEST_MARKER", str(marker))
    return source, tmp_path / "out", marker


def test_a_refused_value_stops_the_run_before_any_cell(tiny, capsys):
    source, out, marker = tiny
    status = load_runner().main([str(source), "--profile", "smoke", "-p", "seeds", "0.5", "--out", str(out)])
    assert status == 2 and not marker.exists()
    assert "PARAMETER ERROR: -p seeds '0.5'" in capsys.readouterr().err


@pytest.mark.slow
def test_skip_logic_reexecutes_only_what_changed(tiny, monkeypatch, capsys):
    runner = load_runner()
    source, out, marker = tiny
    shared = notebook_manifest.shared_fingerprint(ROOT)

    def run(parameters, **kwargs):
        marker.unlink(missing_ok=True)
        row = runner.run_chapter(source, out, parameters, shared=kwargs.pop("shared", shared), **kwargs)
        assert (row["status"] == "executed") == marker.exists()
        return row

    first = run({"profile": "smoke", "seeds": [0]})
    assert first["status"] == "executed" and marker.read_text() == "[0]"
    assert run({"profile": "smoke", "seeds": [0]})["status"] == "skipped"           # nothing changed
    assert run({"profile": "smoke", "seeds": [1]})["reason"] == "parameters changed"
    assert run({"profile": "smoke", "seeds": [1]})["status"] == "skipped"
    source.write_text(TINY + "\n# one more comment\n")
    assert run({"profile": "smoke", "seeds": [1]})["reason"] == "source changed"
    assert run({"profile": "smoke", "seeds": [1]}, shared={**shared, "package": "0" * 64})["reason"] == "package changed"
    assert run({"profile": "smoke", "seeds": [1]}, shared={**shared, "package": "0" * 64})["status"] == "skipped"
    notebook = out / "07_tiny.ipynb"
    notebook.write_text(notebook.read_text().replace("A tiny chapter", "An edited chapter"))
    assert run({"profile": "smoke", "seeds": [1]}, shared={**shared, "package": "0" * 64})["reason"] == "07_tiny.ipynb modified"
    assert run({"profile": "smoke", "seeds": [1]}, shared={**shared, "package": "0" * 64}, force=True)["reason"] == "forced"
    manifest = json.loads(notebook_manifest.manifest_path(out).read_text())
    assert set(manifest["chapters"]["07_tiny"]["fingerprint"]) == {"source", "parameters", "package", "runner", "data", "environment"}
    assert not list(out.parent.glob("*.tmp")), "a temporary manifest was left behind"

    # the executed notebook: under the title the previous run's time (a record existed), the
    # download note; parameters shown once, both code cells kept but removed from the page
    cells = nbformat.read(notebook, as_version=4).cells
    tags = [c.metadata.get("tags", []) for c in cells]
    assert tags[1] == ["olacore-running-time"] and "profile `smoke`" in cells[1].source
    assert tags[2] == ["olacore-download"] and "{download}`07_tiny.py <07_tiny.py>`" in cells[2].source
    assert not [c for c in cells if "olacore-peak-memory" in c.metadata.get("tags", [])]
    summary = [c for c in cells if "olacore-parameters" in c.metadata.get("tags", [])]
    assert len(summary) == 1 and "| `seeds` | `[1]` (set for this run) | None: one seed |" in summary[0].source
    for tag in ("parameters", "injected-parameters"):
        assert ["remove-cell"] == [t for c in cells if tag in c.metadata.get("tags", []) for t in c.metadata["tags"] if t == "remove-cell"]
    assert (out / "07_tiny.py").read_text() == source.read_text()


MEMORY = '''# %% [markdown]
# # Memory

# %% tags=["parameters"]
profile = "default"  # smoke, default or paper
megabytes: int = 300  # held by the kernel
worker_megabytes: int = 0  # held by a worker for 2.5 s, while the kernel holds its own

# %%
import subprocess
import sys

block = b"x" * (megabytes * 1_000_000)
if worker_megabytes:
    subprocess.run([sys.executable, "-c", f"import time; block = b'x' * {worker_megabytes * 1_000_000}; time.sleep(2.5)"],
                   check=True)
'''


@pytest.mark.slow
def test_peak_memory_is_recorded_for_the_kernel_and_its_workers(tmp_path):
    """The largest resident set of one process (a block held by the kernel, or by a worker that
    ended) and the largest sum over the kernel and its workers at once."""
    runner = load_runner()
    source, out = tmp_path / "07_memory.py", tmp_path / "out"
    source.write_text(MEMORY)
    runs = {}
    for worker in (0, 450):
        row = runner.run_chapter(source, out, {"profile": "smoke", "megabytes": 300, "worker_megabytes": worker})
        entry = notebook_manifest.read_manifest(out)["chapters"]["07_memory"]
        assert (entry["peak_rss_bytes"], entry["peak_total_bytes"]) == (row["peak_rss_bytes"], row["peak_total_bytes"])
        runs[worker] = row
    assert 300e6 <= runs[0]["peak_rss_bytes"] < 450e6 <= runs[450]["peak_rss_bytes"]
    assert runs[450]["peak_rss_bytes"] < 700e6  # one process's, not a sum and not the runner's memory
    assert runs[0]["peak_total_bytes"] >= runs[0]["peak_rss_bytes"]
    assert runs[450]["peak_total_bytes"] >= 750e6  # the kernel's 300 MB and the worker's 450 MB at once
    cells = nbformat.read(out / "07_memory.ipynb", as_version=4).cells
    assert not [c for c in cells if "olacore-peak-memory" in c.metadata.get("tags", [])]
    assert [c.source for c in cells if c.cell_type == "code"][-1].endswith("check=True)")  # the chapter's last cell


def _entry(seconds, cpu, peak, total=None, profile="default", when="2026-12-02T10:00:00+00:00"):
    return {"fingerprint": {}, "outputs": {}, "parameters": {"profile": profile}, "seconds": seconds,
            "cpu_seconds": cpu, "peak_rss_bytes": peak, "peak_total_bytes": total, "executed_at": when,
            "machine": {"cpu": "Test CPU 9000", "cores": 2, "memory_bytes": 24e9, "system": "Linux x86_64",
                        "python": "3.11.7"}}


def _table_rows(text):
    return {line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| ") and not line.startswith("| page")}


def test_compute_table_is_generated_from_the_records(tmp_path):
    runner = load_runner()
    out = tmp_path / "generated"
    runner.write_compute_table(out)
    empty = (out / "compute_table.md").read_text()
    assert "|" not in empty and len(empty.strip().splitlines()) == 1  # no run yet: one line, no table
    notebook_manifest.update_manifest(out, "01_a", _entry(120.0, 180.0, 2.5e9, 3.2e9, when="2026-12-02T10:00:00+00:00"))
    notebook_manifest.update_manifest(out, "a1_b", _entry(40.0, 20.0, 0.5e9, profile="smoke",
                                                          when="2026-12-02T11:30:00+00:00"))
    notebook_manifest.update_manifest(out, "02_c", None)  # a chapter whose run failed: no record
    (out / "phases").mkdir(parents=True)
    (out / "phases" / "01_a.json").write_text(json.dumps([
        {"phase": "load", "wall": 10.0, "cpu": 5.0}, {"phase": "train", "wall": 60.0, "cpu": 110.0},
        {"phase": "maps", "wall": 30.0, "cpu": 50.0}, {"phase": "total", "wall": 115.0, "cpu": 170.0}]))
    runner.write_compute_table(out)
    text = (out / "compute_table.md").read_text()
    rows = _table_rows(text)
    assert list(rows) == ["01_a", "a1_b", "all"]  # main chapters first, then appendices, then the sum
    page, wall, cpu, cores, peak, phases = [rows["01_a"][i] for i in range(6)]
    assert (page, wall, cpu, float(cores), peak) == ("default", "120", "180", 180 / 120, "3.2 / 2.5")
    assert phases.index("train") < phases.index("maps") and "load" not in phases  # the two with most CPU
    assert rows["a1_b"][0] == "smoke" and float(rows["a1_b"][3]) == 0.5 and rows["a1_b"][4] == "? / 0.5"
    assert rows["all"][1:5] == ["160", "200", f"{200 / 160:.2f}", "3.2 / 2.5"]
    assert "Test CPU 9000, 2 cores" in text and "2026-12-02 10:00" in text and "2026-12-02 11:30" in text


def test_bench_table_is_a_placeholder_until_a_bench_writes_it(tmp_path):
    runner = load_runner()
    out = tmp_path / "generated"
    runner.write_compute_table(out)
    placeholder = (out / "bench.md").read_text()
    assert "|" not in placeholder and "make bench" in placeholder  # no bench yet: how to fill it
    (out / "bench.md").write_text("| a bench table |\n")
    runner.write_compute_table(out)  # a later page's run keeps the bench's table
    assert (out / "bench.md").read_text() == "| a bench table |\n"


def test_records_of_chapters_whose_source_is_gone_are_dropped(tmp_path):
    out = tmp_path / "generated"
    for name in ("01_a", "03_old_name", "a1_b"):
        notebook_manifest.update_manifest(out, name, _entry(10.0, 10.0, 1e9))
    assert notebook_manifest.keep_only(out, ["01_a", "a1_b", "04_new"]) == ["03_old_name"]
    assert set(notebook_manifest.read_manifest(out)["chapters"]) == {"01_a", "a1_b"}
    load_runner().write_compute_table(out)
    assert list(_table_rows((out / "compute_table.md").read_text())) == ["01_a", "a1_b", "all"]
    assert notebook_manifest.keep_only(out, ["01_a", "a1_b"]) == []


def test_running_time_line_appears_when_a_record_exists(tmp_path):
    runner = load_runner()
    path = tmp_path / "07_x.ipynb"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Title"),
                                               nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(notebook, path)
    runner.prepare_for_reading(path, "07_x", {"profile": "smoke"}, {})
    assert not [c for c in nbformat.read(path, as_version=4).cells if "olacore-running-time" in c.metadata.get("tags", [])]
    for seconds, total, words in ((30.0, None, "under a minute"), (185.0, 2.5e9, "about 3 min")):
        runner.prepare_for_reading(path, "07_x", {"profile": "smoke"}, {}, previous=_entry(seconds, seconds, 1.5e9, total))
        cells = nbformat.read(path, as_version=4).cells
        lines = [c.source for c in cells if "olacore-running-time" in c.metadata.get("tags", [])]
        assert len(lines) == 1 and cells[1].source == lines[0]  # once, right under the title
        peak = "2.5 GB" if total else "1.5 GB"  # all processes together where sampled, else the largest
        assert words in lines[0] and "profile `default`" in lines[0] and peak in lines[0]


def test_code_fingerprint_follows_the_package_and_the_chapters_own_code(tmp_path, monkeypatch):
    """An edit to olacore/ (its profile tables included) or to notebooks/chapter_code/ re-executes the chapters (the
    fingerprint's ``package``); a chapter's source counts as that chapter's own ``source``, and byte code never counts."""
    for name in ("olacore/ola.py", "olacore/toa/data.py", "olacore/profiles.json", "notebooks/chapter_code/controls.py",
                 "notebooks/05_x.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    seen = {notebook_manifest.code_fingerprint(tmp_path)}
    for name in ("olacore/toa/data.py", "olacore/profiles.json", "notebooks/chapter_code/controls.py",
                 "notebooks/chapter_code/new.py"):
        (tmp_path / name).write_text("x = 2\n")
        seen.add(notebook_manifest.code_fingerprint(tmp_path))
    assert len(seen) == 5
    (tmp_path / "notebooks/05_x.py").write_text("x = 2\n")
    (tmp_path / "notebooks/chapter_code/__pycache__").mkdir()
    (tmp_path / "notebooks/chapter_code/__pycache__/controls.py").write_text("stale")
    assert notebook_manifest.code_fingerprint(tmp_path) in seen
    for name in ("data_dir", "data_fingerprint", "environment_fingerprint"):  # slow, and tested elsewhere
        monkeypatch.setattr(notebook_manifest, name, lambda *_: "x")
    assert notebook_manifest.shared_fingerprint(tmp_path)["package"] == notebook_manifest.code_fingerprint(tmp_path)


def test_data_fingerprint_follows_size_and_mtime(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.txt").write_text("one")
    before = notebook_manifest.data_fingerprint(tmp_path)
    assert notebook_manifest.data_fingerprint(tmp_path) == before
    (tmp_path / "a" / "x.txt").write_text("three")
    assert notebook_manifest.data_fingerprint(tmp_path) != before
    assert notebook_manifest.data_fingerprint(tmp_path / "missing").endswith("-missing")


def test_timing_table_lists_every_chapter():
    table = load_runner().timing_table([
        {"chapter": "01_a", "status": "skipped", "seconds": 0.1, "reason": "unchanged"},
        {"chapter": "02_b", "status": "executed", "seconds": 12.0, "cpu_seconds": 20.5, "peak_rss_bytes": 1.5e9,
         "reason": "source changed"},
    ])
    lines = table.splitlines()
    assert lines[2].split() == ["01_a", "skipped", "0.1", "0.0", "unchanged"]
    assert lines[3].split()[:5] == ["02_b", "executed", "12.0", "20.5", "1.5"]
    assert lines[-1].split() == ["total", "12.1", "20.5"]


def test_stopwatch_counts_wall_and_cpu_per_phase_and_leaves_them_for_the_runner(tmp_path, monkeypatch):
    import json

    from olacore.results import Stopwatch

    monkeypatch.setenv("OLACORE_PHASES", str(tmp_path / "phases"))
    watch = Stopwatch("09_x")
    with watch("busy"):
        sum(i * i for i in range(3_000_000))
    with watch("asleep"):
        __import__("time").sleep(0.2)
    watch.report()
    rows = {r["phase"]: r for r in json.loads((tmp_path / "phases" / "09_x.json").read_text())}
    assert rows["busy"]["cpu"] > rows["asleep"]["cpu"]  # sleeping costs (next to) no CPU, computing does
    assert rows["asleep"]["wall"] >= 0.2
    assert rows["total"]["wall"] >= rows["busy"]["wall"] + rows["asleep"]["wall"]
    table = load_runner().phase_tables(tmp_path, ["09_x", "10_never_ran"])
    assert "09_x" in table and "busy" in table and "10_never_ran" not in table


KERNEL_PROBE = '''# %% tags=["parameters"]
profile = "default"  # smoke, default or paper

# %%
import os
import sys
from pathlib import Path

from pathlib import Path

import olacore

Path(os.environ["OLACORE_TEST_MARKER"]).write_text(sys.executable)
'''


@pytest.mark.slow
def test_chapters_run_on_the_runners_interpreter_whatever_python3_is_first(tmp_path, monkeypatch):
    """Another environment's ``python3`` kernelspec first on the Jupyter path (here: an
    interpreter without its site-packages, so without ipykernel or olacore) does not run the chapter."""
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-S", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (another environment)", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    source, marker = tmp_path / "07_probe.py", tmp_path / "ran.txt"
    source.write_text(KERNEL_PROBE)
    monkeypatch.setenv("OLACORE_TEST_MARKER", str(marker))
    assert load_runner().main([str(source), "--profile", "smoke", "--out", str(tmp_path / "out")]) == 0
    assert Path(marker.read_text()).resolve() == Path(sys.executable).resolve()


@pytest.mark.parametrize("name, text, named", [
    ("device", "none", "None"),      # the text "none" is no device: says how to get the default
    ("device", "gpu", "cpu"),        # not a torch device type: lists what to give
    ("device", "cuda:7", "cpu"),     # a GPU this machine lacks (none here, or not eight)
    ("seeds", "[]", "seed"),         # no seed: nothing would run
    ("seeds", "[0, -1]", "-1"),
])
def test_values_unusable_for_their_parameter_are_refused_before_any_cell(name, text, named, capsys):
    chapter = ROOT / "notebooks" / "04_proxy.py"
    status = load_runner().main(["--profile", "smoke", "-p", name, text, str(chapter), "--out", "/nonexistent/out"])
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"PARAMETER ERROR: -p {name} {text!r}") and named in err and "\n" not in err


def test_usable_values_pass_as_given(declared):
    chapter = ROOT / "notebooks" / "04_proxy.py"
    runner = load_runner()
    assert runner.resolve_parameters(chapter, "smoke", {"device": "cpu", "seeds": "[0,2]"}) == \
        {"profile": "smoke", "device": "cpu", "seeds": [0, 2]}
    assert runner.resolve_parameters(chapter, "smoke", {"device": "None"})["device"] is None
