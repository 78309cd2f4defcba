"""olacore.workers: workers that live across calls (loky), the same jobs on a Dask cluster, equal bits everywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from olacore.settings import COMPUTE_THREADS, fixed_threads
from olacore.workers import DASK_ENV, WorkerDied, _shares, per_text, run_in_processes

SENTENCES = [
    "It was the best of times, it was the worst of times.",
    "Call me Ishmael.",
    "All happy families are alike; each unhappy family is unhappy in its own way.",
    "The sky above the port was the color of television, tuned to a dead channel.",
    "In a hole in the ground there lived a hobbit.",
    "It was a bright cold day in April, and the clocks were striking thirteen.",
    "Happy families are all alike.",
    "The man in black fled across the desert, and the gunslinger followed.",
    "Many years later, as he faced the firing squad, Colonel Aureliano Buendia was to remember that distant "
    "afternoon when his father took him to discover ice.",
    "A screaming comes across the sky.",
    "Mother died today.",
    "You don't know about me without you have read a book by the name of The Adventures of Tom Sawyer.",
    "The past is a foreign country; they do things differently there.",
    "I am an invisible man.",
    "Whether I shall turn out to be the hero of my own life, or whether that station will be held by anybody else, "
    "these pages must show.",
    "It is a truth universally acknowledged that a single man in possession of a good fortune must be in want of "
    "a wife.",
]


def _where(_job) -> int:
    return os.getpid()


def _threads_set(count: int) -> tuple[int, int]:
    """Torch's thread count inside ``fixed_threads(count)`` and inside ``fixed_threads()`` (the compute setting)."""
    with fixed_threads(count):
        inside = torch.get_num_threads()
    with fixed_threads():
        return inside, torch.get_num_threads()


def test_workers_live_across_calls():
    first = set(run_in_processes(_where, list(range(6)), 2, progress=False))
    second = set(run_in_processes(_where, list(range(6)), 2, progress=False))
    assert os.getpid() not in first | second
    assert first & second  # a process of the first call did work in the second


def test_a_worker_computes_on_the_threads_the_code_sets():
    """loky limits the libraries' threads in its workers; torch still takes the count the code sets."""
    for inside, compute in run_in_processes(_threads_set, [2, 3], 2, progress=False):
        assert compute == COMPUTE_THREADS
    assert [inside for inside, _ in run_in_processes(_threads_set, [2, 3], 2, progress=False)] == [2, 3]


def _environment_variable(name: str) -> str | None:
    return os.environ.get(name)


def test_the_callers_environment_travels_with_every_job(monkeypatch):
    """A worker started earlier computes with the settings of the call, not of its start."""
    name = "OLACORE_ATTENTION_GB"
    monkeypatch.setenv(name, "4")
    assert run_in_processes(_environment_variable, [name] * 4, 2, progress=False) == ["4"] * 4
    monkeypatch.setenv(name, "8")
    assert run_in_processes(_environment_variable, [name] * 4, 2, progress=False) == ["8"] * 4
    monkeypatch.delenv(name)
    assert run_in_processes(_environment_variable, [name] * 4, 2, progress=False) == [None] * 4


@pytest.mark.slow
def test_a_text_refused_in_a_worker_is_named_by_its_index_in_the_callers_list():
    from olacore.extraction import extract_attention

    texts = SENTENCES[:9] + ["word " * 600]
    with pytest.raises(ValueError, match=r"texts\[9\].*context"):
        per_text(extract_attention, "minilm-l6", texts, device="cpu", workers=2, progress=False)


def test_a_call_after_a_worker_died_gets_new_workers():
    with pytest.raises(RuntimeError) as died:
        run_in_processes(os._exit, [3, 3], 2, progress=False, desc="exits")
    assert "exits" in str(died.value) and "\n" not in str(died.value)
    assert run_in_processes(abs, [-1, -2, -3], 2, progress=False) == [1, 2, 3]


@pytest.mark.parametrize("lengths, workers", [([5] * 16, 2), (list(range(1, 40)), 3), ([100, 1, 1, 1, 1, 1, 1, 1], 2),
                                              ([3, 3, 3, 3, 7, 7, 7, 7, 1, 1], 2)])
def test_shares_cover_every_text_once_in_runs_of_length_order(lengths, workers):
    texts = ["x" * n for n in lengths]
    shares = _shares(texts, workers)
    assert sorted(i for share in shares for i in share) == list(range(len(texts)))
    assert all(share for share in shares) and len(shares) <= 4 * workers
    flat = [len(texts[i]) for share in shares for i in share]
    assert flat == sorted(flat, reverse=True)  # neighbours in length order: equal lengths stay together


# ---- per_text on a real model ----

def _attention_or_die(model, texts, progress=True):
    """extract_attention, but the worker process exits on a text holding 'poison'."""
    from olacore.extraction import extract_attention

    if any("poison" in text for text in texts):
        os._exit(3)
    return extract_attention(model, texts, progress=progress)


@pytest.fixture(scope="module")
def here():
    from olacore.extraction import extract_attention
    from olacore.loading import load_model

    return extract_attention(load_model("minilm-l6", device="cpu"), SENTENCES, progress=False)


def _same(a, b) -> bool:
    return a.tokens == b.tokens and a.offsets == b.offsets and torch.equal(a.attentions, b.attentions)


@pytest.mark.slow
def test_per_text_in_living_workers_equals_the_calling_process(here):
    from olacore.extraction import extract_attention

    for _ in range(2):  # the second call finds the workers and their model loaded
        there = per_text(extract_attention, "minilm-l6", SENTENCES, device="cpu", workers=2, progress=False)
        assert all(_same(a, b) for a, b in zip(here, there, strict=True))
    reversed_there = per_text(extract_attention, "minilm-l6", SENTENCES[::-1], device="cpu", workers=2, progress=False)
    assert all(_same(a, b) for a, b in zip(here[::-1], reversed_there, strict=True))


@pytest.mark.slow
def test_a_worker_that_dies_in_per_text_is_named_with_its_model_and_texts():
    texts = SENTENCES[:7] + ["This poison sentence kills its worker."]
    with pytest.raises(WorkerDied) as died:
        per_text(_attention_or_die, "minilm-l6", texts, device="cpu", workers=2, progress=False)
    message = str(died.value)
    assert "\n" not in message and "minilm-l6" in message and "texts[7]" in message and "workers=1" in message


# ---- the same code on a Dask cluster ----

class LineFit:
    """A least-squares line fitted by gradient descent (real training, tiny)."""

    def __init__(self, seed: int):
        self.seed = seed

    def key(self) -> str:
        from olacore.store import TensorStore

        return TensorStore.key(kind="test-workers-line", seed=self.seed)

    def train(self):
        torch.manual_seed(self.seed)
        x = torch.linspace(-1, 1, 20, dtype=torch.float64)
        weight = torch.randn(2, dtype=torch.float64, requires_grad=True)
        optimiser = torch.optim.SGD([weight], lr=0.1)
        for _ in range(50):
            loss = ((weight[0] * x + weight[1] - (3 * x - 1)) ** 2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        return {"weight": weight.detach()}, {"threads": torch.get_num_threads()}


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("dask.distributed")
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Dask's workers cannot import this test module
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.mark.slow
def test_per_text_and_training_on_a_dask_cluster_equal_the_local_run(dask_client, here, tmp_path):
    import joblib

    from olacore.extraction import extract_attention
    from olacore.store import TensorStore
    from olacore.training import run_cached

    jobs = [LineFit(seed) for seed in (0, 1, 2)]
    local = run_cached(jobs, workers=2, store=TensorStore(tmp_path / "local"), progress=False)
    pids = set(dask_client.run(os.getpid).values())
    with joblib.parallel_config(backend="dask"):
        assert set(run_in_processes(_where, list(range(8)), 2, progress=False)) <= pids
        there = per_text(extract_attention, "minilm-l6", SENTENCES, device="cpu", workers=2, progress=False)
        trained = run_cached(jobs, workers=2, store=TensorStore(tmp_path / "dask"), progress=False)
    assert all(_same(a, b) for a, b in zip(here, there, strict=True))
    for (a, record_a), (b, record_b) in zip(local, trained, strict=True):
        assert torch.equal(a["weight"], b["weight"]) and record_a == record_b == {"threads": COMPUTE_THREADS}


@pytest.mark.slow
def test_the_dask_scheduler_named_by_the_environment_runs_the_jobs(dask_client, monkeypatch):
    from olacore import workers

    monkeypatch.setenv(DASK_ENV, dask_client.scheduler.address)
    pids = set(dask_client.run(os.getpid).values())
    assert set(run_in_processes(_where, list(range(8)), 2, progress=False)) <= pids
    workers._CLIENTS.pop(dask_client.scheduler.address).close()  # before the cluster goes (no reconnection noise)


def test_an_unreachable_dask_scheduler_is_one_line(monkeypatch):
    pytest.importorskip("dask.distributed")
    monkeypatch.setenv(DASK_ENV, "tcp://127.0.0.1:9")  # the discard port: nothing listens
    with pytest.raises(RuntimeError) as refused:
        run_in_processes(abs, [-1, -2], 2, progress=False)
    assert DASK_ENV in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("address", ["garbage", "127.0.0.1", "tcp://127.0.0.1", "tcp://host:port"])
def test_a_malformed_dask_address_is_one_line_giving_the_form(monkeypatch, address):
    monkeypatch.setenv(DASK_ENV, address)
    with pytest.raises(ValueError) as refused:
        run_in_processes(abs, [-1, -2], 2, progress=False)
    assert DASK_ENV in str(refused.value) and "tcp://host:8786" in str(refused.value)


def test_dask_not_installed_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    monkeypatch.setenv(DASK_ENV, "tcp://127.0.0.1:8786")
    with pytest.raises(ModuleNotFoundError) as missing:
        run_in_processes(abs, [-1, -2], 2, progress=False)
    assert "dask[distributed]" in str(missing.value) and "\n" not in str(missing.value)


def test_results_travel_by_value():
    arrays = run_in_processes(np.arange, [3, 4], 2, progress=False)
    assert [a.tolist() for a in arrays] == [[0, 1, 2], [0, 1, 2, 3]]


def _chapter(chapter: str, root: Path, env: dict[str, str]) -> list:
    """Execute ``chapter`` at profile=smoke with an empty tensor cache of its own (the built models shared by a link);
    return its recorded numbers."""
    from conftest import ROOT
    from olacore.settings import cache_dir

    cache = root / "cache"
    cache.mkdir(parents=True)
    (cache / "models").symlink_to(cache_dir("models"), target_is_directory=True)
    env = {**os.environ, "OLACORE_CACHE": str(cache), "PYTHONPATH": str(ROOT), **env}
    command = [sys.executable, str(ROOT / "scripts" / "execute_notebooks.py"), str(ROOT / "notebooks" / f"{chapter}.py"),
               "--profile", "smoke", "--out", str(root / "out"), "--force"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads((root / "out" / "results" / f"{chapter}.json").read_text())["records"]


@pytest.mark.slow
def test_chapter_04_on_a_dask_cluster_records_the_numbers_of_a_local_run(dask_client, tmp_path):
    """Chapter 04 extracts maps (per_text) and trains proxies (run_cached) with workers; with
    $OLACORE_DASK_SCHEDULER set its kernel sends them to the cluster."""
    from distributed import get_task_stream

    local = _chapter("04_proxy", tmp_path / "local", {})
    with get_task_stream(client=dask_client) as stream:
        on_dask = _chapter("04_proxy", tmp_path / "dask", {DASK_ENV: dask_client.scheduler.address})
    assert stream.data, "no job of the chapter ran on the cluster"
    assert on_dask == local


def _spin(seconds: float) -> int:
    import time

    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return os.getpid()


def test_cpu_seconds_count_workers_while_they_live_and_after_they_stop():
    """The stopwatch and the runner read CPU seconds of workers that outlive the call (olacore.results.cpu_seconds)."""
    from olacore.results import cpu_seconds
    from olacore.workers import shutdown

    start = cpu_seconds()
    run_in_processes(_spin, [0.5, 0.5], 2, progress=False)
    assert cpu_seconds() - start >= 1.0  # the workers' spinning, read while they live
    shutdown()
    assert cpu_seconds() - start >= 1.0  # and once they are stopped and reaped
