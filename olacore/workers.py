"""Training in worker processes: one single-threaded process per core on a CPU.

The proxy (:mod:`olacore.proxy`) and the syntax probes (:mod:`olacore.syntax`) train many small
networks that each run fastest on one thread; on a CPU, one worker process per core trains that
many at once. Every job writes its result to the cache (:class:`olacore.cache.TensorStore`),
so the caller reads the results back from there and nothing but the job travels.

Jobs are pickled into the workers; tensors in them should first go through :func:`by_value`:
torch shares each pickled tensor through a file descriptor of its own, which broke the pool in
a notebook kernel once a job held a few thousand sentence maps.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from typing import Any, Callable, Sequence

import numpy as np
import torch

from olacore.timing import progress as progress_bar

__all__ = ["run_in_processes", "by_value"]


def by_value(tensors: Sequence[torch.Tensor]) -> list[np.ndarray]:
    """CPU numpy copies of ``tensors`` (pickled by value); ``torch.as_tensor`` turns them back."""
    return [t.detach().cpu().numpy() for t in tensors]


def run_in_processes(function: Callable[[Any], Any], jobs: Sequence[Any], workers: int, *, progress: bool = True,
                     desc: str | None = None) -> list[Any]:
    """``[function(job) for job in jobs]``, in ``workers`` spawned processes, results in order.

    Args:
        function: a top-level function (worker processes import it by name).
        jobs: picklable arguments, one per call.
        workers: processes at once (at least 1).
        progress: a tqdm bar over finished jobs.
        desc: the bar's label.

    Returns:
        the results, in the order of ``jobs`` (an empty list, with no process started, when
        there is no job).

    Raises:
        ValueError: ``workers < 1``; any exception of a job is raised here.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    if not jobs:
        return []
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(progress_bar(pool.map(function, jobs), enabled=progress, total=len(jobs), desc=desc))
