"""Where the time went: a tiny stopwatch that notebooks print at their end."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Iterator


class Stopwatch:
    """Accumulate wall-clock seconds per named section.

    Example::

        watch = Stopwatch()
        with watch("extract attention"):
            ...
        print(watch.report())
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._start = time.perf_counter()

    @contextmanager
    def __call__(self, section: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[section] = self.seconds.get(section, 0.0) + time.perf_counter() - start

    def report(self) -> str:
        """A plain-text table of seconds per section, with the total since creation."""
        total = time.perf_counter() - self._start
        width = max([len(name) for name in self.seconds] + [len("total (wall clock)")])
        lines = [f"{name:<{width}}  {secs:8.1f} s" for name, secs in self.seconds.items()]
        lines.append(f"{'total (wall clock)':<{width}}  {total:8.1f} s")
        return "\n".join(lines)


def progress(iterable, *, enabled: bool = True, **kwargs):
    """A tqdm progress bar over ``iterable``, unless ``enabled`` is False or the environment
    variable ``TQDM_DISABLE`` is set (the book's notebook runner sets it, so executed pages
    carry no progress bars; interactive runs show them)."""
    from tqdm import tqdm

    return tqdm(iterable, disable=not enabled or bool(os.environ.get("TQDM_DISABLE")), **kwargs)
