"""Work spread over worker processes: per-text computations (attention, ALTI) and training jobs.

:func:`run_in_processes` maps a top-level function over picklable jobs in spawned processes; :func:`per_text` splits
a model's texts over them, each worker loading the model once per call.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import multiprocessing
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import torch

from olacore.loading import LoadedModel
from olacore.timing import progress as progress_bar

__all__ = ["run_in_processes", "per_text", "unguarded_main_call"]


def _is_main_guard(node) -> bool:
    """``node`` is ``if __name__ == "__main__":`` (either side of the ``==``)."""
    import ast

    test = node.test if isinstance(node, ast.If) else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, *test.comparators]
    return (any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides)
            and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides))


def unguarded_main_call() -> str | None:
    """``"script.py, line N"`` when called from a main script's top level outside
    ``if __name__ == "__main__":`` (which spawned workers would re-run), else ``None``."""
    import ast
    import sys

    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__"):
        frame = frame.f_back
    if frame is None:
        return None
    path, line = frame.f_code.co_filename, frame.f_lineno
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):  # <stdin>, -c, a notebook cell: nothing is re-imported
        return None
    if any(_is_main_guard(node) and node.lineno <= line <= node.end_lineno for node in tree.body):
        return None
    return f"{path}, line {line}"


def run_in_processes(function: Callable[[Any], Any], jobs: Sequence[Any], workers: int, *, progress: bool = True,
                     desc: str | None = None) -> list[Any]:
    """``[function(job) for job in jobs]``, in ``workers`` spawned processes, results in order.

    ``function`` must be top-level (workers import it by name), ``jobs`` picklable, ``workers >= 1``. From a main
    script's top level without ``if __name__ == "__main__":`` the jobs run here, in order, after a one-line warning.
    No process starts when there is no job.

    Raises:
        RuntimeError: a worker process died (killed for memory, say); any exception of a job is raised here.
    """
    if not jobs:
        return []
    where = unguarded_main_call()
    if where is not None:
        warnings.warn(f"{where} starts {workers} worker processes outside `if __name__ == \"__main__\":`, which "
                      f"workers would re-run; running the {len(jobs)} jobs in this process instead. Put the "
                      "script's top-level calls under that line to use the workers", RuntimeWarning, stacklevel=2)
        return [function(job) for job in progress_bar(jobs, enabled=progress, total=len(jobs), desc=desc)]
    context = multiprocessing.get_context("spawn")
    try:
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            return list(progress_bar(pool.map(function, jobs), enabled=progress, total=len(jobs), desc=desc))
    except concurrent.futures.process.BrokenProcessPool as error:
        raise RuntimeError(f"a worker process of {desc or 'the pool'} died before it finished (killed for memory, "
                           "or it could not start: a script starting workers needs its calls under "
                           "`if __name__ == \"__main__\":`); run with workers=1 to see the error here") from error



def _by_value(item: Any, to_numpy: bool) -> Any:
    """A dataclass result with its tensors as numpy arrays (to travel between processes) or back."""
    changes = {}
    for f in dataclasses.fields(item):
        value = getattr(item, f.name)
        if to_numpy and isinstance(value, torch.Tensor):
            changes[f.name] = value.numpy()
        elif not to_numpy and isinstance(value, np.ndarray):
            changes[f.name] = torch.from_numpy(value)
    return dataclasses.replace(item, **changes)


def _run_on_texts(job: tuple) -> list[Any]:
    """One worker's share of :func:`per_text`: load the model, run ``compute`` on its texts."""
    compute, name, device, texts = job
    from olacore.loading import load_model

    return [_by_value(r, to_numpy=True) for r in compute(load_model(name, device=device), texts, progress=False)]


def per_text(
    compute: Callable[..., list[Any]],
    model: LoadedModel | str,
    texts: Sequence[str],
    *,
    device: str | torch.device | None = None,
    workers: int | None = None,
    progress: bool = True,
) -> list[Any]:
    """``compute(loaded_model, texts)`` (:func:`extract_attention`, :func:`olacore.alti.alti`), spread over processes.

    ``compute``: a top-level function ``(LoadedModel, texts, progress=...)`` giving one dataclass per text; results come
    in the order of ``texts``. Each text is computed alone on :data:`olacore.settings.COMPUTE_THREADS` thread(s), so its
    bits do not depend on where it runs; on a CPU the texts are split over ``workers`` processes (default
    :func:`olacore.settings.cpu_workers`, one per core), each loading the model once. A
    :class:`~olacore.loading.LoadedModel`, a GPU, or fewer than eight texts per worker run in this process.
    """
    from olacore.loading import load_model
    from olacore.settings import cpu_workers, resolve_device

    texts = list(texts)
    workers = cpu_workers(device) if workers is None else workers
    if isinstance(model, LoadedModel) or resolve_device(device).type != "cpu" or len(texts) < 8 * max(workers, 1) \
            or workers < 2:
        loaded = model if isinstance(model, LoadedModel) else load_model(model, device=device)
        return compute(loaded, texts, progress=progress)
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # long and short texts in every share
    shares = [order[w::workers] for w in range(workers)]
    jobs = [(compute, model, str(resolve_device(device)), [texts[i] for i in share]) for share in shares]
    done = run_in_processes(_run_on_texts, jobs, workers, progress=progress, desc=f"{compute.__name__} {model}")
    results: list[Any] = [None] * len(texts)
    for share, items in zip(shares, done):
        for index, item in zip(share, items):
            results[index] = _by_value(item, to_numpy=False)
    return results
