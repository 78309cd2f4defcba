"""Settings classes checked by pydantic: frozen dataclasses that refuse a bad value in one line naming its field.

:func:`settings_class` turns a class into a frozen pydantic dataclass: an unknown field is refused, a list given
for a tuple becomes a tuple, a nested settings object may be given as a dict of its fields, the field types below
are strict (no ``"0.1"`` for a number, no ``True`` for an int). A refusal is a :class:`SettingsError` of one line
that names the field path, e.g. ``SyntaxSettings.training.lr: Input should be greater than 0; got -1``. It stays a
dataclass: positional arguments, ``dataclasses.replace`` (which checks again), ``fields`` and ``asdict`` work.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import typing
from typing import Annotated, Any, TypeVar

import pydantic
from pydantic import ConfigDict, Field, ValidationError
from pydantic_core import ArgsKwargs

__all__ = ["SettingsError", "settings_class", "explain", "Str", "Bool", "PositiveInt", "NonNegativeInt",
           "PositiveFloat", "NonNegativeFloat", "Fraction", "Probability", "Items"]

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
