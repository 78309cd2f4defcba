"""Where the time went: a tiny stopwatch that notebooks print at their end, per phase in wall and CPU seconds."""

from __future__ import annotations

import json
import os
import platform
import time
from contextlib import contextmanager
from typing import Iterator

from olacore.settings import env_folder
from olacore.store import atomic_write_text

#: Where the notebook runner asks chapters to leave their phase table (``<out>/phases``).
PHASES_ENV = "OLACORE_PHASES"


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
    """CPU seconds (user + system) of this process, of its finished child processes and of those still running (the
    workers of :mod:`olacore.workers` live across calls, so their seconds are read while they run)."""
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
    """Accumulate wall-clock and CPU seconds per named phase.

    Use ``with watch("phase"): ...``. CPU seconds count this process and its worker processes, running
    or finished (:func:`cpu_seconds`). With ``chapter`` given and
    ``$OLACORE_PHASES`` set, :meth:`report` also writes the table to ``$OLACORE_PHASES/<chapter>.json``.
    """

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
        """A plain-text table of wall and CPU seconds per phase, with the total since creation."""
        rows = self.phases()
        folder = env_folder(PHASES_ENV, None)  # a blank value or a file: ValueError naming it
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
    """A tqdm progress bar over ``iterable``, unless ``enabled`` is False or ``$TQDM_DISABLE`` is set
    (the book's notebook runner sets it)."""
    from tqdm import tqdm

    return tqdm(iterable, disable=not enabled or bool(os.environ.get("TQDM_DISABLE")), **kwargs)
