"""A chapter re-run from a cold cache gives identical numbers (issue #13).

Two runs of chapters 03 and 04 (retrieval, the visual proxy) at profile=smoke, each with its own
empty tensor cache (the built zoo models are shared by a link): one cold, on one thread; one after
chapter 02 has cached some of the same texts (so chapter 03 extracts the rest in other batches), on
two threads. Every cache entry of the cold run (attention, OLA, ALTI where used, every trained proxy
run) must be in the other run, bit for bit, and the chapters' recorded numbers must be equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from olacore.settings import cache_dir


def _run(chapters: list[str], out: Path, cache: Path, threads: int) -> None:
    cache.mkdir(parents=True)
    (cache / "models").symlink_to(cache_dir("models"), target_is_directory=True)
    env = {**os.environ, "OLACORE_CACHE": str(cache), "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(ROOT / "scripts" / "execute_notebooks.py"), *[str(ROOT / "notebooks" / f"{c}.py")
                                                                                for c in chapters],
               "--profile", "smoke", "--out", str(out), "--force"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _entries(cache: Path) -> dict[str, Path]:
    return {path.stem: path for path in (cache / "tensors").rglob("*.safetensors")}


@pytest.mark.slow
def test_chapters_03_04_from_a_cold_cache_equal_a_staged_run_bit_for_bit(tmp_path):
    from safetensors.torch import load_file

    _run(["03_retrieval", "04_proxy"], tmp_path / "cold" / "out", tmp_path / "cold" / "cache", threads=1)
    _run(["02_qualitative", "03_retrieval", "04_proxy"], tmp_path / "staged" / "out", tmp_path / "staged" / "cache",
         threads=2)
    cold, staged = _entries(tmp_path / "cold" / "cache"), _entries(tmp_path / "staged" / "cache")
    assert cold, "the cold run cached nothing"
    missing = sorted(set(cold) - set(staged))
    assert not missing, f"{len(missing)} of {len(cold)} entries of the cold run have other keys in the staged run"
    for key, path in cold.items():
        a, b = load_file(path), load_file(staged[key])
        assert a.keys() == b.keys() and all(a[name].equal(b[name]) for name in a), f"entry {key} differs"
    for chapter in ("03_retrieval", "04_proxy"):
        results = [json.loads((tmp_path / run / "out" / "results" / f"{chapter}.json").read_text())["records"]
                   for run in ("cold", "staged")]
        assert results[0] == results[1], chapter
