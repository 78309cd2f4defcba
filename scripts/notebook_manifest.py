"""What an executed chapter depended on, kept in a manifest so that an unchanged chapter is not re-run.

A chapter's *fingerprint* is the hash of everything that can change its executed notebook:
its jupytext source, the parameters it ran with (the profile included), the code it imports
(every ``.py`` and ``.json`` file under ``olacore/`` and ``notebooks/chapter_code/``: :data:`CODE_FOLDERS`), the
runner (``scripts/*.py`` it imports), the data files (path, size and modification time of every
file under ``$OLACORE_DATA``) and the versions of the Python packages the project declares.
The manifest (``book/generated.manifest.json``, beside the output folder) records, per chapter,
that fingerprint and the SHA-256 of the files the run wrote; a chapter is skipped when both
still match. The manifest is written atomically (temporary file, then rename) and re-read
before every update.

A chapter whose source holds the line :data:`READS_RESULTS` (the report page) reads the other
chapters' saved numbers (``results/*.json`` in the output folder): its fingerprint also covers
those files, so a changed chapter result re-executes it, and the runner executes it last.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READS_RESULTS = "# olacore: reads the results of the other chapters"
RUNNER_FILES = ("execute_notebooks.py", "notebook_parameters.py", "notebook_manifest.py", "kernel_setup.py")
#: The code a chapter imports, relative to the repository root: the package and the chapters' own modules.
CODE_FOLDERS = ("olacore", "notebooks/chapter_code")
VERSION = 1


def sha256_file(path: Path) -> str:
    """SHA-256 (hex) of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_hash(folder: Path, suffixes: tuple[str, ...] = (".py", ".json")) -> str:
    """SHA-256 over the relative paths and contents of the files of ``folder`` with one of ``suffixes`` (code, and
    data tables such as ``olacore/profiles.json``)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.suffix in suffixes):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + sha256_file(path).encode())
    return digest.hexdigest()


def code_fingerprint(root: Path = ROOT) -> str:
    """SHA-256 over the :func:`tree_hash` of each of :data:`CODE_FOLDERS` under ``root``, with its name."""
    digest = hashlib.sha256()
    for folder in CODE_FOLDERS:
        digest.update(folder.encode() + b"\0" + tree_hash(root / folder).encode())
    return digest.hexdigest()


def data_dir(root: Path = ROOT) -> Path:
    """The data folder as the package resolves it (``olacore/settings.py``, loaded without torch)."""
    spec = importlib.util.spec_from_file_location("_olacore_settings", root / "olacore" / "settings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.data_dir()


def data_fingerprint(folder: Path) -> str:
    """SHA-256 over (relative path, size, mtime in ns) of every file under ``folder`` (a missing folder: ``...-missing``)."""
    digest = hashlib.sha256(str(folder).encode() + b"\0")
    if not folder.is_dir():
        return digest.hexdigest() + "-missing"
    for base, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = Path(base) / name
            stat = path.stat()
            digest.update(f"{path.relative_to(folder).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def environment_fingerprint(root: Path = ROOT) -> str:
    """SHA-256 over the Python version and the installed versions of the project's declared packages."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    names = sorted({re.split(r"[<>=!~\[; ]", r.strip(), maxsplit=1)[0].lower() for r in requirements})
    versions = [platform.python_version()]
    for name in names:
        try:
            versions.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{name} missing")
    return hashlib.sha256("\n".join(versions).encode()).hexdigest()


#: Environment variables that change what a chapter computes (olacore.loading / olacore.profiles).
OVERRIDE_VARIABLES = ("OLACORE_MODEL_FOLDERS", "OLACORE_SETTINGS_OVERRIDES")


def shared_fingerprint(root: Path = ROOT) -> dict[str, str]:
    """The parts of a fingerprint that every chapter shares: code (``package``), runner, data, environment,
    and (only where one is set) the :data:`OVERRIDE_VARIABLES`."""
    runner = hashlib.sha256()
    for name in RUNNER_FILES:
        path = Path(__file__).resolve().parent / name
        runner.update(name.encode() + b"\0" + (sha256_file(path).encode() if path.exists() else b"missing"))
    out = {
        "package": code_fingerprint(root),
        "runner": runner.hexdigest(),
        "data": data_fingerprint(data_dir(root)),
        "environment": environment_fingerprint(root),
    }
    overrides = {name: os.environ[name] for name in OVERRIDE_VARIABLES if os.environ.get(name)}
    if overrides:
        out["overrides"] = hashlib.sha256(json.dumps(overrides, sort_keys=True).encode()).hexdigest()
    return out


def chapter_sources(folder: Path) -> list[Path]:
    """The book's notebook sources in reading order: main chapters (``NN_*.py``), then appendices
    (``aN_*.py``), the page that reads the others' results (:data:`READS_RESULTS`) last."""
    folder = Path(folder)
    sources = sorted(folder.glob("[0-9][0-9]_*.py")) + sorted(folder.glob("a[0-9]_*.py"))
    return sorted(sources, key=reads_results)


def reads_results(source: Path) -> bool:
    """Whether a chapter's source declares that it reads the other chapters' results (:data:`READS_RESULTS`)."""
    return any(line.strip() == READS_RESULTS for line in Path(source).read_text(encoding="utf-8").splitlines())


def results_fingerprint(out_dir: Path, exclude: str) -> str:
    """SHA-256 over the names and contents of ``<out_dir>/results/*.json``, except ``<exclude>.json``."""
    digest = hashlib.sha256()
    for path in sorted((Path(out_dir) / "results").glob("*.json")):
        if path.stem != exclude:
            digest.update(path.name.encode() + b"\0" + sha256_file(path).encode())
    return digest.hexdigest()


def chapter_fingerprint(source: Path, parameters: dict, shared: dict[str, str],
                        out_dir: Path | None = None) -> dict[str, str]:
    """Fingerprint of one chapter: ``{component: hash}`` (source, parameters and the shared parts).

    A chapter that reads the other chapters' results (:func:`reads_results`) gets a ``results``
    component too: :func:`results_fingerprint` of ``out_dir`` (required for it).

    Raises:
        ValueError: a chapter that reads results and no ``out_dir``.
    """
    fingerprint = {
        "source": sha256_file(source),
        "parameters": hashlib.sha256(json.dumps(parameters, sort_keys=True, default=repr).encode()).hexdigest(),
        **shared,
    }
    if reads_results(source):
        if out_dir is None:
            raise ValueError(f"{Path(source).name} reads the other chapters' results: give the output folder")
        fingerprint["results"] = results_fingerprint(out_dir, Path(source).stem)
    return fingerprint


def manifest_path(out_dir: Path) -> Path:
    """Where the manifest of an output folder lives: beside it, ``<folder>.manifest.json``."""
    out_dir = Path(out_dir)
    return out_dir.parent / f"{out_dir.name}.manifest.json"


def read_manifest(out_dir: Path) -> dict:
    """The manifest of ``out_dir`` (an empty one if missing, unreadable or of another version)."""
    path = manifest_path(out_dir)
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"version": VERSION, "chapters": {}}
    if manifest.get("version") != VERSION or not isinstance(manifest.get("chapters"), dict):
        return {"version": VERSION, "chapters": {}}
    return manifest


def write_manifest(out_dir: Path, manifest: dict) -> None:
    """Write the manifest atomically (a temporary file in the same folder, then ``os.replace``)."""
    path = manifest_path(out_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            json.dump(manifest, stream, indent=1, sort_keys=True)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def update_manifest(out_dir: Path, chapter: str | None = None, entry: dict | None = None, **top_level) -> None:
    """Re-read the manifest, set (or with ``entry=None`` drop) one chapter's entry and top-level keys, write it back."""
    manifest = read_manifest(out_dir)
    if chapter is not None and entry is None:
        manifest["chapters"].pop(chapter, None)
    elif chapter is not None:
        manifest["chapters"][chapter] = entry
    manifest.update(top_level)
    write_manifest(out_dir, manifest)


def keep_only(out_dir: Path, chapters: list[str]) -> list[str]:
    """Drop the entries of chapters not in ``chapters`` (a renamed or removed source); return the dropped names."""
    manifest = read_manifest(out_dir)
    dropped = sorted(set(manifest["chapters"]) - set(chapters))
    if dropped:
        for name in dropped:
            manifest["chapters"].pop(name)
        write_manifest(out_dir, manifest)
    return dropped


def outputs_hashes(out_dir: Path, names: list[str]) -> dict[str, str]:
    """``{file name: SHA-256}`` of files in ``out_dir`` (a missing file maps to ``"missing"``)."""
    return {name: sha256_file(out_dir / name) if (out_dir / name).is_file() else "missing" for name in names}


def why_stale(entry: dict | None, fingerprint: dict[str, str], out_dir: Path) -> str | None:
    """``None`` if the recorded run still holds, else why not (``"source changed"``, ``"never executed"``, ...)."""
    if not entry:
        return "never executed here"
    recorded = entry.get("fingerprint", {})
    changed = [part for part in fingerprint if recorded.get(part) != fingerprint[part]]
    if changed:
        return " and ".join(changed) + " changed"
    outputs = entry.get("outputs", {})
    if not outputs:
        return "no outputs recorded"
    now = outputs_hashes(out_dir, list(outputs))
    broken = [name for name, digest in outputs.items() if now[name] != digest]
    if broken:
        return ", ".join(broken) + (" missing" if all(now[name] == "missing" for name in broken) else " modified")
    return None
