"""Cached training over worker processes: key, look up, train what is missing, store, read back.

A *job* (the visual proxy, a TOA adapter) is a picklable object that knows its store key and trains itself into named
tensors and a JSON record, on :data:`TRAINING_THREADS` torch thread(s) wherever it runs. Tensors in jobs should be
numpy arrays (:func:`by_value`).
"""

from __future__ import annotations

import warnings
from typing import Any, Protocol, Sequence

import numpy as np
import torch

from olacore.settings import COMPUTE_THREADS, CacheWriteError, fixed_threads
from olacore.store import CacheNotKeptWarning, TensorStore
from olacore.results import progress as progress_bar
from olacore.workers import run_in_processes

__all__ = ["TrainingJob", "Stored", "run_cached", "by_value", "TRAINING_THREADS"]

TRAINING_THREADS = COMPUTE_THREADS
"""Torch threads every job trains on, wherever it runs (results must not depend on the machine's cores)."""

Stored = tuple[dict[str, torch.Tensor], dict[str, Any]]
"""What a job trains into and the store keeps: ``(named tensors, JSON-serialisable record)``."""


class TrainingJob(Protocol):
    """One training run, as :func:`run_cached` needs it."""

    def key(self) -> str:
        """The store key: a :meth:`olacore.store.TensorStore.key` of everything that changes the result."""

    def train(self) -> Stored:
        """Train and return the tensors (weights) and the record (history, scores) to keep."""


def by_value(tensors: Sequence[torch.Tensor]) -> list[np.ndarray]:
    """CPU numpy copies of ``tensors`` (pickled by value); ``torch.as_tensor`` turns them back."""
    return [t.detach().cpu().numpy() for t in tensors]


def _train(job: TrainingJob) -> Stored:
    with fixed_threads(TRAINING_THREADS):
        return job.train()


def _train_and_store(item: tuple[TrainingJob, str, str]) -> Stored | None:
    """Train one job and store it under the caller's key; return the result only when the store could not keep it."""
    job, key, root = item
    tensors, record = _train(job)
    try:
        TensorStore(root).put(key, tensors, record)
    except CacheWriteError as error:
        warnings.warn(CacheNotKeptWarning(f"{error} The run is used, but not kept."), stacklevel=2)
        return {name: t.detach().cpu() for name, t in tensors.items()}, record
    return None


def run_cached(jobs: Sequence[TrainingJob], *, workers: int = 1, store: TensorStore | None = None,
               progress: bool = True, desc: str = "training") -> list[Stored]:
    """Every job's result, from the store where it is there, trained (and stored) where it is not.

    Jobs with equal keys train once, in ``workers`` worker processes (here, in order, with ``workers == 1``). A store
    that cannot be written gives a warning and the fresh result; on a Dask cluster of other machines the store must
    be a shared folder.

    Returns:
        ``(tensors, record)`` per job, in the order of ``jobs``; tensors on the CPU.

    Raises:
        ValueError: ``workers < 1``; any exception a job raises while training.
        olacore.workers.WorkerDied: a worker process died (killed for memory, say).
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    store = store if store is not None else TensorStore()
    keys = [job.key() for job in jobs]
    missing: dict[str, TrainingJob] = {}
    for key, job in zip(keys, jobs):
        if key not in missing and key not in store:
            missing[key] = job
    items = [(job, key, str(store.root)) for key, job in missing.items()]
    if workers > 1 and len(items) > 1:
        unkept = run_in_processes(_train_and_store, items, min(workers, len(items)), progress=progress, desc=desc)
    else:
        unkept = [_train_and_store(item) for item in progress_bar(items, enabled=progress and bool(items), desc=desc)]
    fresh = {key: result for key, result in zip(missing, unkept) if result is not None}
    results = []
    for key, job in zip(keys, jobs):
        stored = fresh.get(key) or store.get(key)
        if stored is None:  # deleted or corrupted since it was written: train it here, once more
            fresh[key] = stored = _train(job)
            store.put_or_warn(key, *stored)
        results.append(stored)
    return results
