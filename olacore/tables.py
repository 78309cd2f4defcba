"""Tables a page can cite: a DataFrame shown with a caption and a stable label.

In a notebook, :func:`show_table` displays the frame under its caption (HTML). In the book,
the same output carries a MyST ``{table}`` directive (``text/markdown``; ``_config.yml``
renders markdown outputs as MyST and prefers them to HTML), so the table is numbered, has its
caption, and its label is a Sphinx target: ``{ref}`label``` or ``{numref}`label``` from any
page, and ``page.html#label`` from anywhere.
"""

from __future__ import annotations

import html
import math
import re
from numbers import Number

import pandas as pd

LABEL = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>$|{}#~])")


def _flat_name(name) -> str:
    if isinstance(name, tuple):
        return " ".join(str(part) for part in name if str(part) != "")
    return str(name)


def _flatten(frame: pd.DataFrame) -> pd.DataFrame:
    """Index levels become columns (unless a plain 0..n-1 index); column levels are joined by spaces."""
    out = frame.copy()
    if not (isinstance(out.index, pd.RangeIndex) and out.index.start == 0 and out.index.step == 1
            and all(name is None for name in out.index.names)):
        out = out.reset_index()
    out.columns = [_flat_name(column) for column in out.columns]
    return out


def _cell(value, decimals: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Number) and not isinstance(value, int):
        return f"{float(value):.{decimals}f}"
    text = " ".join(str(value).split())
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


class LabelledTable:
    """A DataFrame with a caption and a label, displayed as HTML in Jupyter and as a MyST table in the book.

    Args:
        frame: the table; a non-trivial index is shown as leading columns, MultiIndex columns
            are joined with spaces ("hits@1 order 1").
        label: the stable anchor, lowercase words joined by hyphens (``"tbl-retrieval"``);
            must be unique in the book.
        caption: one line of MyST (roles such as ``{cite}`` work in the book).
        decimals: digits after the point for non-integer numbers; default: pandas'
            ``display.precision``.

    Raises:
        ValueError: a label that is not lowercase-hyphenated, an empty caption, or a frame
            that is not a ``pandas.DataFrame``.
    """

    def __init__(self, frame: pd.DataFrame, label: str, caption: str, *, decimals: int | None = None):
        if not isinstance(frame, pd.DataFrame):
            raise ValueError(f"show_table needs a pandas DataFrame, got {type(frame).__name__}; "
                             "wrap a Series with .to_frame()")
        if not LABEL.match(label or ""):
            raise ValueError(f"table label {label!r} must be lowercase words joined by hyphens, e.g. 'tbl-retrieval'")
        caption = " ".join((caption or "").split())
        if not caption:
            raise ValueError(f"table {label!r} needs a caption: one line saying what the numbers are")
        self.frame, self.label, self.caption = frame, label, caption
        self.decimals = pd.get_option("display.precision") if decimals is None else int(decimals)

    def to_markdown(self) -> str:
        """The MyST source: a ``{table}`` directive with the caption, ``:name:`` label and a pipe table."""
        flat = _flatten(self.frame)
        numeric = [pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
                   for dtype in flat.dtypes]
        header = "| " + " | ".join(_cell(name, self.decimals) or " " for name in flat.columns) + " |"
        rule = "|" + "|".join("---:" if right else ":---" for right in numeric) + "|"
        rows = ["| " + " | ".join(_cell(value, self.decimals) for value in row) + " |"
                for row in flat.itertuples(index=False, name=None)]
        return "\n".join([f":::{{table}} {self.caption}", f":name: {self.label}", "", header, rule, *rows, ":::"])

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        frame_html = self.frame.to_html(float_format=lambda x: f"{x:.{self.decimals}f}", na_rep="–")
        return (f'<div class="olacore-table" id="{self.label}"><p><strong>Table ({html.escape(self.label)}).</strong> '
                f"{html.escape(self.caption)}</p>{frame_html}</div>")

    def __repr__(self) -> str:
        return f"Table ({self.label}). {self.caption}\n{self.frame.to_string()}"


def show_table(frame: pd.DataFrame, label: str, caption: str, *, decimals: int | None = None) -> None:
    """Display ``frame`` with ``caption`` under the stable ``label`` (see :class:`LabelledTable`).

    Returns ``None``, so a cell that ends with it shows the table once.

    Raises:
        ValueError: see :class:`LabelledTable`.
    """
    from IPython.display import display

    display(LabelledTable(frame, label, caption, decimals=decimals))
