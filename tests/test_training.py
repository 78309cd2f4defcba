"""olacore.training and olacore.workers.run_in_processes: jobs in worker processes, results in order; tensors travel by
value; scripts need no main guard."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from olacore.store import TensorStore
from olacore.training import by_value, run_cached
from olacore.workers import run_in_processes


def test_results_come_back_in_job_order():
    assert run_in_processes(math.sqrt, [16.0, 1.0, 9.0], workers=2, progress=False) == [4.0, 1.0, 3.0]
    assert run_in_processes(math.sqrt, [], workers=2, progress=False) == []


def test_by_value_round_trips_exactly():
    tensors = [torch.rand(3, 4, 4), torch.arange(5, dtype=torch.float64)]
    arrays = by_value(tensors)
    assert all(isinstance(a, np.ndarray) for a in arrays)
    for tensor, array in zip(tensors, arrays):
        assert torch.equal(torch.as_tensor(array), tensor)


# A toy job: fit a least-squares line by gradient descent (real training, tiny).
@dataclass
class LineFit:
    xs: np.ndarray
    ys: np.ndarray
    steps: int
    seed: int = 0

    def key(self) -> str:
        return TensorStore.key(kind="test-line", xs=self.xs.tolist(), ys=self.ys.tolist(), steps=self.steps, seed=self.seed)

    def train(self):
        torch.manual_seed(self.seed)
        weight = torch.randn(2, requires_grad=True)
        x, y = torch.as_tensor(self.xs), torch.as_tensor(self.ys)
        optimiser = torch.optim.SGD([weight], lr=0.1)
        for _ in range(self.steps):
            loss = ((weight[0] * x + weight[1] - y) ** 2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        return {"weight": weight.detach()}, {"loss": float(loss.detach())}


def _jobs():
    xs = np.linspace(-1, 1, 20)
    return [LineFit(xs, 3 * xs - 1, steps=200, seed=s) for s in (0, 1)] + [LineFit(xs, -xs, steps=200)]


def test_run_cached_trains_once_and_reads_back(tmp_path):
    store = TensorStore(tmp_path)
    first = run_cached(_jobs(), store=store, progress=False)
    assert all(job.key() in store for job in _jobs())
    torch.testing.assert_close(first[0][0]["weight"], torch.tensor([3.0, -1.0]), atol=1e-3, rtol=0)
    # a second call trains nothing: a job whose train() fails proves it
    broken = [LineFit(j.xs, j.ys, j.steps, j.seed) for j in _jobs()]
    for job in broken:
        job.train = lambda: (_ for _ in ()).throw(AssertionError("trained again"))  # noqa: B023
    again = run_cached(broken, store=store, progress=False)
    for (a, ra), (b, rb) in zip(first, again):
        assert torch.equal(a["weight"], b["weight"]) and ra == rb


def test_run_cached_two_workers_equal_one(tmp_path):
    one = run_cached(_jobs(), store=TensorStore(tmp_path / "one"), progress=False)
    two = run_cached(_jobs(), workers=2, store=TensorStore(tmp_path / "two"), progress=False)
    for (a, _), (b, _) in zip(one, two):
        assert torch.equal(a["weight"], b["weight"])
    with pytest.raises(ValueError, match="workers"):
        run_cached(_jobs(), workers=0)


def test_run_cached_survives_an_unwritable_store(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")  # root ignores permission bits
    with pytest.warns(UserWarning, match="OLACORE_CACHE"):
        (result,) = run_cached(_jobs()[:1], store=TensorStore(blocker / "tensors"), progress=False)
    torch.testing.assert_close(result[0]["weight"], torch.tensor([3.0, -1.0]), atol=1e-3, rtol=0)


@dataclass
class TinyConvFit:
    """A small convolutional network trained for a few SGD steps: its last bits depend on the thread count."""

    seed: int
    steps: int = 15

    def key(self) -> str:
        return TensorStore.key(kind="test-tiny-conv", seed=self.seed, steps=self.steps)

    def train(self):
        torch.manual_seed(self.seed)
        images, labels = torch.randn(32, 3, 16, 16), torch.randint(0, 5, (32,))
        network = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
                                      torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.AdaptiveAvgPool2d(1),
                                      torch.nn.Flatten(), torch.nn.Linear(16, 5))
        optimiser = torch.optim.SGD(network.parameters(), lr=0.1, momentum=0.9)
        for _ in range(self.steps):
            loss = torch.nn.functional.cross_entropy(network(images), labels)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        return dict(network.state_dict()), {"threads": torch.get_num_threads()}


def test_a_job_trains_on_the_same_threads_wherever_it_runs(tmp_path):
    """Issue #13: a job that trained in-process (the only one missing) used the caller's threads,
    one that trained in a worker used one thread, and the two gave other weights."""
    from olacore.training import TRAINING_THREADS

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        (here,) = run_cached([TinyConvFit(0)], store=TensorStore(tmp_path / "here"), progress=False)
        assert torch.get_num_threads() == 2  # the caller's setting is restored
    finally:
        torch.set_num_threads(before)
    in_workers = run_cached([TinyConvFit(0), TinyConvFit(1)], workers=2, store=TensorStore(tmp_path / "workers"),
                            progress=False)
    assert here[1]["threads"] == in_workers[0][1]["threads"] == TRAINING_THREADS
    for name, tensor in here[0].items():
        assert torch.equal(tensor, in_workers[0][0][name]), name


# ---- worker pools started from a user's script ----

UNGUARDED = """
import math
from olacore.workers import run_in_processes

print(run_in_processes(math.sqrt, [1.0, 4.0, 9.0, 16.0], 2, progress=False))
"""

GUARDED = """
import math
from olacore.workers import run_in_processes

if __name__ == "__main__":
    print(run_in_processes(math.sqrt, [1.0, 4.0, 9.0, 16.0], 2, progress=False))
"""


UNGUARDED_OWN_FUNCTION = """
import os
from olacore.workers import run_in_processes

def square_where(x):
    return x * x, os.getpid()

done = run_in_processes(square_where, [1, 2, 3, 4], 2, progress=False)
print([s for s, _ in done], "|", os.getpid(), "|", *sorted({p for _, p in done}))
"""


def _run_script(tmp_path, text: str) -> subprocess.CompletedProcess:
    script = tmp_path / "user_script.py"
    script.write_text(text)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)


def test_a_pool_from_an_unguarded_script_uses_the_workers(tmp_path):
    """loky's workers do not re-run the script's top level: no ``if __name__ == "__main__":`` is needed."""
    done = _run_script(tmp_path, UNGUARDED)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[1.0, 2.0, 3.0, 4.0]"
    assert "Warning" not in done.stderr and "Traceback" not in done.stderr


def test_a_pool_from_a_guarded_script_uses_the_workers(tmp_path):
    done = _run_script(tmp_path, GUARDED)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[1.0, 2.0, 3.0, 4.0]" and "Warning" not in done.stderr


def test_a_function_of_the_script_itself_runs_in_the_workers(tmp_path):
    done = _run_script(tmp_path, UNGUARDED_OWN_FUNCTION)
    assert done.returncode == 0, done.stderr[-2000:]
    squares, here, there = done.stdout.split("|")
    assert squares.strip() == "[1, 4, 9, 16]" and here.strip() not in there.split()


def test_a_worker_that_dies_is_one_error_in_the_parent():
    import os

    with pytest.raises(RuntimeError) as died:
        run_in_processes(os._exit, [3, 3], 2, progress=False)
    assert "workers=1" in str(died.value) and "\n" not in str(died.value)


@pytest.mark.slow
def test_cached_attention_from_an_unguarded_script_gives_the_maps(tmp_path):
    script = f"""
from olacore.pipeline import cached_attention
from olacore.store import TensorStore

texts = [f"Sentence number {{i}} of an unguarded script." for i in range(16)]
results = cached_attention("minilm-l6", texts, workers=2, device="cpu", progress=False,
                           store=TensorStore({str(tmp_path / "store")!r}))
print(len(results), sum(r.attentions.shape[-1] for r in results))
"""
    done = _run_script(tmp_path, script)
    assert done.returncode == 0, done.stderr[-2000:]
    from olacore.pipeline import cached_attention

    texts = [f"Sentence number {i} of an unguarded script." for i in range(16)]
    kept = cached_attention("minilm-l6", texts, workers=1, device="cpu", progress=False, store=TensorStore(tmp_path / "store"))
    fresh = cached_attention("minilm-l6", texts, workers=1, device="cpu", progress=False, store=TensorStore(tmp_path / "fresh"))
    assert done.stdout.split() == ["16", str(sum(r.attentions.shape[-1] for r in fresh))]
    assert all(torch.equal(a.attentions, b.attentions) for a, b in zip(kept, fresh))  # the script's maps, kept
