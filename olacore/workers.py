"""Work spread over worker processes that live across calls: per-text computations (attention, ALTI), training jobs.

Workers are joblib's loky processes (each keeping the last model it loaded), or a Dask cluster's (joblib's Dask
backend, or ``$OLACORE_DASK_SCHEDULER``). Every job computes on :data:`olacore.settings.COMPUTE_THREADS` thread(s)
with the caller's ``OLACORE_*``, ``HF_*`` and ``TRANSFORMERS_*`` environment, so a result has the bits it would have
in the calling process.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import gc
import os
import re
import sys
import threading
from typing import Any, Callable, Sequence

import joblib
import numpy as np
import torch

from olacore.loading import LoadedModel
from olacore.settings import COMPUTE_THREADS, cpu_workers, env_text, resolve_device
from olacore.results import progress as progress_bar

__all__ = ["run_in_processes", "per_text", "kept", "shutdown", "WorkerDied", "IDLE_SECONDS", "DASK_ENV"]

IDLE_SECONDS = 900
"""Seconds a loky worker waits for work before it stops (keeps the model through a chapter's gaps)."""

DASK_ENV = "OLACORE_DASK_SCHEDULER"
"""Environment variable: the address of a Dask scheduler to run the workers' jobs on (unset: loky on this machine)."""

TEXTS_PER_WORKER = 4
""":func:`per_text` computes in the calling process when there are fewer texts than this per worker."""

_CLIENTS: dict[str, Any] = {}


class WorkerDied(RuntimeError):
    """A worker process died (killed for memory, a crash in native code) before its jobs finished.

    Attributes:
        unfinished: indices of the jobs whose result did not come back (the one that killed the worker among them).
    """

    def __init__(self, message: str, unfinished: list[int]):
        super().__init__(message)
        self.unfinished = unfinished


def shutdown() -> None:
    """Stop this process's loky workers now, if any; the next call starts new ones."""
    from joblib.externals.loky import reusable_executor

    executor = reusable_executor._executor
    if executor is not None:
        executor.shutdown(wait=True)


def _dask_client(address: str):
    """A ``dask.distributed.Client`` of the scheduler at ``address``, kept for the process while it is connected."""
    if not re.fullmatch(r"[a-z][a-z0-9+]*://[^/\s:]+:[0-9]{1,5}", address):
        raise ValueError(f"${DASK_ENV}={address!r} is not a scheduler address; give one as tcp://host:8786, or unset "
                         f"{DASK_ENV} to use this machine's processes")
    if address not in _CLIENTS or _CLIENTS[address].status != "running":
        try:
            from dask.distributed import Client
        except ImportError:
            raise ModuleNotFoundError(f"${DASK_ENV}={address} asks for a Dask cluster, but dask.distributed is not "
                                      "installed; pip install 'dask[distributed]', or unset "
                                      f"{DASK_ENV} to use this machine's processes") from None
        try:
            _CLIENTS[address] = Client(address, timeout="10s", set_as_default=False)
        except Exception as error:  # refused, timed out, or not a Dask scheduler that answered
            raise RuntimeError(f"${DASK_ENV}={address}: no Dask scheduler answers there ({type(error).__name__}: "
                               f"{str(error).splitlines()[0] if str(error) else 'no reply'}); start one there "
                               f"(dask scheduler) or unset {DASK_ENV} to use this machine's processes") from None
    return _CLIENTS[address]


def _backend() -> contextlib.AbstractContextManager:
    """Where jobs run: the caller's ``joblib.parallel_config``, else ``$OLACORE_DASK_SCHEDULER``, else loky."""
    from joblib._parallel_backends import LokyBackend

    active, _ = joblib.parallel.get_active_backend()
    if not isinstance(active, LokyBackend):
        return contextlib.nullcontext()
    address = env_text(DASK_ENV)
    if address is not None:
        return joblib.parallel_config(backend="dask", client=_dask_client(address))
    return joblib.parallel_config(backend="loky", inner_max_num_threads=COMPUTE_THREADS)


def _died(error: BaseException) -> bool:
    """``error`` says a worker process died (loky's pool broke, or Dask gave up on a task whose workers died)."""
    from joblib.externals.loky.process_executor import BrokenProcessPool

    if isinstance(error, BrokenProcessPool):
        return True
    distributed = sys.modules.get("distributed")
    return distributed is not None and isinstance(error, distributed.KilledWorker)


#: Environment variables that change what a job computes or where it stores: they travel with every job.
_TRAVELLING = ("OLACORE_", "HF_", "TRANSFORMERS_")


def _indexed(function: Callable[[Any], Any], index: int, job: Any, environment: dict[str, str]) -> tuple[int, Any]:
    """Run one job with the caller's environment (:data:`_TRAVELLING` variables set or removed as there)."""
    for name in [k for k in os.environ if k.startswith(_TRAVELLING) and k not in environment]:
        del os.environ[name]
    os.environ.update(environment)
    return index, function(job)


def run_in_processes(function: Callable[[Any], Any], jobs: Sequence[Any], workers: int, *, progress: bool = True,
                     desc: str | None = None) -> list[Any]:
    """``[function(job) for job in jobs]`` in ``workers`` worker processes that outlive the call, results in order.

    Raises:
        WorkerDied: a worker process died (killed for memory, say): one line naming ``desc`` and the jobs unfinished.
        Any exception a job raises, raised here.
    """
    if not jobs:
        return []
    done: dict[int, Any] = {}
    environment = {k: v for k, v in os.environ.items() if k.startswith(_TRAVELLING)}
    calls = (joblib.delayed(_indexed)(function, i, job, environment) for i, job in enumerate(jobs))
    try:
        with _backend():
            parallel = joblib.Parallel(n_jobs=workers, return_as="generator_unordered", batch_size=1,
                                       max_nbytes=None, idle_worker_timeout=IDLE_SECONDS)
            for index, result in progress_bar(parallel(calls), enabled=progress, total=len(jobs), desc=desc):
                done[index] = result
    except Exception as error:
        if not _died(error):
            raise
        unfinished = [i for i in range(len(jobs)) if i not in done]
        raise WorkerDied(f"a worker process of {desc or 'the pool'} died before it finished (killed for memory?) with "
                         f"{len(unfinished)} of {len(jobs)} jobs unfinished; run with workers=1 to see the error "
                         "here", unfinished) from error
    return [done[i] for i in range(len(jobs))]


# ---- per_text: a model's texts over the workers, each worker keeping the model it loaded ----

_MODEL_LOCK = threading.Lock()
_KEPT: dict[tuple[str, str, str], LoadedModel] = {}


def kept(key: tuple, load: Callable[[], Any]) -> Any:
    """``load()``'s object for ``key``, kept in this process for the next job; one at a time (a worker holds at most
    one model)."""
    with _MODEL_LOCK:
        if key not in _KEPT:
            if _KEPT:  # free what the let-go model held and hand glibc's free heap back to the system
                _KEPT.clear()
                gc.collect()
                with contextlib.suppress(OSError, AttributeError):  # not glibc (macOS, musl): the process reuses it
                    ctypes.CDLL("libc.so.6").malloc_trim(0)
            _KEPT[key] = load()
        return _KEPT[key]


def _worker_model(name: str, device: str, fingerprint: str) -> LoadedModel:
    """The model ``name`` on ``device``, kept for the next job; refuses one whose fingerprint is not the caller's."""
    from olacore.loading import load_model

    model = kept(("backbone", name, device, fingerprint), lambda: load_model(name, device=device))
    if model.fingerprint != fingerprint:
        raise RuntimeError(f"a worker loaded {name!r} as {model.fingerprint}, the caller as {fingerprint}; run with "
                           "workers=1")
    return model


def _by_value(item: Any, to_numpy: bool) -> Any:
    """A dataclass result with its tensors as numpy arrays (to travel between processes) or back."""
    kind, convert = (torch.Tensor, torch.Tensor.numpy) if to_numpy else (np.ndarray, torch.from_numpy)
    values = {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
    return dataclasses.replace(item, **{name: convert(value) for name, value in values.items()
                                        if isinstance(value, kind)})


def _run_on_texts(job: tuple) -> list[Any]:
    """One share of :func:`per_text` in a worker; a refusal naming ``texts[i]`` names the caller's index."""
    compute, name, device, fingerprint, texts, indices = job
    try:
        results = compute(_worker_model(name, device, fingerprint), texts, progress=False)
    except (ValueError, MemoryError) as error:
        message = re.sub(r"texts\[(\d+)\]", lambda m: f"texts[{indices[int(m[1])]}]", str(error))
        raise type(error)(message) from None
    return [_by_value(r, to_numpy=True) for r in results]


def _shares(texts: Sequence[str], workers: int) -> list[list[int]]:
    """Indices of ``texts`` in up to ``4 * workers`` shares of neighbours in length order, longest first, cut at about
    equal sums of characters."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    weights = np.cumsum([len(texts[i]) for i in order])
    pieces = min(len(texts), 4 * workers)
    cuts = np.searchsorted(weights, weights[-1] * np.arange(1, pieces) / pieces, side="right")
    bounds = [0, *sorted(set(int(c) for c in cuts) - {0, len(texts)}), len(texts)]
    return [order[a:b] for a, b in zip(bounds, bounds[1:])]


def _texts_named(indices: Sequence[int], texts: Sequence[str], shown: int = 8) -> str:
    """``texts[2] 'The cat sat...', texts[7] '...' and 4 more`` (one line)."""
    def quoted(i: int) -> str:
        line = " ".join(texts[i].split())
        return f"texts[{i}] {line[:40] + '...' if len(line) > 40 else line!r}"

    named = ", ".join(quoted(i) for i in indices[:shown])
    return named + (f" and {len(indices) - shown} more" if len(indices) > shown else "")


def per_text(compute: Callable[..., list[Any]], model: LoadedModel | str, texts: Sequence[str], *,
             device: str | torch.device | None = None, workers: int | None = None, progress: bool = True) -> list[Any]:
    """``compute(loaded_model, texts, progress=...)`` spread over processes; results in the order of ``texts``.

    On a CPU the texts are split over ``workers`` processes (default :func:`olacore.settings.cpu_workers`); a
    :class:`~olacore.loading.LoadedModel`, a GPU, few texts or ``workers < 2`` compute in this process.

    Raises:
        WorkerDied: a worker process died: one line naming ``compute``, the model and the texts it had not finished.
        Any exception ``compute`` raises (a text named by its index in ``texts``).
    """
    from olacore.loading import load_model, model_fingerprint  # looked up at the call: tests replace load_model

    texts = list(texts)
    workers = cpu_workers(device) if workers is None else workers
    if isinstance(model, LoadedModel) or resolve_device(device).type != "cpu" or workers < 2 \
            or len(texts) < TEXTS_PER_WORKER * workers:
        loaded = model if isinstance(model, LoadedModel) else load_model(model, device=device)
        return compute(loaded, texts, progress=progress)
    shares = _shares(texts, workers)
    fingerprint = model_fingerprint(model)
    jobs = [(compute, model, str(resolve_device(device)), fingerprint, [texts[i] for i in share], share)
            for share in shares]
    try:
        done = run_in_processes(_run_on_texts, jobs, workers, progress=progress, desc=f"{compute.__name__} {model}")
    except WorkerDied as died:
        unfinished = sorted(i for job in died.unfinished for i in shares[job])
        raise WorkerDied(f"a worker process computing {compute.__name__} of {model!r} died (killed for memory?) "
                         f"on one of {len(unfinished)} texts: {_texts_named(unfinished, texts)}; run with "
                         "workers=1 to see the error here", unfinished) from died
    results: list[Any] = [None] * len(texts)
    for share, items in zip(shares, done):
        for index, item in zip(share, items):
            results[index] = _by_value(item, to_numpy=False)
    return results
