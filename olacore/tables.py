"""Tables a page can cite: a DataFrame shown with a caption and a stable label.

In a notebook, :func:`show_table` displays the frame under its caption (HTML); in the book the same
output carries a MyST ``{table}`` directive (``text/markdown``, which ``_config.yml`` prefers to HTML),
so the table is numbered and its label is a target (``{ref}`label```, ``{numref}`label```, ``page.html#label``).

A missing value (NaN, None) is shown as a dash, with a note under the table saying what it stands for
(``missing=``). A plain 0..n-1 index is not shown.
"""

from __future__ import annotations

import html
import math
import re
from numbers import Number

import pandas as pd

LABEL = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def labelled_caption(kind: str, label: str, caption: str, example: str, needs: str) -> str:
    """``caption`` on one line, after checking that a numbered ``kind`` ("table", "figure") has a
    lowercase-hyphenated ``label`` and a caption (``ValueError`` naming the label otherwise)."""
    if not LABEL.match(label or ""):
        raise ValueError(f"{kind} label {label!r} must be lowercase words joined by hyphens, e.g. {example!r}")
    caption = " ".join((caption or "").split())
    if not caption:
        raise ValueError(f"{kind} {label!r} needs a caption: {needs}")
    return caption
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>$|{}#~])")


def _flat_name(name) -> str:
    if isinstance(name, tuple):
        return " ".join(str(part) for part in name if str(part) != "")
    return str(name)


def _label(value):
    """An index value as a label: a number prints as written (0.01, not 0.0 at one decimal); NaN stays NaN."""
    if isinstance(value, float) and not math.isnan(value):
        return f"{value:g}"
    return value


def _flatten(frame: pd.DataFrame) -> pd.DataFrame:
    """Index levels become columns of labels (unless a plain 0..n-1 index); column levels are joined by spaces."""
    out = frame.copy()
    if not (isinstance(out.index, pd.RangeIndex) and out.index.start == 0 and out.index.step == 1
            and all(name is None for name in out.index.names)):
        levels = [out.index.get_level_values(i).map(_label) for i in range(out.index.nlevels)]
        out.index = pd.MultiIndex.from_arrays(levels, names=out.index.names) if len(levels) > 1 else levels[0]
        out = out.reset_index()
    out.columns = [_flat_name(column) for column in out.columns]
    return out


def _cell(value, decimals: int, spec: str | None = None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if spec is not None and isinstance(value, Number):
        return format(value, spec)
    if isinstance(value, Number) and not isinstance(value, int):
        return f"{float(value):.{decimals}f}"
    text = " ".join(str(value).split())
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


class LabelledTable:
    """A DataFrame with a caption and a label, displayed as HTML in Jupyter and as a MyST table in the book.

    Args:
        frame: the table; a non-trivial index is shown as leading columns, MultiIndex columns
            are joined with spaces ("hits@1 order 1").
        label: the stable anchor, lowercase words joined by hyphens (``"tbl-retrieval"``), unique in the book.
        caption: one line of MyST (roles such as ``{cite}`` work in the book).
        decimals: digits after the point for non-integer numbers (default: pandas' ``display.precision``).
        missing: what a dash (a NaN or None cell) stands for, one line of MyST ("not defined for an encoder").
        formats: ``{column: format spec}`` for columns that ``decimals`` does not suit
            (``{"max abs deviation": ".1e"}``); a flattened name for MultiIndex columns.

    Raises:
        ValueError: a label that is not lowercase-hyphenated, an empty caption, or a frame
            that is not a ``pandas.DataFrame``.
    """

    def __init__(self, frame: pd.DataFrame, label: str, caption: str, *, decimals: int | None = None,
                 missing: str = "a value that does not exist", formats: dict[str, str] | None = None):
        if not isinstance(frame, pd.DataFrame):
            raise ValueError(f"show_table needs a pandas DataFrame, got {type(frame).__name__}; "
                             "wrap a Series with .to_frame()")
        caption = labelled_caption("table", label, caption, "tbl-retrieval", "one line saying what the numbers are")
        self.frame, self.label, self.caption = frame, label, caption
        self.decimals = pd.get_option("display.precision") if decimals is None else int(decimals)
        self.missing = " ".join(str(missing).split()) or "a value that does not exist"
        self.formats = dict(formats or {})
        unknown = sorted(set(self.formats) - set(_flatten(frame).columns))
        if unknown:
            raise ValueError(f"table {label!r}: formats name columns it does not have: {unknown}")

    def note(self) -> str:
        """The line under the table saying what a dash stands for; empty when no cell is missing."""
        return f"– marks {self.missing}." if _flatten(self.frame).isna().to_numpy().any() else ""

    def to_markdown(self) -> str:
        """The MyST source: a ``{table}`` directive with the caption, ``:name:`` label and a pipe table."""
        flat = _flatten(self.frame)
        numeric = [pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
                   for dtype in flat.dtypes]
        header = "| " + " | ".join(_cell(name, self.decimals) or " " for name in flat.columns) + " |"
        rule = "|" + "|".join("---:" if right else ":---" for right in numeric) + "|"
        specs = [self.formats.get(name) for name in flat.columns]
        rows = ["| " + " | ".join(_cell(value, self.decimals, spec) for value, spec in zip(row, specs)) + " |"
                for row in flat.itertuples(index=False, name=None)]
        note = self.note()
        return "\n".join([f":::{{table}} {self.caption}", f":name: {self.label}", "", header, rule, *rows, ":::",
                          *(["", note] if note else [])])

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        frame_html = self.frame.to_html(float_format=lambda x: f"{x:.{self.decimals}f}", na_rep="–")
        return (f'<div class="olacore-table" id="{self.label}"><p><strong>Table ({html.escape(self.label)}).</strong> '
                f"{html.escape(self.caption)}</p>{frame_html}"
                + (f"<p>{html.escape(self.note())}</p>" if self.note() else "") + "</div>")

    def __repr__(self) -> str:
        return f"Table ({self.label}). {self.caption}\n{self.frame.to_string()}"


def show_table(frame: pd.DataFrame, label: str, caption: str, *, decimals: int | None = None,
               missing: str = "a value that does not exist", formats: dict[str, str] | None = None) -> None:
    """Display ``frame`` with ``caption`` under the stable ``label`` (see :class:`LabelledTable`); returns
    ``None``, so a cell that ends with it shows the table once.

    Raises:
        ValueError: see :class:`LabelledTable`.
    """
    from IPython.display import display

    display(LabelledTable(frame, label, caption, decimals=decimals, missing=missing, formats=formats))
