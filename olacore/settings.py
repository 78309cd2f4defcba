"""Where the project reads its data, keeps its caches, and runs (device, worker processes).

Two environment variables, so that notebooks, tests, the command line and CI agree:

``OLACORE_DATA``
    Folder of the public data releases (listed on the book's page "Models and data"). Default:
    ``<repo>/../shared/data``. Read only: nothing is ever written there.
``OLACORE_CACHE``
    Folder for dequantised model weights, extracted attention and other derived files.
    Default: ``~/.cache/olacore``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

import torch

DATA_ENV = "OLACORE_DATA"
CACHE_ENV = "OLACORE_CACHE"

_REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """Return the data folder: ``$OLACORE_DATA`` or ``<repo>/../shared/data``."""
    value = os.environ.get(DATA_ENV)
    return Path(value).expanduser() if value else _REPO_ROOT.parent / "shared" / "data"


def data_file(*parts: str) -> Path:
    """Return the path of a file inside the data folder, checking that it exists.

    Args:
        *parts: path components below the data folder, e.g.
            ``("ud_english_ewt", "en_ewt-ud-train.conllu")``.

    Raises:
        FileNotFoundError: the file is missing (the message names it and ``OLACORE_DATA``).
    """
    path = data_dir().joinpath(*parts)
    if not path.is_file():
        raise FileNotFoundError(
            f"Data file not found: {path}. Set the environment variable {DATA_ENV} to the "
            f"folder that holds {'/'.join(parts)} (currently {data_dir()})."
        )
    return path


class CacheWriteError(OSError):
    """Something could not be written into the cache (read-only folder, disk full); nothing partial
    was left. The message names ``OLACORE_CACHE`` and what to do."""


def cache_write_error(what: str, error: OSError, root: Path | None = None) -> CacheWriteError:
    """The :class:`CacheWriteError` for a failed write of ``what``: the cause, the setting, the fix."""
    root = root if root is not None else cache_root()
    return CacheWriteError(
        f"cannot write {what} ({error.strerror or error}); the cache folder must be writable and have free "
        f"space. Point ${CACHE_ENV} at a writable folder with free space (now {root}), or free some space."
    )


def cache_root() -> Path:
    """The cache folder, ``$OLACORE_CACHE`` or ``~/.cache/olacore`` (not created)."""
    value = os.environ.get(CACHE_ENV)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "olacore"


def cache_dir(*parts: str, create: bool = True) -> Path:
    """Return a folder inside the cache (:func:`cache_root`), created unless ``create=False``.

    Raises:
        CacheWriteError: the folder cannot be created (read-only or full file system, a file in the way).
    """
    path = cache_root().joinpath(*parts)
    if create and not path.is_dir():
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise cache_write_error(f"the cache folder {path}", error) from error
    return path


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """The device to compute on: ``device`` if given, else CUDA when available, else the CPU.

    Raises:
        RuntimeError: ``device`` names an unknown device type, or a CUDA device this machine does
            not have (no GPU visible to torch, or an index beyond the GPUs it sees).
    """
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as error:  # torch lists twenty device types
        raise RuntimeError(f"device {device!r} is not a device torch knows; pass 'cpu', 'cuda' or 'cuda:0' "
                           "(CLI: --device cpu), or leave the device unset to use CUDA when available") from error
    if resolved.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0 or (resolved.index is not None and resolved.index >= count):
            raise RuntimeError(
                f"device {str(resolved)!r} asked for, but torch sees {count} CUDA device(s) on this machine; "
                "pass device='cpu' (CLI: --device cpu) or leave the device unset to use the CPU")
    return resolved


def check_compute_options(workers: int | None, device: str | torch.device | None) -> None:
    """Refuse bad ``workers`` / ``device`` arguments of a public entry point (``None``: the default).

    Raises:
        TypeError: ``workers`` is not an int.
        ValueError: ``workers < 1``.
        RuntimeError: a device torch does not know or this machine lacks (:func:`resolve_device`).
    """
    if workers is None:
        pass
    elif isinstance(workers, bool) or not isinstance(workers, int):
        raise TypeError(f"workers must be an int (processes, at least 1); got {type(workers).__name__} {workers!r}")
    elif workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    resolve_device(device)


def cpu_workers(device: str | torch.device | None = None, limit: int = 8) -> int:
    """Processes to train small networks in: one single-threaded worker per core on a CPU (at most
    ``limit``), 1 on a GPU."""
    if resolve_device(device).type != "cpu":
        return 1
    return max(1, min(os.cpu_count() or 1, limit))


COMPUTE_THREADS = 1
"""Torch threads for everything that is cached (attention, ALTI, OLA, trained networks).

On a CPU the last bits of small matrix products depend on the thread count; a fixed count keeps
cached numbers bit-identical on any machine of the same kind.
"""


@contextlib.contextmanager
def fixed_threads(count: int = COMPUTE_THREADS) -> Iterator[None]:
    """Run the body on ``count`` torch threads, then restore the caller's setting."""
    before = torch.get_num_threads()
    if before != count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
