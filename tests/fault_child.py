"""A child process for tests/test_faults.py: writes a cache entry, builds a zoo model, trains a job.

    python tests/fault_child.py ACTION ARGS...   (with PYTHONPATH at the repository root)

With ``OLACORE_TEST_PAUSE=<file>`` the child stops in the middle of its write (after half of
a cache entry's bytes, or after the first files of a model build), creates ``<file>`` to say
so, and sleeps until the test kills it (SIGKILL). With ``OLACORE_TEST_BUILD_LOG=<file>`` every
zoo build appends a line to ``<file>`` (two processes must build once). Results are printed
as one JSON line on stdout.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

import torch

torch.set_num_threads(1)
PAUSE = os.environ.get("OLACORE_TEST_PAUSE")
BUILD_LOG = os.environ.get("OLACORE_TEST_BUILD_LOG")
TEXTS = ["The cat sat on the mat.", "Order-level attention is shared across models.", "A third short text."]


def _pause() -> None:
    Path(PAUSE).write_text(str(os.getpid()))
    time.sleep(600)  # until SIGKILL


def entry_tensors(seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {"attentions": torch.rand(6, 64, 64, generator=generator), "ids": torch.arange(64)}


def digest(tensors: dict[str, torch.Tensor]) -> str:
    from olacore.store import tensor_digest

    return hashlib.sha256("".join(tensor_digest(tensors[name]) for name in sorted(tensors)).encode()).hexdigest()


def _pause_mid_cache_write() -> None:
    """Make the next cache-entry write stop after half of its bytes (os.fdopen is the store's writer)."""
    real_fdopen = os.fdopen

    def fdopen(fd, *args, **kwargs):
        handle = real_fdopen(fd, *args, **kwargs)
        real_write = handle.write

        def write(data):
            real_write(data[: len(data) // 2])
            handle.flush()
            _pause()

        handle.write = write
        return handle

    os.fdopen = fdopen


def put(root: str, seed: str) -> None:
    from olacore.store import TensorStore

    if PAUSE:
        _pause_mid_cache_write()
    store = TensorStore(root)
    tensors = entry_tensors(int(seed))
    store.put(store.key(test="fault", seed=int(seed)), tensors, {"seed": int(seed)})
    print(json.dumps({"digest": digest(tensors)}))


def register_zip_model(parts_dir: str) -> str:
    """The split-zip zoo entry of tests/test_zoo_build.py, built from MiniLM's files in ``parts_dir``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import build_zoo
    from olacore.zoo import ZOO

    parts = sorted(Path(parts_dir).glob("archive.zip.*"))
    spec = dataclasses.replace(ZOO["mpnet-base"], name="fault-zip", kind="encoder", inner="inner",
                               sha256=Path(parts_dir, "sha256").read_text().strip(), num_layers=6, num_heads=12)
    ZOO["fault-zip"] = spec
    real_locate = build_zoo.installed_files
    build_zoo.installed_files = lambda s: list(parts) if s.name == "fault-zip" else real_locate(s)
    real_build = build_zoo._build_zip

    def build_zip(spec, paths, build):
        start = time.time()
        result = real_build(spec, paths, build)
        if BUILD_LOG:  # a slow build, so that a second process surely arrives while it runs
            time.sleep(5)
            with open(BUILD_LOG, "a") as log:
                log.write(f"{os.getpid()} {start} {time.time()}\n")
        return result

    build_zoo._build_zip = build_zip
    if PAUSE:  # stop after the first extracted files of the model folder
        real_copy = shutil.copyfileobj
        copied = []

        def copyfileobj(source, sink, length=0):
            real_copy(source, sink, length)
            copied.append(1)
            if len(copied) == 2:
                sink.flush()
                _pause()

        shutil.copyfileobj = copyfileobj
    return "fault-zip"


def build(parts_dir: str) -> None:
    """Build (or read) the zoo model, extract attention of TEXTS, write it to the cache."""
    from olacore.pipeline import cached_attention

    name = register_zip_model(parts_dir)  # puts scripts/ on the path
    import build_zoo

    entered = time.time()
    build_zoo.build(name)  # as `make models` would, before the model is read
    results = cached_attention(name, TEXTS, device="cpu", progress=False)
    print(json.dumps({"digest": digest({str(i): r.attentions for i, r in enumerate(results)}), "entered": entered}))


def extract(model: str) -> None:
    """cached_attention of TEXTS into $OLACORE_CACHE (two of these run at once)."""
    from olacore.pipeline import cached_attention

    results = cached_attention(model, TEXTS, device="cpu", progress=False)
    print(json.dumps({"digest": digest({str(i): r.attentions for i, r in enumerate(results)})}))


def train(root: str) -> None:
    """run_cached of two small jobs (tests/test_training.py's TinyConvFit) into ``root``."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_training import TinyConvFit

    from olacore.store import TensorStore
    from olacore.training import run_cached

    if PAUSE:
        _pause_mid_cache_write()
    results = run_cached([TinyConvFit(0), TinyConvFit(1)], store=TensorStore(root), progress=False)
    print(json.dumps({"digest": digest({f"{i}.{k}": t for i, (ts, _) in enumerate(results) for k, t in ts.items()})}))


if __name__ == "__main__":
    action, *arguments = sys.argv[1:]
    {"put": put, "build": build, "extract": extract, "train": train}[action](*arguments)
