"""Execute the jupytext notebook sources with papermill, skipping chapters whose inputs did not change.

Usage::

    python scripts/execute_notebooks.py [--profile default] [--out book/generated] [--force]
                                        [-p NAME VALUE ...] [NOTEBOOK.py ...]
    python scripts/execute_notebooks.py --timings     # the table of the last run, again

With no notebook named, every chapter ``notebooks/NN_*.py`` runs in order, then the appendices ``notebooks/aN_*.py``. Each source is converted to
``.ipynb`` with jupytext, executed by papermill with ``-p profile PROFILE`` (and any
``-p NAME VALUE`` given), and written to the output folder, where the book picks it up. The
kernel is ipykernel on this script's own interpreter, whatever ``python3`` kernelspec comes
first on the Jupyter path. It runs in the repository root with ``notebooks/`` on its ``PYTHONPATH``,
so that a chapter imports its own code (``from chapter_code.controls import ...``) as it does
when Jupyter opens it beside ``notebooks/chapter_code/``.

- Every ``-p`` value is checked against the type its notebook declares in the cell tagged
  ``parameters`` before any cell runs (``scripts/notebook_parameters.py``): coerced where
  unambiguous (``-p seeds 0`` gives ``[0]``), otherwise refused in one line.
- A chapter whose source, parameters, package code, runner, data files and environment are
  unchanged, and whose executed notebook is present and unmodified, is skipped
  (``scripts/notebook_manifest.py``; manifest ``book/generated.manifest.json``). ``--force``
  re-executes everything. A chapter that reads the other chapters' results (the report page,
  marked by ``notebook_manifest.READS_RESULTS``) also re-executes when one of them changed,
  and always runs after the others.
- The executed notebook is made for reading: its parameters are shown once, as a labelled
  block (the ``parameters`` and papermill's ``injected-parameters`` cells stay in the
  notebook, tagged ``remove-cell``), a note offers the executed notebook and its jupytext
  source (copied beside it) for download, and, where the manifest holds an earlier run of the
  chapter, one line under the title gives that run's time, profile and peak memory.
- Each executed chapter's record in the manifest keeps its wall and CPU seconds, its peak
  memory (the kernel and its worker processes together, sampled every second by
  ``kernel_setup.py``, and the largest resident set of one of them, from ``getrusage``; both
  read by a last cell that is then removed) and the machine it ran on; after
  every chapter the runner writes them as a Markdown table, ``<out>/compute_table.md``, which
  ``book/compute.md`` includes. A run of the whole book (no notebook named) first drops the
  records of chapters whose source is gone (renamed or removed).

Stops at the first notebook that fails, naming it, with exit status 1 (2 for a refused
parameter); prints a per-chapter timing table (executed / skipped, seconds) at the end.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import jupytext
import nbformat
import papermill

sys.path.insert(0, str(Path(__file__).resolve().parent))
import notebook_manifest as manifest  # noqa: E402
from notebook_parameters import ParameterError, check_parameters, declared_parameters  # noqa: E402

from olacore.store import atomic_write_text  # noqa: E402
from olacore.results import cpu_seconds, machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHAPTER_CODE_PATH = ROOT / "notebooks"  # holds chapter_code/, the chapters' own modules
KERNEL_SETUP = Path(__file__).resolve().parent / "kernel_setup.py"
PARAMETERS_TAG, INJECTED_TAG = "parameters", "injected-parameters"
SUMMARY_TAG, DOWNLOAD_TAG = "olacore-parameters", "olacore-download"
RUNNING_TIME_TAG, PEAK_MEMORY_TAG = "olacore-running-time", "olacore-peak-memory"
COMPUTE_TABLE = "compute_table.md"  # in the output folder; included by book/compute.md
# In the output folder too, also included by book/compute.md: the phases against the machine, written by
# `make bench` (benchmarks/bench_phases.py); until then a line saying how to fill it (write_compute_table).
BENCH_TABLE = "bench.md"
BENCH_PLACEHOLDER = ("*No benchmark has been run into this book's output folder yet: run `make bench` "
                     "(`python benchmarks/bench_phases.py`, about three minutes) and build the book again.*\n")

# The last cell of every executed chapter (removed from the executed notebook), in bytes:
# ``peak_rss_bytes``, the largest resident set of the kernel or of one of its finished worker
# processes, and ``peak_total_bytes``, the largest sum over the kernel and all its processes at
# once (sampled every second by kernel_setup.py; 0 where it could not sample). The kernel's own
# peak is its memory's high-water mark (VmHWM, Linux): its ru_maxrss would also count the
# runner's memory at the moment it started the kernel (exec keeps the old high-water mark).
# Workers count through RUSAGE_CHILDREN (ru_maxrss in KiB on Linux, bytes on macOS), once stopped by the cell
# (olacore.workers.shutdown: they live across calls) and reaped.
PEAK_MEMORY_CELL = """def _olacore_peak_memory():
    import json, resource, sys
    if "olacore.workers" in sys.modules:  # workers live across calls: stop them, so that they count as finished
        sys.modules["olacore.workers"].shutdown()
    scale = 1 if sys.platform == "darwin" else 1024
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    try:
        with open("/proc/self/status") as status:
            own = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        pass
    largest = max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale)
    sampled = getattr(sys.modules.get("_olacore_memory"), "peak_total", 0)
    print(json.dumps({"peak_rss_bytes": largest, "peak_total_bytes": max(sampled, largest) if sampled else None}))


_olacore_peak_memory()
del _olacore_peak_memory"""


class _DropUnknownParameterWarning(logging.Filter):
    """Papermill's own name check cannot read ``x: T | None = ...`` lines; ours has run already."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Passed unknown parameter")


logging.getLogger("papermill").addFilter(_DropUnknownParameterWarning())


def _own_interpreter_kernel_manager():
    """A kernel manager class that starts ipykernel with this runner's interpreter (``sys.executable``).

    Papermill looks up the kernelspec ``python3`` on the Jupyter path, where another
    environment's spec may come first (``~/.local/share/jupyter/kernels/python3``, a
    ``JUPYTER_PATH`` entry): its interpreter lacks the project's packages and the chapter
    would fail in a cell. The chapters are run by the interpreter that runs this script.
    """
    from ipykernel.kernelspec import get_kernel_dict
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpec

    class OwnInterpreterKernelManager(AsyncKernelManager):
        @property
        def kernel_spec(self):
            if self._kernel_spec is None:
                self._kernel_spec = KernelSpec(resource_dir="", **get_kernel_dict())
            return self._kernel_spec

    return OwnInterpreterKernelManager


def read_source(source: Path) -> nbformat.NotebookNode:
    """The jupytext source as a notebook with a Python 3 kernelspec."""
    notebook = jupytext.read(source)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return notebook


def _tagged(notebook: nbformat.NotebookNode, tag: str) -> int | None:
    return next((i for i, cell in enumerate(notebook.cells) if tag in cell.get("metadata", {}).get("tags", [])), None)


def declared(source: Path) -> dict:
    """The parameters a source declares (``{name: notebook_parameters.Declared}``)."""
    notebook = read_source(source)
    index = _tagged(notebook, PARAMETERS_TAG)
    return declared_parameters(notebook.cells[index].source) if index is not None else {}


def resolve_parameters(source: Path, profile: str, given: dict[str, str]) -> dict:
    """The checked parameters of one run: ``profile`` plus every ``-p NAME TEXT`` coerced to its declared type.

    Raises:
        notebook_parameters.ParameterError: an unknown name or a value of the wrong form (one line).
    """
    return check_parameters(declared(source), {"profile": profile, **given}, source.name)


def _markdown_cell(text: str, tag: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text, metadata={"tags": [tag]})


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def parameters_summary(values: dict, declared_here: dict) -> str:
    """The labelled block that shows a run's parameters once (MyST admonition with a table)."""
    rows = ["| parameter | value | meaning |", "|---|---|---|"]
    for name, item in declared_here.items():
        value, origin = (values[name], "set for this run") if name in values else (item.default, "default")
        rows.append(f"| `{name}` | `{_escape(repr(value))}` ({origin}) | {_escape(item.help)} |")
    for name in values.keys() - declared_here.keys():
        rows.append(f"| `{name}` | `{_escape(repr(values[name]))}` (set for this run) | |")
    return ":::{admonition} Parameters of this run\n:class: note\n" + "\n".join(rows) + "\n:::"


def download_note(stem: str) -> str:
    """The note that offers the executed notebook and its jupytext source for download."""
    return (
        ":::{admonition} Take this chapter with you\n:class: seealso\n"
        f"Download the executed notebook {{download}}`{stem}.ipynb <{stem}.ipynb>` or its source "
        f"{{download}}`{stem}.py <{stem}.py>` (a jupytext `py:percent` file, the one this page was "
        "executed from). How to open either and re-run it with another profile or model: "
        "{ref}`rerun-a-chapter`.\n:::"
    )


def _gigabytes(size: float) -> str:
    return f"{size / 1e9:.1f} GB"


def _peak(record: dict) -> float | None:
    """A record's peak memory for a reader: all its processes together where sampled, else the largest one."""
    return record.get("peak_total_bytes") or record.get("peak_rss_bytes")


def running_time_note(entry: dict | None) -> str | None:
    """The line under a chapter's title: its last run's time, profile and peak memory (``None`` without a record)."""
    if not entry or not entry.get("seconds"):
        return None
    seconds = float(entry["seconds"])
    minutes = round(seconds / 60)
    text = "under a minute" if seconds < 60 else f"about {minutes} min" if minutes < 90 else f"about {seconds / 3600:.1f} h"
    profile = entry.get("parameters", {}).get("profile", "?")
    memory = _peak(entry)
    peak = f", peak memory {_gigabytes(memory)}" if memory else ""
    return (f"*Running time: {text} at profile `{profile}` on this machine (last run{peak}); "
            "every chapter's: {ref}`compute`.*")


def take_peak_memory(notebook: nbformat.NotebookNode) -> dict:
    """Remove the :data:`PEAK_MEMORY_CELL` from an executed notebook; return what it printed
    (``peak_rss_bytes``, ``peak_total_bytes``; ``{}`` without the cell or its output)."""
    index = _tagged(notebook, PEAK_MEMORY_TAG)
    if index is None:
        return {}
    cell = notebook.cells.pop(index)
    for output in cell.get("outputs", []):
        for line in output.get("text", "").splitlines():
            if line.startswith("{"):
                return json.loads(line)
    return {}


def prepare_for_reading(path: Path, stem: str, values: dict, declared_here: dict,
                        previous: dict | None = None) -> dict:
    """Tag the parameter cells ``remove-cell``, add the parameters block, the download note and
    (from ``previous``, the chapter's earlier manifest entry) the running-time line; take out
    the peak-memory cell and return its reading (:func:`take_peak_memory`)."""
    notebook = nbformat.read(path, as_version=4)
    memory = take_peak_memory(notebook)
    added = {SUMMARY_TAG, DOWNLOAD_TAG, RUNNING_TIME_TAG}
    notebook.cells = [c for c in notebook.cells if not added & set(c.metadata.get("tags", []))]
    for tag in (PARAMETERS_TAG, INJECTED_TAG):
        index = _tagged(notebook, tag)
        if index is not None:
            tags = notebook.cells[index].metadata.setdefault("tags", [])
            if "remove-cell" not in tags:
                tags.append("remove-cell")
    anchor = _tagged(notebook, PARAMETERS_TAG)
    anchor = _tagged(notebook, INJECTED_TAG) if anchor is None else anchor
    notebook.cells.insert(anchor or 0, _markdown_cell(parameters_summary(values, declared_here), SUMMARY_TAG))
    first_is_title = notebook.cells and notebook.cells[0].cell_type == "markdown" and anchor != 0
    notebook.cells.insert(1 if first_is_title else 0, _markdown_cell(download_note(stem), DOWNLOAD_TAG))
    note = running_time_note(previous)
    if note:
        notebook.cells.insert(1 if first_is_title else 0, _markdown_cell(note, RUNNING_TIME_TAG))
    nbformat.write(notebook, path)
    return memory


def kernel_pythonpath(current: str | None) -> str:
    """``current`` (a ``PYTHONPATH`` value or ``None``) with :data:`CHAPTER_CODE_PATH` added at its end, once."""
    entries = [entry for entry in (current or "").split(os.pathsep) if entry]
    return os.pathsep.join(entries if str(CHAPTER_CODE_PATH) in entries else entries + [str(CHAPTER_CODE_PATH)])


def execute(source: Path, out_dir: Path, parameters: dict, previous: dict | None = None) -> tuple[Path, dict]:
    """Execute ``source`` with (already checked) ``parameters``.

    Writes ``<out_dir>/<stem>.ipynb`` (executed, prepared for reading, the running-time line
    from ``previous``, the chapter's earlier manifest entry) and a copy of the source beside
    it (``<stem>.py``, offered for download).

    Returns:
        the executed notebook's path and the run's peak memory in bytes: ``peak_rss_bytes``, the
        largest resident set of the kernel or a finished worker, and ``peak_total_bytes``, the
        largest sum over the kernel and its processes at once, sampled every second (``None``
        where it could not be sampled); ``{}`` where the last cell did not run.

    Raises:
        notebook_parameters.ParameterError: a parameter the notebook does not declare.
        papermill.PapermillExecutionError: a cell failed (the message shows the cell).
    """
    source, out_dir = Path(source), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # Progress bars are for interactive use; in the published pages they are noise.
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("PYTHONWARNINGS", "ignore:IProgress not found")
    os.environ["OLACORE_RESULTS"] = str(out_dir / "results")  # olacore.results: each chapter's numbers
    os.environ["OLACORE_PHASES"] = str(out_dir / "phases")  # olacore.results: each chapter's phases, wall and CPU
    os.environ["PYTHONPATH"] = kernel_pythonpath(os.environ.get("PYTHONPATH"))  # the kernel and its workers
    notebook = read_source(source)
    index = _tagged(notebook, PARAMETERS_TAG)
    declared_here = declared_parameters(notebook.cells[index].source) if index is not None else {}
    unknown = sorted(set(parameters) - set(declared_here))
    if unknown:
        raise ParameterError(f"{source.name} has no parameter {', '.join(unknown)}; "
                             f"its parameters are: {', '.join(declared_here)}")
    notebook.cells.append(nbformat.v4.new_code_cell(PEAK_MEMORY_CELL, metadata={"tags": [PEAK_MEMORY_TAG]}))
    raw = out_dir / f"{source.stem}.source.ipynb"
    jupytext.write(notebook, raw)
    target = out_dir / f"{source.stem}.ipynb"
    try:
        papermill.execute_notebook(
            str(raw), str(target), parameters=parameters, kernel_name="python3", cwd=str(ROOT),
            progress_bar=sys.stderr.isatty(), log_output=False,
            kernel_manager_class=_own_interpreter_kernel_manager(),  # not whichever python3 is first
            # the kernel's own log (e.g. its warning about unencrypted local TCP) is not the chapter's
            extra_arguments=[f"--IPKernelApp.exec_files={KERNEL_SETUP}", "--IPKernelApp.log_level=ERROR"],
        )
    finally:
        raw.unlink(missing_ok=True)
    memory = prepare_for_reading(target, source.stem, parameters, declared_here, previous)
    shutil.copyfile(source, out_dir / source.name)
    return target, memory


def run_chapter(source: Path, out_dir: Path, parameters: dict, *, force: bool = False,
                shared: dict[str, str] | None = None) -> dict:
    """Execute one chapter unless its manifest entry shows nothing changed.

    Returns:
        ``{"chapter", "status" ("executed" or "skipped"), "seconds", "reason"}``.

    Raises:
        whatever :func:`execute` raises; the chapter's manifest entry is dropped first, so a
        failed run is re-executed next time.
    """
    source, out_dir = Path(source), Path(out_dir)
    start = time.perf_counter()
    shared = shared if shared is not None else manifest.shared_fingerprint(ROOT)
    fingerprint = manifest.chapter_fingerprint(source, parameters, shared, out_dir)
    entry = manifest.read_manifest(out_dir)["chapters"].get(source.stem)
    reason = "forced" if force else manifest.why_stale(entry, fingerprint, out_dir)
    if reason is None:
        write_compute_table(out_dir)
        seconds = time.perf_counter() - start
        return {"chapter": source.stem, "status": "skipped", "seconds": seconds, "reason": "unchanged"}
    manifest.update_manifest(out_dir, source.stem, None)
    cpu = cpu_seconds()
    _, memory = execute(source, out_dir, parameters, previous=entry)
    memory = {"peak_rss_bytes": memory.get("peak_rss_bytes"), "peak_total_bytes": memory.get("peak_total_bytes")}
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu  # the kernel and its workers, once ended
    manifest.update_manifest(out_dir, source.stem, {
        "fingerprint": fingerprint,
        # the executed notebook, its source copy, and the numbers it saved (olacore.results); the
        # report page also writes the intro's table of claims (claims.md, included by book/intro.md)
        "outputs": manifest.outputs_hashes(out_dir, [f"{source.stem}.ipynb", source.name, f"results/{source.stem}.json"]
                                           + (["claims.md"] if manifest.reads_results(source) else [])),
        "parameters": parameters,
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        **memory,
        "executed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
    })
    write_compute_table(out_dir)
    return {"chapter": source.stem, "status": "executed", "seconds": seconds, "cpu_seconds": cpu,
            **memory, "reason": reason}


def _describe_machine(m: dict) -> str:
    memory = f", {_gigabytes(m['memory_bytes'])} of memory" if m.get("memory_bytes") else ""
    return f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores{memory} ({m.get('system', '?')}, Python {m.get('python', '?')})"


def _seconds(value: float) -> str:
    """Seconds for the compute table: whole seconds from 10 s up, tenths below."""
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _largest_phases(out_dir: Path, chapter: str, count: int = 2) -> str:
    """The chapter's ``count`` phases with the most CPU (its stopwatch's last record), as ``name wall / CPU s``."""
    path = Path(out_dir) / "phases" / f"{chapter}.json"
    try:
        rows = [r for r in json.loads(path.read_text()) if r["phase"] != "total"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    rows = sorted(rows, key=lambda r: -r["cpu"])[:count]
    return "; ".join(f"{_escape(str(r['phase']))} {_seconds(r['wall'])} / {_seconds(r['cpu'])}" for r in rows)


def _memory_cell(record: dict) -> str:
    """``all / largest`` in GB: all the page's processes together (sampled), the largest one alone."""
    total, largest = record.get("peak_total_bytes"), record.get("peak_rss_bytes")
    return " / ".join(f"{x / 1e9:.1f}" if x else "?" for x in (total, largest)) if total or largest else ""


def compute_table(out_dir: Path) -> str:
    """The book's execution statistics (MyST Markdown) from the manifest of ``out_dir``: per executed
    chapter its profile, wall and CPU seconds, cores used (CPU / wall), peak memory and largest
    phases, with the machine(s) and dates of the runs. Without any record: one line that says so."""
    chapters = manifest.read_manifest(out_dir)["chapters"]
    entries = {name: e for name, e in chapters.items() if e and e.get("seconds") is not None}
    if not entries:
        return ("*No chapter has been executed into this book's output folder yet, so there are no "
                "statistics to show: run `make book` (or `scripts/execute_notebooks.py`).*\n")
    order = sorted(entries, key=lambda name: (not name[:1].isdigit(), name))  # main chapters, then appendices
    rows = ["| page | profile | wall s | CPU s | cores | peak memory, GB (all / largest) | largest phases (wall / CPU s) |",
            "|---|---|---:|---:|---:|---:|---|"]
    for name in order:
        e = entries[name]
        wall, cpu = float(e["seconds"]), e.get("cpu_seconds")
        cores = f"{cpu / wall:.2f}" if cpu is not None and wall > 0 else ""
        peak = _memory_cell(e)
        rows.append(f"| {name} | {e.get('parameters', {}).get('profile', '')} | {_seconds(wall)} | "
                    f"{'' if cpu is None else _seconds(cpu)} | {cores} | {peak} | {_largest_phases(out_dir, name)} |")
    wall = sum(float(e["seconds"]) for e in entries.values())
    cpu = sum(float(e.get("cpu_seconds") or 0) for e in entries.values())
    largest = {key: max((e.get(key) or 0 for e in entries.values()), default=0)
               for key in ("peak_total_bytes", "peak_rss_bytes")}
    rows.append(f"| all | | {_seconds(wall)} | {_seconds(cpu)} | {cpu / wall if wall else 0:.2f} | "
                f"{_memory_cell(largest)} | |")
    dates = sorted(e["executed_at"][:16].replace("T", " ") for e in entries.values() if e.get("executed_at"))
    machines = list(dict.fromkeys(_describe_machine(e["machine"]) for e in entries.values() if e.get("machine")))
    when = (f"on {dates[0]}" if dates and dates[0] == dates[-1] else f"between {dates[0]} and {dates[-1]}") + " UTC" \
        if dates else "at unrecorded times"
    where = "; ".join(machines) if machines else "an unrecorded machine"
    return (f"The last executed run of each page, {when}, on {where}.\n\n"
            ":::{table} Each page's last executed run: wall seconds (the runner's, kernel start included), "
            "CPU seconds (the kernel and its finished worker processes), cores used (CPU over wall), peak "
            "memory in GB (the resident memory of the kernel and all its worker processes together, sampled "
            "every second, and the largest resident set of one of them alone) and the two phases of the "
            "page's own stopwatch with the most CPU.\n"
            ":name: tbl-compute-last\n\n" + "\n".join(rows) + "\n:::\n")


def write_compute_table(out_dir: Path) -> Path:
    """Write :func:`compute_table` to ``<out_dir>/compute_table.md`` and, where ``make bench`` has not written
    ``<out_dir>/bench.md`` yet, a line there saying how to (both included by ``book/compute.md``)."""
    bench = Path(out_dir) / BENCH_TABLE
    if not bench.is_file():
        atomic_write_text(bench, BENCH_PLACEHOLDER)
    return atomic_write_text(Path(out_dir) / COMPUTE_TABLE, compute_table(out_dir))


def timing_table(rows: list[dict]) -> str:
    """A plain-text table: chapter, executed / skipped, wall and CPU seconds, peak memory (GB, all processes), why."""
    width = max([len("chapter")] + [len(r["chapter"]) for r in rows])

    def peak(r):
        return f"{_peak(r) / 1e9:>7.1f}" if _peak(r) else f"{'':>7}"

    lines = [f"{'chapter':<{width}}  {'status':<8}  {'wall s':>7}  {'CPU s':>7}  {'peak GB':>7}  why",
             "-" * (width + 49)]
    lines += [f"{r['chapter']:<{width}}  {r['status']:<8}  {r['seconds']:>7.1f}  {r.get('cpu_seconds', 0.0):>7.1f}  "
              f"{peak(r)}  {r['reason']}" for r in rows]
    lines.append(f"{'total':<{width}}  {'':<8}  {sum(r['seconds'] for r in rows):>7.1f}  "
                 f"{sum(r.get('cpu_seconds', 0.0) for r in rows):>7.1f}")
    return "\n".join(lines)


def phase_tables(out_dir: Path, chapters: list[str]) -> str:
    """Each chapter's phases (its own stopwatch, :class:`olacore.results.Stopwatch`) as saved by its last run."""
    from olacore.results import phase_table

    parts = []
    for chapter in chapters:
        path = Path(out_dir) / "phases" / f"{chapter}.json"
        if path.is_file():
            parts.append(f"{chapter} (last executed run):\n{phase_table(json.loads(path.read_text()))}")
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="jupytext sources (default: notebooks/*.py)")
    parser.add_argument("--profile", default="default", choices=["smoke", "default", "paper"])
    parser.add_argument("--out", type=Path, default=ROOT / "book" / "generated")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="notebook parameter, checked against the type its parameters cell declares")
    parser.add_argument("--force", action="store_true", help="re-execute every chapter, changed or not")
    parser.add_argument("--timings", action="store_true", help="print the timing table of the last run and exit")
    args = parser.parse_args(argv)
    if args.timings:
        last = manifest.read_manifest(args.out).get("last_run")
        if not last:
            print(f"no run recorded in {manifest.manifest_path(args.out)}")
            return 0
        print(timing_table(last))
        phases = phase_tables(args.out, [r["chapter"] for r in last])
        print(f"\nWhere each chapter's time went (wall and CPU seconds; cores = CPU / wall):\n\n{phases}" if phases else "")
        return 0
    given = {}
    for name, value in args.parameter:
        if name == "profile":
            parser.error("set the profile with --profile, not -p profile")
        given[name] = value
    sources = sorted(args.notebooks, key=manifest.reads_results) if args.notebooks else manifest.chapter_sources(ROOT / "notebooks")
    try:  # every value of every notebook is checked before any cell runs
        runs = [(source, resolve_parameters(source, args.profile, given)) for source in sources]
    except ParameterError as error:
        print(f"PARAMETER ERROR: {error}", file=sys.stderr)
        return 2
    if not args.notebooks:  # the whole book: a chapter whose source is gone leaves the records (and compute table)
        manifest.keep_only(args.out, [source.stem for source in sources])
    shared = manifest.shared_fingerprint(ROOT)
    rows = []
    for source, parameters in runs:
        print(f"[execute] {source.name} (profile={args.profile}) ...", flush=True)
        try:
            row = run_chapter(source, args.out, parameters, force=args.force, shared=shared)
        except Exception as error:  # papermill raises PapermillExecutionError with the cell
            print(f"\nNOTEBOOK FAILED: {source} (profile={args.profile})\n{error}", file=sys.stderr)
            return 1
        rows.append(row)
        print(f"[execute] {source.name} {row['status']} in {row['seconds']:.0f} s ({row['reason']})", flush=True)
    manifest.update_manifest(args.out, last_run=rows)
    print(timing_table(rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
