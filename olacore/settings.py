"""Where the project reads its data (``$OLACORE_DATA``, default ``<repo>/../shared/data``), keeps its caches
(``$OLACORE_CACHE``, default ``~/.cache/olacore``) and computes, and the checked settings classes.

:func:`settings_class` makes a class a frozen, strict pydantic dataclass whose refusal is a one-line
:class:`SettingsError` naming the field path (``SyntaxSettings.training.lr: Input should be greater than 0; got -1``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import math
import os
import typing
from pathlib import Path
from typing import Annotated, Any, Iterator, TypeVar

import pydantic
import torch
from pydantic import ConfigDict, Field, ValidationError
from pydantic_core import ArgsKwargs

__all__ = ["DATA_ENV", "CACHE_ENV", "env_text", "env_folder", "env_positive_number", "data_dir", "data_file",
           "CacheWriteError", "cache_write_error", "cache_root", "cache_dir", "resolve_device", "check_compute_options",
           "cpu_workers", "COMPUTE_THREADS", "fixed_threads", "SettingsError", "settings_class", "explain", "Str",
           "Bool", "PositiveInt", "NonNegativeInt", "PositiveFloat", "NonNegativeFloat", "Fraction", "Probability",
           "Items"]


DATA_ENV = "OLACORE_DATA"
CACHE_ENV = "OLACORE_CACHE"

_REPO_ROOT = Path(__file__).resolve().parent.parent


def env_text(name: str) -> str | None:
    """The value of the environment variable ``name``; ``None`` when unset or empty.

    Raises:
        ValueError: the value is blank (spaces only) or has spaces around it (one line naming ``name``).
    """
    value = os.environ.get(name)
    if not value:
        return None
    if not value.strip():
        raise ValueError(f"${name} is blank ({value!r}); set it to a value or unset it to use the default")
    if value != value.strip():
        raise ValueError(f"${name}={value!r} has spaces around it; remove them (export {name}={value.strip()!r})")
    return value


def env_folder(name: str, default: Path | None) -> Path | None:
    """The folder named by the environment variable ``name``, or ``default`` when unset or empty.

    Raises:
        ValueError: the value is blank, has spaces around it, or names a file (one line naming ``name``).
    """
    value = env_text(name)
    if value is None:
        return default
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"${name}={value} is a file, not a folder; point {name} at a folder, or unset it"
                         + (f" to use the default {default}" if default is not None else ""))
    return path


def env_positive_number(name: str, default: float) -> float:
    """The positive, finite number in the environment variable ``name``, or ``default`` when unset or empty.

    Raises:
        ValueError: the value is not a number, or not a positive finite one (one line naming ``name``).
    """
    value = env_text(name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is None or not math.isfinite(number) or number <= 0:
        raise ValueError(f"${name}={value!r} is not a positive number; set it to one (e.g. {name}={default:g}) or "
                         f"unset it to use the default {default:g}")
    return number


def data_dir() -> Path:
    """The data folder: ``$OLACORE_DATA`` or ``<repo>/../shared/data`` (a missing one is reported by :func:`data_file`).

    Raises:
        ValueError: ``$OLACORE_DATA`` is blank or names a file.
    """
    return env_folder(DATA_ENV, _REPO_ROOT.parent / "shared" / "data")


def data_file(*parts: str) -> Path:
    """The path of a file inside the data folder, e.g. ``data_file("ud_english_ewt", "en_ewt-ud-train.conllu")``.

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
    """Something could not be written into the cache (read-only folder, disk full); names ``OLACORE_CACHE``."""


def cache_write_error(what: str, error: OSError, root: Path | None = None) -> CacheWriteError:
    """The :class:`CacheWriteError` for a failed write of ``what``: the cause, the setting, the fix."""
    root = root if root is not None else cache_root()
    return CacheWriteError(
        f"cannot write {what} ({error.strerror or error}); the cache folder must be writable and have free "
        f"space. Point ${CACHE_ENV} at a writable folder with free space (now {root}), or free some space."
    )


def cache_root() -> Path:
    """The cache folder, ``$OLACORE_CACHE`` or ``~/.cache/olacore`` (not created).

    Raises:
        ValueError: ``$OLACORE_CACHE`` is blank or names a file.
    """
    return env_folder(CACHE_ENV, Path.home() / ".cache" / "olacore")


def cache_dir(*parts: str, create: bool = True) -> Path:
    """A folder inside the cache (:func:`cache_root`), created unless ``create=False``.

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
        RuntimeError: ``device`` names an unknown device type, or a CUDA device this machine does not have.
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
    """Worker processes: one per core on a CPU (at most ``limit``), 1 on a GPU."""
    if resolve_device(device).type != "cpu":
        return 1
    return max(1, min(os.cpu_count() or 1, limit))


#: Torch threads for everything that is cached (on a CPU the last bits depend on the thread count).
COMPUTE_THREADS = 1


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


# Strict: no "0.1" for a number, no True for an int; a float field takes an int and holds it as a float.
Str = Annotated[str, Field(strict=True)]
Bool = Annotated[bool, Field(strict=True)]
PositiveInt = Annotated[int, Field(strict=True, gt=0)]
NonNegativeInt = Annotated[int, Field(strict=True, ge=0)]
PositiveFloat = Annotated[float, Field(strict=True, gt=0)]
NonNegativeFloat = Annotated[float, Field(strict=True, ge=0)]
Fraction = Annotated[float, Field(strict=True, ge=0, lt=1)]  # in [0, 1)
Probability = Annotated[float, Field(strict=True, ge=0, le=1)]  # in [0, 1]
_T = TypeVar("_T")
Items = Annotated[tuple[_T, ...], Field(min_length=1)]  # a non-empty list (a tuple in Python)

CONFIG = ConfigDict(extra="forbid", allow_inf_nan=False)

#: Pydantic's words where a reader of settings needs other ones.
_WORDS = {"tuple_type": "must be a list (a tuple in Python)", "too_short": "must not be empty"}


class SettingsError(ValueError):
    """A refused setting; the message is one line naming the field path."""


def _field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _class_at(cls: type, names: list[str]) -> type | None:
    """The dataclass that field path ``names`` leads to from dataclass ``cls`` (``None``: no dataclass there)."""
    for name in names:
        hint = typing.get_type_hints(cls).get(name) if dataclasses.is_dataclass(cls) else None
        cls = next((a for a in typing.get_args(hint) or (hint,) if dataclasses.is_dataclass(a)), None)
    return cls


def explain(error: ValidationError, cls: type) -> str:
    """Every error of ``error`` (from making ``cls``), on one line: ``Class.field.path: what; got value``."""
    parts, items = [], error.errors(include_url=False)
    for item in items:
        if item["type"] == "too_short" and any(len(i["loc"]) > len(item["loc"]) for i in items):
            continue  # a list whose items were refused: pydantic counts them out and finds it empty
        loc = list(item["loc"])
        if loc and isinstance(loc[0], int) and loc[0] < len(_field_names(cls)):  # a positional argument
            loc[0] = _field_names(cls)[loc[0]]
        path = cls.__name__ + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
        message = _WORDS.get(item["type"], item["msg"].removeprefix("Value error, "))
        if item["type"] in ("unexpected_keyword_argument", "extra_forbidden"):
            owner = _class_at(cls, [str(p) for p in loc[:-1]])
            known = _field_names(owner) if owner else []
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            message = (f"no such field{f' (did you mean {close[0]!r}?)' if close else ''}; "
                       f"its fields: {', '.join(known)}")
        value = item.get("input")
        mine = item["type"] == "value_error"  # a check of the class, whose message names the value itself
        shown = "" if not loc or mine or isinstance(value, (dict, ArgsKwargs)) else f"; got {value!r}"
        if isinstance(value, str) and item["type"] == "tuple_type":
            shown += f": give [{value!r}] for one value"
        parts.append(f"{path}: {message}{shown}" if loc else message)
    return "; ".join(parts).replace("\n", " ")


def settings_class(cls: type) -> type:
    """``cls`` made a frozen pydantic dataclass (:data:`CONFIG`) refusing with one-line :class:`SettingsError`\\ s."""
    made = pydantic.dataclasses.dataclass(frozen=True, config=CONFIG)(cls)
    init = made.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except ValidationError as error:
            raise SettingsError(explain(error, made)) from None

    made.__init__ = __init__
    return made
