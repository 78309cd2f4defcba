"""The on-disk store: checksummed safetensors entries, written atomically, addressed by a key.

A key is the sha256 of a canonical JSON of everything the tensors depend on, including a :func:`code_digest` of the
modules that compute them (the AST without docstrings: a docstring or comment edit changes nothing). An entry holds
its key and a checksum; a corrupt entry is deleted with a :class:`CacheCorruptionWarning` and recomputed.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Mapping

import torch

from olacore.settings import CACHE_ENV, CacheWriteError, cache_dir, cache_write_error

__all__ = ["CACHE_VERSION", "code_digest", "code_modules", "CacheCorruptionWarning", "CacheEntryNotRemovedWarning",
           "CacheNotKeptWarning", "TensorStore", "tensor_digest", "atomic_write_text"]

# Bump when the entry format (what an entry file holds, how a key is made) changes.
CACHE_VERSION = 2

_PACKAGE = Path(__file__).resolve().parent  # the olacore folder this process imported
#: Modules left out of every code digest: they cannot change a stored number.
NOT_IN_DIGESTS = frozenset({"olacore.store", "olacore.results", "olacore.workers"})


#: Where digested code lives: this package, and the chapters' own code (``notebooks/chapter_code``), whose results
#: (chapter 05's perturbed models, the zero-shot answers) are cached too.
_ROOTS = {"olacore": _PACKAGE, "chapter_code": _PACKAGE.parent / "notebooks" / "chapter_code"}


def _module_file(name: str) -> Path | None:
    """The source file of the module ``name`` (``olacore.x.y``, ``chapter_code.x``), or ``None`` when there is none."""
    top, *parts = name.split(".")
    if top not in _ROOTS:
        return None
    candidates = [_ROOTS[top].joinpath(*parts).with_suffix(".py")] if parts else []
    return next((c for c in [*candidates, _ROOTS[top].joinpath(*parts, "__init__.py")] if c.is_file()), None)


def _imports(tree: ast.Module) -> set[str]:
    """The package modules a module imports at its top level (not under ``if TYPE_CHECKING:``; the package imports
    absolutely)."""
    found: set[str] = set()
    statements = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            statements += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", []),
                           *[s for handler in getattr(node, "handlers", []) for s in handler.body]]
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:  # ``from olacore import sinks``: the submodule itself
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if _module_file(submodule) else node.module)
    return {module for module in found if _module_file(module) is not None}


def _without_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` less every statement that is a bare string (docstrings)."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                                and isinstance(s.value.value, str))]
                if len(kept) != len(body):
                    setattr(node, field, kept or [ast.Pass()])
    return tree


_SOURCES: dict[str, tuple[str, set[str]]] = {}  # module -> (dump of its docstring-free AST, the modules it imports)
_DIGESTS: dict[tuple[str, ...], str] = {}


def _source(name: str) -> tuple[str, set[str]]:
    if name not in _SOURCES:
        tree = ast.parse(_module_file(name).read_text(encoding="utf-8"))
        imports = _imports(tree)
        _SOURCES[name] = ast.dump(_without_docstrings(tree), annotate_fields=True, include_attributes=False), imports
    return _SOURCES[name]


def code_modules(*modules: str) -> list[str]:
    """``modules`` and every package module they import at their top level, transitively, sorted, less
    :data:`NOT_IN_DIGESTS` (imports inside functions are not followed)."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += sorted(_source(module)[1] - seen)
    return sorted(seen - NOT_IN_DIGESTS)


def code_digest(*modules: str) -> str:
    """sha256 of the docstring-free AST of :func:`code_modules` ``(*modules)``, read once per process."""
    wanted = tuple(sorted(set(modules)))
    if wanted not in _DIGESTS:
        digest = hashlib.sha256()
        for module in code_modules(*wanted):
            digest.update(f"\0{module}\0{_source(module)[0]}".encode("utf-8"))
        _DIGESTS[wanted] = digest.hexdigest()
    return _DIGESTS[wanted]


class CacheCorruptionWarning(UserWarning):
    """A cache entry was unreadable, truncated, failed its checksum or was written for another key; it was deleted."""


class CacheNotKeptWarning(UserWarning):
    """A computed result could not be written to the cache (read-only folder, disk full); it is used anyway."""


class CacheEntryNotRemovedWarning(CacheCorruptionWarning, CacheNotKeptWarning):
    """A corrupt entry could not be deleted (read-only cache): it is ignored, the result recomputed and not kept."""


def _checksum(description: str, tensors: Mapping[str, torch.Tensor]) -> str:
    digest = hashlib.sha256(description.encode("utf-8"))
    for name in sorted(tensors):
        tensor = tensors[name].detach().to("cpu").contiguous()
        digest.update(f"\0{name}\0{tensor.dtype}\0{tuple(tensor.shape)}\0".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def tensor_digest(tensor: torch.Tensor) -> str:
    """sha256 hex digest of a tensor's dtype, shape and bytes (any device): a cache-key part for data."""
    return _checksum("", {"tensor": torch.as_tensor(tensor)})


def _replace_atomically(path: Path, data: bytes, prefix: str, mode: int | None = None) -> None:
    """Write ``data`` to a temporary file beside ``path``, then ``os.replace`` it into place."""
    handle, temporary = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path``, making its folder: a temporary file beside it, then ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # 0644, not mkstemp's 0600: a web server serving the built book must read the file
    _replace_atomically(path, text.encode("utf-8"), f".{path.name}.", mode=0o644)
    return path


class TensorStore:
    """A folder of checksummed safetensors entries, ``root/<key[:2]>/<key>.safetensors`` (default root
    ``$OLACORE_CACHE/tensors``, made only when an entry is written)."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else cache_dir("tensors", create=False)
        self._not_removed: set[str] = set()  # keys of corrupt entries a read-only cache kept (warned once)

    @staticmethod
    def key(**parts: Any) -> str:
        """sha256 hex digest of a canonical JSON of ``parts`` (fingerprint, text, settings) plus :data:`CACHE_VERSION`.

        Raises:
            TypeError: a part is not JSON-serialisable.
        """
        payload = dict(parts)
        payload["cache_version"] = CACHE_VERSION
        canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        """File of the entry ``key`` (it may not exist)."""
        return self.root / key[:2] / f"{key}.safetensors"

    def __contains__(self, key: str) -> bool:
        return self.path(key).is_file()

    def put(self, key: str, tensors: Mapping[str, torch.Tensor], meta: Mapping[str, Any] | None = None) -> Path:
        """Write an entry atomically; returns its file. ``meta``: a JSON-serialisable description.

        Raises:
            CacheWriteError: the folder is not writable or the disk is full (names ``$OLACORE_CACHE``).
        """
        from safetensors.torch import save

        cpu = {name: tensor.detach().to("cpu").contiguous() for name, tensor in tensors.items()}
        description = json.dumps(dict(meta or {}), sort_keys=True, ensure_ascii=False)
        # The key (a digest of everything the entry was computed for: model fingerprint, text, settings) is part of
        # the entry and of its checksum: an entry copied or renamed under another key is refused on read.
        metadata = {"olacore": description, "key": key, "checksum": _checksum(key + "\0" + description, cpu)}
        target = self.path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # Serialised in memory and written by Python, so that a full disk is an OSError (ENOSPC)
            # (safetensors' own writer reports it as a SafetensorError).
            _replace_atomically(target, save(cpu, metadata=metadata), f".{key[:16]}.")
        except OSError as error:
            raise cache_write_error(f"the cache entry {target}", error, self.root.parent) from error
        return target

    def get(self, key: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]] | None:
        """Read and verify an entry: ``(tensors, meta)`` with CPU tensors, or ``None`` when absent or corrupt (deleted
        with a :class:`CacheCorruptionWarning`; in a read-only cache ignored, with a
        :class:`CacheEntryNotRemovedWarning`)."""
        from safetensors.torch import load

        target = self.path(key)
        try:
            data = target.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # absent, or no cache folder at all
            return None
        try:
            tensors = load(data)  # refuses a truncated or malformed file
            metadata = json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")]).get("__metadata__") or {}
            if not {"olacore", "checksum", "key"} <= metadata.keys():
                raise ValueError("no olacore metadata, key or checksum")
            if metadata["key"] != key:
                raise ValueError(f"it was computed for the key {metadata['key'][:16]}..., not this one (copied or "
                                 "renamed from another entry)")
            if _checksum(metadata["key"] + "\0" + metadata["olacore"], tensors) != metadata["checksum"]:
                raise ValueError("checksum mismatch")
            meta = json.loads(metadata["olacore"])
        except Exception as error:  # any failure to read means: do not trust the entry
            problem = f"Cache entry {target} is corrupt or partial ({type(error).__name__}: {error})"
            try:
                target.unlink(missing_ok=True)
            except OSError as failure:
                self._not_removed.add(key)
                warnings.warn(CacheEntryNotRemovedWarning(
                    f"{problem}; it could not be removed ({failure.strerror or failure}), so it is ignored: the "
                    f"result is recomputed and returned, but not kept. Point ${CACHE_ENV} at a writable folder, or "
                    f"delete {target} where the cache is writable."), stacklevel=3)
                return None
            warnings.warn(CacheCorruptionWarning(f"{problem}; deleted, it will be recomputed."), stacklevel=3)
            return None
        return tensors, meta

    def put_or_warn(self, key: str, tensors: Mapping[str, torch.Tensor], meta: Mapping[str, Any] | None = None) -> bool:
        """:meth:`put`, but a failed write only warns (the caller keeps its result); ``True`` when written."""
        try:
            self.put(key, tensors, meta)
        except CacheWriteError as error:
            if key in self._not_removed:  # its CacheEntryNotRemovedWarning said so already
                return False
            warnings.warn(CacheNotKeptWarning(f"{error} The result was computed and is returned, but not kept."),
                          stacklevel=3)
            return False
        return True
