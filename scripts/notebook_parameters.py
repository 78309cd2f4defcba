"""Declared notebook parameters, and `-p NAME VALUE` values checked against them before a run.

A chapter declares its parameters in the cell tagged ``parameters``, one assignment a line::

    profile = "default"                 # type taken from the default: str
    seeds: list[int] | None = None      # None: the profile's seeds   (annotation gives the type)

The declared type is the annotation when there is one, otherwise the type of the default
(``None`` alone declares nothing: annotate such a parameter). Supported forms: ``str``,
``int``, ``float``, ``bool``, ``list[T]`` of those, and ``T | None`` / ``Optional[T]``.
Papermill's own parameter inspection reads neither ``|`` annotations nor the type of a
default, so the cell is read here with :mod:`ast`.

A value typed on the command line is parsed as a Python literal and then coerced where that
is unambiguous (``0`` for ``list[int]`` gives ``[0]``, ``1`` for ``float`` gives ``1.0``, any
text other than a list or dict for ``str`` stays that text) or refused with a one-line :class:`ParameterError` that
names the parameter and the expected form. Text that does not parse never becomes a string
where a non-string is expected.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass

SCALARS = ("str", "int", "float", "bool")
EXAMPLES = {"str": "cpu", "int": "3", "float": "0.5", "bool": "True", "None": "None"}
LIST_EXAMPLES = {"str": "\"['a', 'b']\"", "int": "[0,1,2]", "float": "[0.5,1.0]", "bool": "[True,False]"}


class ParameterError(ValueError):
    """A ``-p`` value (or a parameters cell) that cannot be used; the message is one line."""


@dataclass(frozen=True)
class Kind:
    """A declared parameter type: a scalar name, ``list`` of ``item``, or a union of options.

    ``name`` is one of ``str int float bool None list union``; ``item`` is the element kind of
    a list; ``options`` the members of a union (``None`` included for optional parameters).
    """

    name: str
    item: "Kind | None" = None
    options: tuple["Kind", ...] = ()

    def __str__(self) -> str:
        if self.name == "list":
            return f"list[{self.item}]"
        if self.name == "union":
            return " | ".join(str(option) for option in self.options)
        return self.name

    def example(self) -> str:
        """A value of this kind as one would type it after ``-p NAME``."""
        if self.name == "list":
            return f"{self.item.example()} or {LIST_EXAMPLES[self.item.name]}"
        if self.name == "union":
            return " or ".join(option.example() for option in self.options)
        return EXAMPLES[self.name]


@dataclass(frozen=True)
class Declared:
    """One parameter of a parameters cell: its name, kind (``None``: undeclared), default, help."""

    name: str
    kind: Kind | None
    default: object
    default_source: str
    help: str


def _kind_of_annotation(node: ast.expr, source: str) -> Kind:
    if isinstance(node, ast.Constant) and node.value is None:
        return Kind("None")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        return _kind_of_annotation(ast.parse(node.value, mode="eval").body, node.value)
    if isinstance(node, ast.Name) and node.id in SCALARS:
        return Kind(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _kind_of_annotation(node.left, source), _kind_of_annotation(node.right, source)
        options = tuple(o for side in (left, right) for o in (side.options if side.name == "union" else (side,)))
        return Kind("union", options=options)
    if isinstance(node, ast.Subscript) and isinstance(node.value, (ast.Name, ast.Attribute)):
        head = node.value.id if isinstance(node.value, ast.Name) else node.value.attr
        if head in ("list", "List"):
            item = _kind_of_annotation(node.slice, source)
            if item.name not in SCALARS:
                raise ParameterError(f"unsupported parameter type {ast.unparse(node)!r}: "
                                     "lists hold str, int, float or bool")
            return Kind("list", item=item)
        if head == "Optional":
            return Kind("union", options=(_kind_of_annotation(node.slice, source), Kind("None")))
    raise ParameterError(f"unsupported parameter type {ast.unparse(node)!r}; "
                         "use str, int, float, bool, list[T] or T | None")


def _kind_of_default(value: object) -> Kind | None:
    if value is None:
        return None
    for name in ("bool", "int", "float", "str"):  # bool before int: True is an int too
        if type(value).__name__ == name:
            return Kind(name)
    if isinstance(value, (list, tuple)) and value:
        kinds = {_kind_of_default(item) for item in value}
        if len(kinds) == 1 and None not in kinds:
            return Kind("list", item=kinds.pop())
    return None


def _comments(source: str) -> dict[int, str]:
    comments = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.string.lstrip("#").strip()
    except (tokenize.TokenError, IndentationError):
        pass
    return comments


def declared_parameters(source: str) -> dict[str, Declared]:
    """Read a parameters cell: ``{name: Declared}`` in the cell's order.

    Args:
        source: the text of the cell tagged ``parameters``.

    Raises:
        ParameterError: the cell is not valid Python, or an annotation is of an unsupported form.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise ParameterError(f"the parameters cell is not valid Python: {error}") from None
    comments = _comments(source)
    found = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, annotation, value = node.target.id, node.annotation, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, annotation, value = node.targets[0].id, None, node.value
        else:
            continue
        default_source = ast.get_source_segment(source, value) if value is not None else ""
        try:
            default = ast.literal_eval(value) if value is not None else None
        except ValueError:
            default = default_source
        kind = _kind_of_annotation(annotation, source) if annotation is not None else _kind_of_default(default)
        found[target] = Declared(target, kind, default, default_source, comments.get(node.lineno, ""))
    return found


_MISSING = object()


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _MISSING


def _coerce(value: object, text: str | None, kind: Kind) -> object:
    """``value`` (a parsed literal, or _MISSING) as ``kind``; ``text`` is the raw text (for str)."""
    if kind.name == "None":
        if value is None:
            return None
    elif kind.name == "str":
        if isinstance(value, str):
            return value
        if text is not None and not isinstance(value, (list, tuple, dict, set)):
            return text  # free text (or a number) for a text parameter: taken as typed
    elif kind.name == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind.name == "float":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif kind.name == "bool":
        if isinstance(value, bool):
            return value
        if text is not None and text.strip().lower() in ("true", "false"):
            return text.strip().lower() == "true"
    elif kind.name == "list":
        if isinstance(value, (list, tuple)):
            return [_coerce(item, None, kind.item) for item in value]
        return [_coerce(value, text, kind.item)]  # one value where a list is expected
    elif kind.name == "union":
        if value is None and any(option.name == "None" for option in kind.options):
            return None
        ordered = sorted(kind.options, key=lambda option: option.name == "str")  # text last
        for option in ordered:
            if option.name == "None":
                continue
            try:
                return _coerce(value, text, option)
            except ParameterError:
                continue
    raise ParameterError(str(kind))


def _device_problem(value: str) -> str | None:
    """Why ``value`` cannot be the chapter's device, or ``None`` (checked by the package's own
    :func:`olacore.settings.resolve_device`: a device torch knows, a GPU this machine has)."""
    from olacore.settings import resolve_device

    try:
        resolve_device(value)
    except (RuntimeError, ValueError) as error:
        if value.strip().lower() in ("none", "null", "auto", "default", ""):
            return "not a device; leave the parameter out, or pass -p device None, to use CUDA when available, else the CPU"
        known = "cpu, cuda or cuda:0 (or None: CUDA when available, else the CPU)"
        if "CUDA device" in str(error):
            return f"{str(error).split(';')[0]}; give {known}"
        return f"not a device torch knows; give {known}"
    return None


def _seeds_problem(value: list) -> str | None:
    """Why ``value`` cannot be a list of seeds (as the chapter settings require: some, none negative)."""
    if not value:
        return "an empty list runs nothing; give at least one seed, e.g. -p seeds 0 or -p seeds [0,1,2]"
    negative = [seed for seed in value if seed < 0]
    if negative:
        return f"seeds are non-negative; {negative[0]} is not"
    return None


def _text_problem(value: str) -> str | None:
    """Why ``value`` cannot be a name or text parameter (empty, or holding a NUL character)."""
    if not value.strip():
        return "empty; give a value or leave the parameter out"
    if "\0" in value:
        return "holds a NUL character"
    return None


#: Checks of a value's *use*, by parameter name, run after its type is checked: each returns
#: why the value cannot be used, or ``None``. They run before any cell, as the type checks do.
VALUE_CHECKS = {"device": _device_problem, "seeds": _seeds_problem, "model": _text_problem}


def check_value(declared: Declared, text: str, notebook: str = "the notebook") -> object:
    """The value of ``-p NAME TEXT`` for a declared parameter, coerced to its declared type.

    Args:
        declared: the parameter as read from the parameters cell.
        text: the value as typed on the command line.
        notebook: the notebook's name, for the message.

    Returns:
        The value to inject (``str``, ``int``, ``float``, ``bool``, ``None`` or a list).

    Raises:
        ParameterError: one line naming the parameter, the value, and the expected form; also
            when the parameter declares no type (a ``None`` default without annotation), or
            when a value of the right type cannot be used (:data:`VALUE_CHECKS`: a device
            torch does not know or this machine lacks, no seed, an empty model name).
    """
    if declared.kind is None:
        raise ParameterError(
            f"-p {declared.name}: {notebook} declares no type for {declared.name!r} (default "
            f"{declared.default_source}); annotate it in the parameters cell, e.g. "
            f"`{declared.name}: list[int] | None = None`"
        )
    try:
        value = _coerce(_literal(text), text, declared.kind)
    except ParameterError:
        raise ParameterError(
            f"-p {declared.name} {text!r}: expected {declared.kind} (for example -p {declared.name} "
            f"{declared.kind.example()}); {declared.name} is declared `{declared.name}: {declared.kind}` in {notebook}"
        ) from None
    problem = VALUE_CHECKS[declared.name](value) if value is not None and declared.name in VALUE_CHECKS else None
    if problem:
        raise ParameterError(f"-p {declared.name} {text!r}: {problem} ({declared.name} of {notebook})")
    return value


def check_parameters(declared: dict[str, Declared], given: dict[str, str], notebook: str) -> dict[str, object]:
    """Check every ``-p`` value of ``given`` (``{name: text}``) against ``declared``.

    Returns:
        ``{name: coerced value}`` in the order given.

    Raises:
        ParameterError: an unknown name (the message lists the known ones) or a value of the
            wrong form (see :func:`check_value`).
    """
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ParameterError(
            f"{notebook} has no parameter {', '.join(unknown)}; its parameters are: {', '.join(declared)}"
        )
    return {name: check_value(declared[name], text, notebook) for name, text in given.items()}
