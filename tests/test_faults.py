"""Faults the cache must survive (issue #13): a writer killed mid-write, two writers at once, a full
disk, a read-only cache.

Child processes (tests/fault_child.py) write cache entries, build a zoo model (the split-zip
path, from MiniLM's installed files) and train jobs. A child killed with SIGKILL is stopped at
a chosen point of its write by ``OLACORE_TEST_PAUSE``. A full disk is a real 1-4 MB tmpfs and a
read-only cache a real read-only bind mount, both in a private mount namespace
(``unshare -rm``, no root needed where user namespaces are allowed); where that is not
possible, a full disk is a file-size limit (``RLIMIT_FSIZE``: the write fails part-way with
EFBIG) and a read-only folder a ``chmod`` (not for root, who ignores it: then it is skipped).
Each test prints one ``FAULT`` line with what it measured (``pytest -s`` shows them).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import torch

from olacore.settings import CacheWriteError
from olacore.store import CacheNotKeptWarning, TensorStore

ROOT = Path(__file__).resolve().parent.parent
CHILD = ROOT / "tests" / "fault_child.py"


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    env.pop("OLACORE_TEST_PAUSE", None)
    env.update(extra)
    return env


def _child(*args: str, wrap: list[str] | None = None, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([*(wrap or []), sys.executable, str(CHILD), *args], capture_output=True, text=True,
                          timeout=600, env=_env(**env), cwd=ROOT)


def _digest(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])["digest"]


def _kill_when_paused(args: list[str], pause: Path, **env: str) -> float:
    """Start a child, SIGKILL it once it reports its pause; return how long it ran."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, str(CHILD), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=_env(OLACORE_TEST_PAUSE=str(pause), **env), cwd=ROOT)
    try:
        while not pause.exists():
            if child.poll() is not None:
                pytest.fail(f"the child ended before its pause: {child.stderr.read().decode()[-3000:]}")
            if time.perf_counter() - start > 300:
                pytest.fail("the child never reached its pause")
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)  # reaped: its pid is gone
    assert child.returncode == -signal.SIGKILL
    return time.perf_counter() - start


def _entries(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0


NAMESPACES = _namespaces_work()


def _in_small_disk(folder: Path, megabytes: int) -> list[str]:
    """A command prefix that runs the rest on a ``megabytes`` tmpfs mounted at ``folder`` (private)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = f"mount -t tmpfs -o size={megabytes}m tmpfs {shlex.quote(str(folder))} && exec \"$@\""
    return ["unshare", "-rm", "sh", "-c", script, "sh"]


def _read_only(folder: Path) -> list[str]:
    """A command prefix that runs the rest with ``folder`` bind-mounted read-only (private)."""
    quoted = shlex.quote(str(folder))
    script = f"mount --bind {quoted} {quoted} && mount -o remount,bind,ro {quoted} && exec \"$@\""
    return ["unshare", "-rm", "sh", "-c", script, "sh"]


# ------------------------------------------------------------------------------------------
# A writer killed in the middle of a cache entry
# ------------------------------------------------------------------------------------------


def test_cache_write_killed_midway_leaves_no_entry_and_is_redone(tmp_path):
    root = tmp_path / "store"
    ran = _kill_when_paused(["put", str(root), "7"], tmp_path / "paused")
    leftovers = _entries(root)
    assert len(leftovers) == 1 and leftovers[0].name.endswith(".tmp")  # the half-written temporary file only
    store = TensorStore(root)
    key = store.key(test="fault", seed=7)
    assert store.get(key) is None and key not in store  # nothing half-written is seen as an entry
    start = time.perf_counter()
    again = _digest(_child("put", str(root), "7"))
    recovered = time.perf_counter() - start
    # the entry, and the killed writer's temporary file (never read)
    assert [p for p in _entries(root) if not p.name.endswith(".tmp")] == [store.path(key)]
    tensors, meta = store.get(key)
    from fault_child import digest, entry_tensors

    assert again == digest(tensors) == digest(entry_tensors(7)) and meta == {"seed": 7}
    print(f"\nFAULT cache write: killed after {ran:.2f} s mid-entry; the next write took {recovered:.2f} s "
          f"(a process start included); entry bit-identical to an uninterrupted write: True")


@pytest.mark.slow
def test_training_job_killed_while_storing_is_retrained_identically(tmp_path):
    reference = _digest(_child("train", str(tmp_path / "uninterrupted")))
    root = tmp_path / "store"
    ran = _kill_when_paused(["train", str(root)], tmp_path / "paused")
    assert not [p for p in _entries(root) if p.suffix == ".safetensors"]
    start = time.perf_counter()
    again = _digest(_child("train", str(root)))
    recovered = time.perf_counter() - start
    assert again == reference
    assert len([p for p in _entries(root) if p.suffix == ".safetensors"]) == 2  # and the killed writer's .tmp
    print(f"\nFAULT run_cached job: killed after {ran:.2f} s while storing; re-run (training both jobs) took "
          f"{recovered:.2f} s; weights bit-identical to an uninterrupted run: True")


# ------------------------------------------------------------------------------------------
# Zoo builds: killed midway; two at once; a full disk
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def zip_parts(tmp_path_factory) -> Path:
    """MiniLM's files as a split zip archive (the mpnet-base build path), with its sha256."""
    from olacore.zoo import zoo_folder

    source = zoo_folder("minilm-l6")
    folder = tmp_path_factory.mktemp("parts")
    archive = folder / "whole.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "model.safetensors"):
            zipped.write(source / name, f"inner/{name}")
    data = archive.read_bytes()
    archive.unlink()
    third = len(data) // 3 + 1
    for i, start in enumerate(range(0, len(data), third)):
        (folder / f"archive.zip.00{i + 1}").write_bytes(data[start:start + third])
    (folder / "sha256").write_text(hashlib.sha256(data).hexdigest())
    return folder


@pytest.fixture(scope="module")
def minilm_digest(zip_parts, tmp_path_factory) -> str:
    """The attention digest of the child's texts through MiniLM itself: what every build must give."""
    return _digest(_child("extract", "minilm-l6", OLACORE_CACHE=str(tmp_path_factory.mktemp("cache"))))


def _model_folders(cache: Path) -> list[str]:
    models = cache / "models"
    return sorted(p.name for p in models.iterdir() if not p.name.endswith(".lock")) if models.exists() else []


@pytest.mark.slow
def test_zoo_build_killed_midway_is_rebuilt_and_gives_the_same_numbers(zip_parts, minilm_digest, tmp_path):
    cache = tmp_path / "cache"
    ran = _kill_when_paused(["build", str(zip_parts)], tmp_path / "paused", OLACORE_CACHE=str(cache))
    half = _model_folders(cache)
    assert len(half) == 1 and half[0].startswith(".fault-zip-build-")  # only the temporary build folder
    start = time.perf_counter()
    again = _digest(_child("build", str(zip_parts), OLACORE_CACHE=str(cache)))
    recovered = time.perf_counter() - start
    folders = _model_folders(cache)
    assert len(folders) == 1 and folders[0].startswith("fault-zip-")  # the stale build folder was removed
    assert again == minilm_digest
    print(f"\nFAULT zoo build: killed after {ran:.2f} s with 2 files written; the next run rebuilt and extracted in "
          f"{recovered:.2f} s; attention bit-identical to MiniLM's own: True")


@pytest.mark.slow
def test_two_processes_build_once_and_write_the_same_entries(zip_parts, minilm_digest, tmp_path):
    cache, log = tmp_path / "cache", tmp_path / "builds.log"
    env = _env(OLACORE_CACHE=str(cache), OLACORE_TEST_BUILD_LOG=str(log))
    start = time.perf_counter()
    children = [subprocess.Popen([sys.executable, str(CHILD), "build", str(zip_parts)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT) for _ in range(2)]
    outputs = [child.communicate(timeout=600) for child in children]
    took = time.perf_counter() - start
    for child, (out, err) in zip(children, outputs):
        assert child.returncode == 0, err[-3000:]
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert {report["digest"] for report in reports} == {minilm_digest}  # both got MiniLM's numbers
    builds = log.read_text().splitlines()
    assert len(builds) == 1  # one build: the other waited for it ...
    build_end = float(builds[0].split()[2])
    assert max(report["entered"] for report in reports) < build_end  # ... having asked while it ran
    store = TensorStore(cache / "tensors")
    entries = [p for p in _entries(store.root)]
    assert len(entries) == 3 and all(p.suffix == ".safetensors" for p in entries)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a corrupt entry would warn
        for path in entries:
            assert store.get(path.stem) is not None
    print(f"\nFAULT two builders at once: {len(log.read_text().splitlines())} build, both done in {took:.1f} s, "
          f"{len(entries)} entries all valid, results bit-identical: True")


@pytest.mark.slow
def test_zoo_build_on_a_full_disk_fails_clearly_and_leaves_nothing(zip_parts, tmp_path):
    cache = tmp_path / "cache"
    if NAMESPACES:
        wrap, how = _in_small_disk(cache, 4), "a 4 MB tmpfs (ENOSPC)"
    else:
        wrap, how = ["prlimit", f"--fsize={4 * 2**20}"], "a 4 MB file-size limit (EFBIG)"
    script = (
        "import sys, os, signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); sys.path.insert(0, 'tests');"
        "from fault_child import register_zip_model;"
        f"name = register_zip_model({str(zip_parts)!r}); from build_zoo import build\n"
        "try:\n    build(name)\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
        f"print('LEFT', sorted(os.listdir({str(cache / 'models')!r})))"
    )
    done = subprocess.run([*wrap, sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env=_env(OLACORE_CACHE=str(cache)), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    error, left = done.stdout.strip().splitlines()[-2:]
    assert error.startswith("CacheWriteError cannot write the model folder of 'fault-zip'") and "$OLACORE_CACHE" in error
    assert left == "LEFT ['.fault-zip.lock']"  # no half-built model folder
    print(f"\nFAULT full disk during a zoo build ({how}): {error[:120]}...; left behind: only the lock file")


# ------------------------------------------------------------------------------------------
# A full disk while writing a cache entry; a read-only cache
# ------------------------------------------------------------------------------------------


def test_entry_write_on_a_full_disk_raises_names_the_setting_and_leaves_nothing(tmp_path):
    root = tmp_path / "store"
    if NAMESPACES:
        wrap, how = _in_small_disk(root, 1), "a 1 MB tmpfs (ENOSPC)"
    else:
        wrap, how = ["prlimit", f"--fsize={2**20}"], "a 1 MB file-size limit (EFBIG)"
    script = (
        "import signal, os, warnings, torch; signal.signal(signal.SIGXFSZ, signal.SIG_IGN);"
        "from olacore.settings import CacheWriteError; from olacore.store import TensorStore; warnings.simplefilter('ignore');"
        f"store = TensorStore({str(root)!r}); big = {{'x': torch.zeros(2**19)}}\n"  # 2 MB
        "try:\n    store.put(store.key(test='full'), big)\nexcept CacheWriteError as e:\n    print('ERROR', e)\n"
        "print('KEPT', store.put_or_warn(store.key(test='full'), big));"
        "store.put(store.key(test='small'), {'x': torch.zeros(8)});"  # a small entry still fits
        f"print('LEFT', sorted(str(p.relative_to(store.root)) for p in store.root.rglob('*') if p.is_file()))"
    )
    done = subprocess.run([*wrap, sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=_env(), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    error, kept, left = done.stdout.strip().splitlines()
    assert "OLACORE_CACHE" in error and ("No space left on device" in error or "File too large" in error)
    assert kept == "KEPT False"
    small = TensorStore(root).path(TensorStore.key(test="small"))
    assert left == f"LEFT [{str(small.relative_to(root))!r}]"  # the full entry left nothing behind
    print(f"\nFAULT full disk during an entry write ({how}): CacheWriteError naming OLACORE_CACHE; "
          f"no partial file; a later small entry was written")


def test_store_on_a_read_only_folder_reads_and_refuses_writes_clearly(tmp_path, monkeypatch):
    """Where the file system is really read-only, writes fail with EROFS (simulated here: root ignores
    permission bits, and a mount namespace is tested through the command line below)."""
    import errno

    store = TensorStore(tmp_path / "tensors")
    key = store.key(test="read only")
    store.put(key, {"x": torch.arange(3)})

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr("tempfile.mkstemp", read_only)
    assert torch.equal(store.get(key)[0]["x"], torch.arange(3))  # a hit works
    with pytest.raises(CacheWriteError, match=r"Read-only file system.*OLACORE_CACHE"):
        store.put(store.key(test="miss"), {"x": torch.zeros(1)})
    with pytest.warns(CacheNotKeptWarning, match="not kept"):
        assert store.put_or_warn(store.key(test="miss"), {"x": torch.zeros(1)}) is False


def test_default_store_on_a_cache_that_cannot_be_created_still_reads(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("OLACORE_CACHE", str(blocker / "cache"))
    store = TensorStore()  # creating the store writes nothing
    assert store.get(store.key(test="x")) is None
    with pytest.raises(CacheWriteError, match="OLACORE_CACHE"):
        store.put(store.key(test="x"), {"x": torch.zeros(1)})
    from olacore.settings import cache_dir

    with pytest.raises(CacheWriteError, match="OLACORE_CACHE"):
        cache_dir("models")


def _cli(*args: str, wrap: list[str] | None = None, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([*(wrap or []), sys.executable, "-m", "olacore", *args], capture_output=True, text=True,
                          timeout=600, env=_env(**env), cwd=ROOT)


@pytest.mark.slow
def test_cli_on_a_read_only_cache_prints_the_result_and_one_warning(tmp_path):
    """Issue #13 item 8: a hit worked; a miss printed 'error: [Errno 30] Read-only file system' and lost the result."""
    cache = tmp_path / "cache"
    hit, miss = "The cat sat on the mat.", "A dog slept under the table."
    args = ["ola", "--model", "minilm-l6", "--max-order", "1", "--json", "--device", "cpu"]
    first = _cli(*args, "--text", hit, OLACORE_CACHE=str(cache))
    assert first.returncode == 0, first.stderr
    if NAMESPACES:
        wrap = _read_only(cache)
    elif os.getuid() != 0:
        wrap = None
        for path in [cache, *cache.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
    else:
        pytest.skip("needs a private mount namespace (unshare -rm) or a non-root user to make the cache read-only")
    before = _entries(cache)
    again = _cli(*args, "--text", hit, wrap=wrap, OLACORE_CACHE=str(cache))
    assert again.returncode == 0 and again.stdout == first.stdout and "warning" not in again.stderr
    computed = _cli(*args, "--text", miss, wrap=wrap, OLACORE_CACHE=str(cache))
    assert computed.returncode == 0, computed.stderr
    payload = json.loads(computed.stdout)
    assert payload["tokens"][1:4] == ["a", "dog", "slept"] and len(payload["orders"]) == 2
    lines = [line for line in computed.stderr.splitlines() if line.startswith(("warning", "error", "Traceback"))]
    assert len(lines) == 1 and lines[0].startswith("warning: cannot write the cache entry")  # beside the progress bar
    assert "OLACORE_CACHE" in lines[0] and "returned, but not kept" in lines[0]
    assert _entries(cache) == before
    # a cache folder that does not exist under a read-only parent: same, no error
    fresh = _cli(*args, "--text", miss, wrap=wrap, OLACORE_CACHE=str(cache / "new"))
    assert fresh.returncode == 0 and json.loads(fresh.stdout) == payload
    assert "OLACORE_CACHE" in fresh.stderr
    print(f"\nFAULT read-only cache ({'bind mount' if NAMESPACES else 'chmod'}): hit and miss both exit 0; "
          f"the miss prints its result and one warning line naming OLACORE_CACHE")


@pytest.mark.slow
@pytest.mark.skipif(not NAMESPACES, reason="needs a private mount namespace (unshare -rm) for a read-only bind mount")
def test_cli_on_a_read_only_cache_with_a_damaged_entry_recomputes_it_with_one_warning(tmp_path):
    """Issue 38 item 2: it printed 'deleted, it will be recomputed', then exited 2 with [Errno 30]."""
    cache = tmp_path / "cache"
    args = ["ola", "--model", "minilm-l6", "--max-order", "1", "--json", "--device", "cpu",
            "--text", "The cat sat on the mat."]
    first = _cli(*args, OLACORE_CACHE=str(cache))
    assert first.returncode == 0, first.stderr
    entries = _entries(cache)
    assert len(entries) == 2  # the attention and the OLA entry
    from olacore.loading import model_fingerprint
    from olacore.pipeline import OLA

    key = OLA.keys(model_fingerprint("minilm-l6"), [args[-1]], "cpu")[0]
    damaged = next(path for path in entries if path.name == f"{key}.safetensors")  # the entry the CLI reads first
    damaged.write_bytes(damaged.read_bytes()[:200])
    before = {path: path.read_bytes() for path in _entries(cache)}
    again = _cli(*args, wrap=_read_only(cache), OLACORE_CACHE=str(cache))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)
    lines = [line for line in again.stderr.splitlines() if line.startswith(("warning", "error", "Traceback"))]
    assert len(lines) == 1 and "could not be removed" in lines[0] and str(damaged) in lines[0]
    assert {path: path.read_bytes() for path in _entries(cache)} == before  # nothing changed, nothing lost
    print(f"\nFAULT damaged entry in a read-only cache: recomputed, rc 0, one warning: {lines[0][:120]}...")
