"""What a page shows: figures (OLA heatmaps, dependency arcs, training curves) and tables, each numbered with a
caption and a stable label (:func:`show_figure`: a MyST ``{glue:figure}``; :func:`show_table`: a MyST ``{table}``;
a missing cell shows as a dash with a note saying what it stands for).
"""

from __future__ import annotations

import base64
import html
import math
import re
import textwrap
from numbers import Number
from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import pandas as pd
import torch

__all__ = ["draw_maps", "readable_token", "token_labels",
           "LabelledFigure", "show_figure", "labelled_caption", "LabelledTable", "show_table"]


#: Keyword arguments for every matplotlib text that shows the user's words: never parsed as mathtext.
TEXT = {"parse_math": False}


#: Tokenizer markers that are not part of the word (byte-level BPE, SentencePiece).
_MARKERS = {"\u0120": " ", "\u010a": " ", "\u2581": " "}


def readable_token(token: str) -> str:
    """A token without tokenizer markers: ``"Ġpreacher"`` -> ``"preacher"``, ``"##ing"`` -> ``"-ing"``, a bare
    marker -> ``"␣"`` (for byte-level tokens of non-ASCII text use :func:`token_labels`)."""
    text = str(token)
    piece = text.startswith("##") and len(text) > 2
    text = text[2:] if piece else text
    for marker, plain in _MARKERS.items():
        text = text.replace(marker, plain)
    text = text.strip()
    return ("-" + text if piece else text) or "\u2423"


def token_labels(record) -> list[str]:
    """Labels of a record's tokens (``text``, ``tokens``, ``offsets``): the characters each covers in the text;
    tokens sharing a character read ``"我 (1/2)"``, ``"我 (2/2)"``; tokens covering none as :func:`readable_token`."""
    text, tokens, offsets = record.text, list(record.tokens), [tuple(span) for span in record.offsets]
    runs: list[list[int]] = []  # consecutive tokens whose character spans overlap
    end = -1
    for index, (start, stop) in enumerate(offsets):
        if stop <= start:
            continue
        if runs and start < end:
            runs[-1].append(index)
            end = max(end, stop)
        else:
            runs.append([index])
            end = stop
    labels = [readable_token(token) for token in tokens]
    for run in runs:
        for place, index in enumerate(run, 1):
            start, stop = offsets[index]
            label = text[start:stop]
            if tokens[index].startswith("##") and len(tokens[index]) > 2:
                label = "-" + label
            labels[index] = f"{label} ({place}/{len(run)})" if len(run) > 1 else label
    return labels


def _wrapped(title: str, width_inches: float, fontsize: float) -> str:
    """``title`` broken into lines that fit ``width_inches`` at ``fontsize`` points."""
    per_line = max(int(width_inches * 72 / (0.6 * fontsize)), 10)
    return "\n".join(textwrap.wrap(title, per_line)) or title


def draw_maps(
    rows: Mapping[str, Mapping[str, torch.Tensor]],
    *,
    labels: Mapping[str, Sequence[str]] | None = None,
    title: str | None = None,
    panel_size: float = 2.6,
    max_columns: int = 2,
):
    """A matplotlib ``Figure`` of square maps, one per (row, panel), each with its colour bar (at the 99th
    percentile).

    Args:
        rows: ``{row name: {panel name: (T, T) tensor}}``, the same panel names in every row.
        labels: optional ``{row name: T tick labels}``, shown when short.
        max_columns: at most this many panels side by side (several rows with more panels are transposed).
    """
    panels = list(next(iter(rows.values())).keys())
    cells = [(row_name, panel) for row_name in rows for panel in panels]
    if len(rows) == 1:
        ncols = min(len(panels), max_columns)
        nrows = -(-len(panels) // ncols)
        place = {cell: divmod(i, ncols) for i, cell in enumerate(cells)}
    elif len(panels) > max_columns and len(rows) <= max_columns:
        nrows, ncols = len(panels), len(rows)
        place = {(row_name, panel): (p, r) for r, row_name in enumerate(rows) for p, panel in enumerate(panels)}
    else:
        nrows, ncols = len(rows), len(panels)
        place = {(row_name, panel): (r, p) for r, row_name in enumerate(rows) for p, panel in enumerate(panels)}
    fig, axes = plt.subplots(nrows, ncols, figsize=(1.25 * panel_size * ncols, panel_size * nrows),
                             squeeze=False, constrained_layout=True)
    for ax in axes.flat:
        ax.set_visible(False)
    for row_name, panel in cells:
        ax = axes[place[(row_name, panel)]]
        ax.set_visible(True)
        image = rows[row_name][panel].detach().float().cpu()
        vmax = torch.quantile(image.flatten(), 0.99).item()  # a sink column does not wash out the map
        drawn = ax.imshow(image.numpy(), cmap="viridis", vmin=0.0, vmax=max(vmax, 1e-12), interpolation="nearest")
        bar = fig.colorbar(drawn, ax=ax, fraction=0.046, pad=0.03)
        bar.ax.tick_params(labelsize=7)
        if place[(row_name, panel)][1] == ncols - 1:
            bar.set_label("attention weight", fontsize=7)
        ticks = labels.get(row_name) if labels else None
        if ticks is not None and len(ticks) <= 24:
            words = [readable_token(t) for t in ticks]
            size = 7 if len(words) <= 16 else 6
            ax.set_xticks(range(len(words)), words, rotation=90, fontsize=size, **TEXT)
            ax.set_yticks(range(len(words)), words, fontsize=size, **TEXT)
        else:
            ax.set_xticks([])
            ax.set_yticks([])
        ax.set_title(panel if len(rows) == 1 else f"{row_name}: {panel}", fontsize=9, **TEXT)
    if len(cells) > 1:
        fig.supxlabel("key token j", fontsize=9)
        fig.supylabel("query token i", fontsize=9)
    if title:
        fontsize = plt.rcParams["figure.titlesize"]
        fontsize = fontsize if isinstance(fontsize, (int, float)) else 1.2 * plt.rcParams["font.size"]
        fig.suptitle(_wrapped(title, fig.get_figwidth(), fontsize), fontsize=fontsize, **TEXT)
    fig.get_layout_engine().set(w_pad=0.02, h_pad=0.02)
    return fig


class LabelledFigure:
    """A glued figure with a caption and a stable ``label`` (``"fig-order-maps"``): a MyST ``{glue:figure}`` in
    the book, ``body`` (HTML) and caption in Jupyter.

    Raises:
        ValueError: a label that is not lowercase-hyphenated or an empty caption.
    """

    def __init__(self, body: str, label: str, caption: str):
        caption = labelled_caption("figure", label, caption, "fig-order-maps",
                                   "one line saying what is plotted, in which units")
        self.body, self.label, self.caption = body, label, caption

    def to_markdown(self) -> str:
        """The MyST source."""
        return "\n".join([f":::{{glue:figure}} {self.label}", f":name: {self.label}", "", self.caption, ":::"])

    _repr_markdown_ = to_markdown

    def _repr_html_(self) -> str:
        return (f'<figure id="{self.label}">{self.body}<figcaption><strong>Figure ({html.escape(self.label)}).</strong> '
                f"{html.escape(self.caption)}</figcaption></figure>")

    def __repr__(self) -> str:
        return f"Figure ({self.label}). {self.caption}"


def show_figure(fig, label: str, caption: str) -> None:
    """Show ``fig`` (matplotlib, closed once glued, or interactive) numbered, under ``caption`` and ``label``.

    Raises:
        ValueError: see :class:`LabelledFigure`.
    """
    import io

    from IPython.display import display
    from myst_nb import glue

    labelled = LabelledFigure("", label, caption)  # checks label and caption before anything is shown
    if hasattr(fig, "to_html"):  # an interactive (plotly) figure
        labelled.body = fig.to_html()
        glue(label, fig, display=False)
    else:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", bbox_inches="tight")
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        labelled.body = f'<img src="data:image/png;base64,{data}" alt="{html.escape(labelled.caption)}">'
        glue(label, fig, display=False)
        plt.close(fig)
    display(labelled)


LABEL = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def labelled_caption(kind: str, label: str, caption: str, example: str, needs: str) -> str:
    """``caption`` on one line; ``ValueError`` naming the label unless it is lowercase-hyphenated and a caption given."""
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
    """An index value as a label: a number as written (0.01, not 0.0)."""
    if isinstance(value, float) and not math.isnan(value):
        return f"{value:g}"
    return value


def _flatten(frame: pd.DataFrame) -> pd.DataFrame:
    """Index levels as columns (unless a plain 0..n-1 index); column levels joined by spaces."""
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
    """A DataFrame with a caption and a stable ``label`` (``"tbl-retrieval"``): HTML in Jupyter, a MyST table in
    the book.

    Args:
        decimals: digits after the point (default: pandas' ``display.precision``).
        missing: what a dash (a NaN or None cell) stands for.
        formats: ``{column: format spec}`` where ``decimals`` does not suit (``{"max abs deviation": ".1e"}``).

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
        """The line saying what a dash stands for; empty when no cell is missing."""
        return f"– marks {self.missing}." if _flatten(self.frame).isna().to_numpy().any() else ""

    def to_markdown(self) -> str:
        """The MyST source."""
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

    _repr_markdown_ = to_markdown

    def _repr_html_(self) -> str:
        frame_html = self.frame.to_html(float_format=lambda x: f"{x:.{self.decimals}f}", na_rep="–")
        return (f'<div class="olacore-table" id="{self.label}"><p><strong>Table ({html.escape(self.label)}).</strong> '
                f"{html.escape(self.caption)}</p>{frame_html}"
                + (f"<p>{html.escape(self.note())}</p>" if self.note() else "") + "</div>")

    def __repr__(self) -> str:
        return f"Table ({self.label}). {self.caption}\n{self.frame.to_string()}"


def show_table(frame: pd.DataFrame, label: str, caption: str, *, decimals: int | None = None,
               missing: str = "a value that does not exist", formats: dict[str, str] | None = None) -> None:
    """Display ``frame`` with ``caption`` under the stable ``label`` (:class:`LabelledTable`).

    Raises:
        ValueError: see :class:`LabelledTable`.
    """
    from IPython.display import display

    display(LabelledTable(frame, label, caption, decimals=decimals, missing=missing, formats=formats))
