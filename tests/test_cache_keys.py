"""Code-aware cache keys: every cached result's key holds a digest of the code that computes it (the package's, or
the chapters' own in ``notebooks/chapter_code``), and the device type it was computed on.

The package and ``notebooks/chapter_code`` are copied to a temporary folder, one module edited there, and the key of
one job of each kind computed in a fresh process with that copy on ``PYTHONPATH``. A change to the code changes
exactly the keys of the jobs that run that module (the expectations below say which, from what each job does); a
docstring or comment edit changes none. No model is loaded: keys are made from fixed fingerprints and small arrays.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "olacore"
COPIED = ("olacore", "notebooks/chapter_code")  # the folders whose code the keys digest

# One job of each kind, its key printed as JSON; run with the copy on PYTHONPATH.
KEYS = r'''
import json, sys
import numpy as np
import olacore
import chapter_code.zeroshot
from olacore.pipeline import ALTI, ATTENTION, OLA
from olacore.proxy import OfficialProxyJob, OfficialQuirks, ProxyConfig, ProxyJob
from olacore.augment import VISUAL_PROXY
from olacore.store import TensorStore
from olacore.toa.data import InputSpec
from olacore.toa.model import AdapterConfig
from olacore.toa.train import AdapterJob, TrainConfig
from chapter_code.zeroshot import answer_keys

device = sys.argv[1]
maps = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
store = TensorStore("/nonexistent-never-written")
adapter = AdapterJob(
    task="pos", spec=InputSpec(("order1",)), adapter=AdapterConfig(), training=TrainConfig(epochs=1, device=device),
    vocab=("NOUN", "VERB"), causal=False, train_raw=[maps[0, :1]], train_targets=[{"labels": np.zeros(4, np.int64)}],
    dev_raw=[maps[1, :1]], dev_targets=[{"labels": np.ones(4, np.int64)}], dev_items=[])
keys = {
    "attention": ATTENTION.keys("zoo:test:1", ["A short text."], device)[0],
    "ola": OLA.keys("zoo:test:1", ["A short text."], device)[0],
    "alti": ALTI.keys("zoo:test:1", ["A short text."], device)[0],
    "proxy": ProxyJob([maps], maps, ProxyConfig(iterations=10), 0, device).key(),
    "official proxy": OfficialProxyJob([[maps[0]]], [[maps[1]]], True, ProxyConfig(iterations=10), OfficialQuirks(),
                                       50, VISUAL_PROXY, 0, device).key(),
    "adapter": adapter.key(),
    "answer": answer_keys(store, "zoo:test:1", "re", "chat", ["prompt"], ["text"], device=device)[0],
}
print(json.dumps({"files": [olacore.__file__, chapter_code.zeroshot.__file__], "keys": keys}))
'''

KINDS = ("attention", "ola", "alti", "proxy", "official proxy", "adapter", "answer")


def _keys(root: Path, device: str = "cpu") -> dict[str, str]:
    """The key of each job kind, computed in a fresh process that imports the copy under ``root``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "notebooks")]), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", KEYS, device], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(Path(file).resolve().is_relative_to(root.resolve()) for file in out["files"])  # the copy, not the tree
    return out["keys"]


def _copy(tmp_path: Path, name: str, module: str | None = None, changes=()) -> Path:
    """A copy of :data:`COPIED` under ``tmp_path / name``, with ``(old, new)`` replacements (each ``old`` there
    once; ``old`` ``None``: ``new`` appended) made in ``module`` (a path inside the repository)."""
    root = tmp_path / name
    for folder in COPIED:
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    if module is not None:
        path = root / module
        text = path.read_text(encoding="utf-8")
        for old, new in changes:
            if old is None:
                text += new
            else:
                assert text.count(old) == 1, f"{module}: the test's anchor {old!r} is not there once"
                text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
    return root


ADDED_FUNCTION = (None, "\n\ndef _added_by_the_test(x):\n    return x + 1\n")
# module edited -> (module, replacements, the job kinds whose keys must change)
EDITS = {
    # sink cleaning runs in the adapters' inputs, the official protocol's cleaning and the fake-sink augmentation of
    # both proxies; never in attention, OLA, ALTI or the zero-shot answers
    "maps.py (sinks): code": ("olacore/maps.py",
                              [("def sink_flags(maps: torch.Tensor, causal: bool, num_std: float = 3.0",
                                "def sink_flags(maps: torch.Tensor, causal: bool, num_std: float = 2.5")],
                              {"proxy", "official proxy", "adapter"}),
    "maps.py (sinks): docstrings": ("olacore/maps.py",
                                    [("The official sink rule", "The sink rule of the official code"),
                                     ("The entries the official rule flags", "The entries flagged"),
                                     ("SINK_STATS = (\"row\", \"causal\")\n",
                                      "SINK_STATS = (\"row\", \"causal\")\n\"\"\"Where the statistics run.\"\"\"\n")],
                                    set()),
    "maps.py (sinks): comments": ("olacore/maps.py",
                                  [("\n    valid = stats_mask(maps.shape[-1], causal, stats, maps.device)\n    count",
                                    "\n    # an added comment\n    valid = stats_mask(maps.shape[-1], causal, stats,"
                                    "   maps.device)  # and one more\n    count")],
                                  set()),
    # the OLA recurrence: OLA, and attention and ALTI, which share or import pipeline.py (it imports ola.py)
    "ola.py: code": ("olacore/ola.py", [ADDED_FUNCTION], {"attention", "ola", "alti"}),
    # the ALTI decomposition: ALTI only
    "alti.py: code": ("olacore/alti.py", [ADDED_FUNCTION], {"alti"}),
    # the prompts (chapter 07's own code): the zero-shot answers only
    "chapter_code/zeroshot.py: code": ("notebooks/chapter_code/zeroshot.py",
                                       [("Task: relation classification.", "Task: relation labels.")], {"answer"}),
    # the adapter network: the adapters only
    "toa/model.py: code": ("olacore/toa/model.py", [ADDED_FUNCTION], {"adapter"}),
    # the proxy's network: both proxies only
    "proxy.py: code": ("olacore/proxy.py", [ADDED_FUNCTION], {"proxy", "official proxy"}),
}


@pytest.mark.slow
def test_a_code_edit_changes_exactly_the_keys_of_the_jobs_that_run_it_and_a_docstring_or_comment_none(tmp_path):
    base = _keys(_copy(tmp_path, "base"))
    assert set(base) == set(KINDS) and len(set(base.values())) == len(KINDS)
    roots = [_copy(tmp_path, f"edit{number}", module, changes) for number, (module, changes, _) in enumerate(EDITS.values())]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # two processes at a time
        edited = list(pool.map(_keys, roots))
    changed = {name: {kind for kind in KINDS if keys[kind] != base[kind]} for name, keys in zip(EDITS, edited)}
    print("\n".join(f"{name:28} -> {sorted(kinds) or 'none'}" for name, kinds in changed.items()))
    assert changed == {name: expected for name, (*_, expected) in EDITS.items()}


def test_every_key_names_the_device_type(tmp_path):
    """A GPU run never reads or writes CPU entries: the same job on ``cuda`` has another key (nothing runs there)."""
    root = _copy(tmp_path, "copy")
    cpu, cuda = _keys(root, "cpu"), _keys(root, "cuda")
    assert [kind for kind in KINDS if cpu[kind] == cuda[kind]] == []


def test_the_digest_ignores_docstrings_and_layout_and_sees_code(tmp_path):
    """In this process: the digest of one module in a folder of its own, read by a copy of the store module."""
    import importlib.util

    def digest_of(source: str) -> str:
        root = tmp_path / f"copy{len(list(tmp_path.iterdir()))}" / "olacore"
        root.mkdir(parents=True)
        shutil.copy(PACKAGE / "store.py", root / "store.py")
        (root / "probe.py").write_text(source)
        spec = importlib.util.spec_from_file_location(f"store_copy_{root.parent.name}", root / "store.py")
        store = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(store)  # its package folder is the copy's
        return store.code_digest("olacore.probe")

    plain = digest_of("def f(x):\n    return x + 1\n")
    assert digest_of('"""Module."""\n\n\ndef f(x):  # comment\n    """Doc."""\n    return (x +\n            1)\n') == plain
    assert digest_of("def f(x):\n    return x + 2\n") != plain
    assert digest_of("def f(y):\n    return y + 1\n") != plain
    assert digest_of("def f(x):\n    return x + 1\n\n\ndef g():\n    pass\n") != plain
