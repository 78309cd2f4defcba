"""A chapter's results, saved as a small JSON file that the report page, later chapters and the tests read
(:class:`ChapterResults`, into ``$OLACORE_RESULTS``); where a chapter's time went (:class:`Stopwatch`); the progress
bar of every long loop (:func:`progress`).
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from olacore.settings import env_folder
from olacore.store import atomic_write_text

__all__ = ["OFFICIAL", "HELD_OUT", "Record", "ChapterResults", "results_dir", "load_results", "Stopwatch", "machine",
           "cpu_seconds", "phase_table", "progress"]


#: The two protocols: as the official code runs, or with nothing chosen on test data.
OFFICIAL, HELD_OUT = "official", "held-out"
_ROOT = Path(__file__).resolve().parent.parent


def results_dir() -> Path:
    """``$OLACORE_RESULTS``, or ``book/generated/results`` (a blank value or a file: ValueError)."""
    return env_folder("OLACORE_RESULTS", _ROOT / "book" / "generated" / "results")


@dataclass
class Record:
    """One measured number.

    Attributes:
        key: a stable id within the chapter (``"retrieval/causal/order1/hits@1"``).
        claim: what it measures, in words.
        value: the number (percent unless ``unit`` says otherwise).
        unit: ``"%"``, ``"SSIM"``, ``"s"``, ...
        paper: the paper's number for the same quantity, if it has one.
        protocol: :data:`OFFICIAL` (as the official code runs), :data:`HELD_OUT` (nothing chosen on test data), or ``""``.
        verdict: a computed verdict (:mod:`olacore.report`), if any.
        chance: the chance level of the same quantity, if any.
        note: the departures that matter for reading it.
        anchor: the label of the table in the chapter that shows it.
        paper_keys: the :func:`olacore.report.published` keys it is measured against.
        subject: what it was measured on (``"qwen2.5-0.5b -> gemma-3-270m"``).
    """

    key: str
    claim: str
    value: float
    unit: str = "%"
    paper: float | None = None
    protocol: str = ""
    verdict: str = ""
    chance: float | None = None
    note: str = ""
    anchor: str = ""
    paper_keys: list[str] = field(default_factory=list)
    subject: str = ""


@dataclass
class ChapterResults:
    """The records of one chapter run and the ``tables`` (name -> rows) it keeps for later chapters."""

    chapter: str
    profile: str
    records: list[Record] = field(default_factory=list)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, key: str, claim: str, value: float, **details: Any) -> Record:
        """Record one number (see :class:`Record` for ``details``); returns it.

        Raises:
            ValueError: ``value`` is not a finite number, or ``key`` was already recorded.
        """
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"{self.chapter}: {key} ({claim}) is {value}: the table it comes from is empty or undefined")
        if any(r.key == key for r in self.records):
            raise ValueError(f"{self.chapter}: {key} recorded twice")
        record = Record(key=key, claim=claim, value=value, **details)
        self.records.append(record)
        return record

    def add_table(self, name: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Keep a table for later chapters (``rows``: plain values, e.g. ``frame.to_dict("records")``).

        Raises:
            ValueError: ``name`` was already kept, or a value is not finite.
        """
        if name in self.tables:
            raise ValueError(f"{self.chapter}: table {name!r} kept twice")
        rows = [dict(row) for row in rows]
        if any(isinstance(v, float) and not math.isfinite(v) for row in rows for v in row.values()):
            raise ValueError(f"{self.chapter}: table {name!r} holds a value that is not finite: the table it comes "
                             "from is empty or undefined")
        self.tables[name] = rows

    def save(self, folder: str | os.PathLike | None = None) -> Path:
        """Write ``<chapter>.json`` atomically into ``folder`` (default :func:`results_dir`).

        Raises:
            ValueError: nothing was recorded.
        """
        if not self.records:
            raise ValueError(f"{self.chapter}: no result recorded; a chapter must record what it measured")
        folder = Path(folder) if folder is not None else results_dir()
        payload = {"chapter": self.chapter, "profile": self.profile, "records": [asdict(r) for r in self.records]}
        if self.tables:
            payload["tables"] = self.tables
        text = json.dumps(payload, indent=1, ensure_ascii=False, allow_nan=False)
        return atomic_write_text(folder / f"{self.chapter}.json", text)


def load_results(chapter: str, folder: str | os.PathLike | None = None) -> ChapterResults:
    """Read a chapter's saved results.

    Raises:
        FileNotFoundError: the chapter has not been executed.
        ValueError: the file holds another chapter's results, or is not a chapter's results.
    """
    path = (Path(folder) if folder is not None else results_dir()) / f"{chapter}.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: execute the chapter {chapter!r} first "
                                f"(python scripts/execute_notebooks.py notebooks/{chapter}.py)")
    again = (f"execute the chapter {chapter!r} again "
             f"(python scripts/execute_notebooks.py --force notebooks/{chapter}.py)")
    known = {f.name for f in fields(Record)}
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        if payload.get("chapter") == chapter:
            records = [Record(**{k: v for k, v in r.items() if k in known}) for r in payload["records"]]
            tables = {str(name): [dict(row) for row in rows] for name, rows in payload.get("tables", {}).items()}
            return ChapterResults(chapter, payload["profile"], records, tables)
    except (ValueError, KeyError, TypeError, AttributeError) as error:  # JSONDecodeError is a ValueError
        raise ValueError(f"{path} is not a chapter's saved results ({type(error).__name__}: {error}); "
                         f"{again}") from None
    # a file copied or renamed from another chapter's results
    raise ValueError(f"{path} holds the results of chapter {payload.get('chapter')!r}, not {chapter!r}; {again}")


def machine() -> dict:
    """The machine this runs on: CPU model, cores this process may use, memory in bytes, system and Python."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), model)
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = None
    return {"cpu": model, "cores": cores, "memory_bytes": memory,
            "system": f"{platform.system()} {platform.machine()}", "python": platform.python_version()}


def cpu_seconds() -> float:
    """CPU seconds of this process and its child processes, finished or running."""
    import psutil

    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:  # ended meanwhile: its seconds are in children_user / children_system once reaped
            continue
        total += times.user + times.system
    return total


class Stopwatch:
    """Wall-clock and CPU seconds per named phase (``with watch("phase"): ...``); :meth:`report` also writes
    them to ``$OLACORE_PHASES/<chapter>.json`` when set."""

    def __init__(self, chapter: str | None = None) -> None:
        self.chapter = chapter
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._start, self._cpu_start = time.perf_counter(), cpu_seconds()

    @contextmanager
    def __call__(self, section: str) -> Iterator[None]:
        start, cpu = time.perf_counter(), cpu_seconds()
        try:
            yield
        finally:
            self.seconds[section] = self.seconds.get(section, 0.0) + time.perf_counter() - start
            self.cpu[section] = self.cpu.get(section, 0.0) + cpu_seconds() - cpu

    def phases(self) -> list[dict[str, float | str]]:
        """One row per phase and a last ``total`` row: ``phase``, ``wall`` and ``cpu`` seconds."""
        rows = [{"phase": name, "wall": secs, "cpu": self.cpu[name]} for name, secs in self.seconds.items()]
        rows.append({"phase": "total", "wall": time.perf_counter() - self._start,
                     "cpu": cpu_seconds() - self._cpu_start})
        return rows

    def report(self) -> str:
        """A plain-text table of the phases (:func:`phase_table`)."""
        rows = self.phases()
        folder = env_folder("OLACORE_PHASES", None)  # a blank value or a file: ValueError naming it
        if self.chapter and folder is not None:
            atomic_write_text(folder / f"{self.chapter}.json", json.dumps(rows, indent=1))
        return phase_table(rows)


def phase_table(rows: list[dict]) -> str:
    """Rows of :meth:`Stopwatch.phases` as plain text: phase, wall s, CPU s, cores busy (CPU / wall)."""
    width = max(len(str(r["phase"])) for r in rows)
    lines = [f"{'phase':<{width}}  {'wall s':>8}  {'CPU s':>8}  {'cores':>5}"]
    for r in rows:
        cores = r["cpu"] / r["wall"] if r["wall"] > 0 else 0.0
        lines.append(f"{r['phase']:<{width}}  {r['wall']:8.1f}  {r['cpu']:8.1f}  {cores:5.2f}")
    return "\n".join(lines)


def progress(iterable, *, enabled: bool = True, **kwargs):
    """A tqdm progress bar over ``iterable``, unless ``enabled`` is False or ``$TQDM_DISABLE`` is set."""
    from tqdm import tqdm

    return tqdm(iterable, disable=not enabled or bool(os.environ.get("TQDM_DISABLE")), **kwargs)
