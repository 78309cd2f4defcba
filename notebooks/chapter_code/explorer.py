"""Chapter 02's order explorer: interactive OLA heatmaps for static pages (plotly); pick a model, an order, hover.

The figure needs no kernel: the maps travel in the page as JSON and plotly.js redraws them. The
output never embeds plotly.js (the book loads it once from ``_static``, ``scripts/book_ext.py``).
The layout follows the page's width, from a phone's 390 px to a desktop column.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["InteractiveFigure", "order_explorer"]


class InteractiveFigure:
    """A plotly figure as a notebook output that also works in a static HTML page.

    Its mime bundle holds ``application/vnd.plotly.v1+json`` (for JupyterLab), ``text/html`` (a ``<div>``
    and a ``Plotly.newPlot`` call that expect ``window.Plotly``) and a ``text/plain`` description.

    Attributes:
        figure: the ``plotly.graph_objects.Figure``.
        description: one line saying what the figure shows (the text/plain output).
    """

    def __init__(self, figure, description: str):
        self.figure, self.description = figure, description

    def to_json(self) -> str:
        """The figure as plotly JSON (data and layout; what the page carries)."""
        return self.figure.to_json()

    def to_html(self) -> str:
        """A ``<div>`` plus the script that draws it; plotly.js itself is not included."""
        import plotly.io as pio

        div_id = "olacore-" + hashlib.sha256(self.to_json().encode()).hexdigest()[:12]
        return pio.to_html(self.figure, include_plotlyjs=False, full_html=False, div_id=div_id,
                           config={"displaylogo": False, "responsive": True})

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {
            "application/vnd.plotly.v1+json": json.loads(self.to_json()),
            "text/html": self.to_html(),
            "text/plain": self.description,
        }


def _plain(text) -> str:
    """``text`` as plotly shows it literally: ``&``, ``<``, ``>``, ``$`` (markup, LaTeX) become HTML entities."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("$", "&#36;"))


def _as_array(value, model: str, order: str) -> np.ndarray:
    array = np.asarray(value.detach().cpu().double() if hasattr(value, "detach") else value, dtype=float)
    if array.ndim != 2 or array.shape[0] != array.shape[1]:
        raise ValueError(f"map {model!r} / {order!r} must be square (T, T), got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"map {model!r} / {order!r} holds NaN or infinite values")
    return array


def order_explorer(maps: Mapping[str, Mapping[str, object]], labels: Mapping[str, Sequence[str]], *,
                   title: str = "", unit: str = "word", clip_quantile: float = 0.99,
                   significant: int = 4) -> InteractiveFigure:
    """One heatmap with a model menu and order buttons; hovering a cell shows query, key and weight.

    Args:
        maps: ``{model: {order name: (T, T) map}}`` (tensors or arrays, rows = queries,
            columns = keys), the same order names for every model (e.g. ``"order 1"`` ...
            ``"rollout"``, OLA as in section 3 of the paper); T may differ between models.
        labels: ``{model: T labels}``, the query/key tokens or words of each model's maps.
        title: shown above the plot (wrapped). Title, labels, model and order names are shown as
            typed: ``<b>``, ``&`` or ``$...$`` in them are text, not markup.
        unit: what a row stands for (``"word"`` or ``"token"``), in the hover text and axes.
        clip_quantile: each map's colour scale runs from 0 to this quantile of its weights.
        significant: significant digits kept in the page's JSON.

    Returns:
        An :class:`InteractiveFigure`; its JSON grows as models x orders x T^2.

    Raises:
        ValueError: no maps, order names that differ between models, a map that is not square
            or not finite, or labels whose number is not T.
    """
    import plotly.graph_objects as go

    if not maps:
        raise ValueError("order_explorer needs at least one model's maps")
    models = list(maps)
    orders = list(maps[models[0]])
    if not orders:
        raise ValueError(f"model {models[0]!r} has no maps")
    for model in models:
        if list(maps[model]) != orders:
            raise ValueError(f"every model needs the orders {orders}; {model!r} has {list(maps[model])}")
        if model not in labels:
            raise ValueError(f"no {unit} labels for model {model!r}")
    arrays = {m: {o: _as_array(maps[m][o], m, o) for o in orders} for m in models}
    for model in models:
        size = arrays[model][orders[0]].shape[0]
        if any(a.shape[0] != size for a in arrays[model].values()) or len(labels[model]) != size:
            raise ValueError(f"model {model!r}: maps of {size} x {size} need {size} labels, got {len(labels[model])}")

    def rounded(array):
        return [[float(f"{v:.{significant}g}") for v in row] for row in array]

    def top(array):
        return float(f"{max(np.quantile(array, clip_quantile), 1e-12):.{significant}g}")

    figure = go.Figure()
    for index, model in enumerate(models):
        words = [_plain(w) for w in labels[model]]
        figure.add_trace(go.Heatmap(
            z=rounded(arrays[model][orders[0]]), zmin=0, zmax=top(arrays[model][orders[0]]),
            customdata=[[[q, k] for k in words] for q in words], colorscale="Viridis", visible=index == 0,
            name=model,
            hovertemplate=(f"query {unit}: %{{customdata[0]}}<br>key {unit}: %{{customdata[1]}}"
                           f"<br>weight: %{{z:.{significant}g}}<extra>{_plain(model)}</extra>"),
        ))

    def axes(model):
        ticks = {"tickmode": "array", "tickvals": list(range(len(labels[model]))),
                 "ticktext": [_plain(w) for w in labels[model]]}
        return {"xaxis.tickvals": ticks["tickvals"], "xaxis.ticktext": ticks["ticktext"],
                "yaxis.tickvals": ticks["tickvals"], "yaxis.ticktext": ticks["ticktext"]}

    model_menu = [
        {"label": _plain(model), "method": "update",
         "args": [{"visible": [m == model for m in models]}, axes(model)]}
        for model in models
    ]
    order_buttons = [
        {"label": _plain(order), "method": "restyle",
         "args": [{"z": [rounded(arrays[m][order]) for m in models], "zmax": [top(arrays[m][order]) for m in models]}]}
        for order in orders
    ]
    first = axes(models[0])
    # Laid out to work from a phone's 390 px to a desktop column: the title wrapped narrow, the
    # model menu and the order buttons on rows of their own above the map (never side by side,
    # where they overlap on a phone), the colour bar laid flat at the foot of the figure (a
    # vertical bar takes a fifth of a phone's width from the map), margins grown by plotly only
    # as far as the tick labels need (automargin), the width following the page (autosize and
    # the ``responsive`` config of :meth:`InteractiveFigure.to_html`); map, controls and colour
    # bar aligned on the left.
    title_lines = ["<br>".join(_plain(line) for line in textwrap.wrap(title, 44))] if title else []
    lines = title_lines[0].count("<br>") + 1 if title_lines else 0
    title_px = 18 * lines + (10 if lines else 0)
    figure.update_traces(colorbar={"title": {"text": "weight", "side": "right"}, "orientation": "h", "yref": "container",
                                   "y": 0.0, "yanchor": "bottom", "ypad": 6, "x": 0.0, "xanchor": "left",
                                   "thickness": 12, "len": 0.6, "lenmode": "fraction"})
    figure.update_layout(
        title={"text": title_lines[0] if title_lines else "", "x": 0.0, "xanchor": "left", "xref": "container",
               "yref": "container", "y": 1.0, "yanchor": "top", "pad": {"t": 20, "l": 8}, "font": {"size": 14}},
        autosize=True, height=610 + title_px, margin={"t": 106 + title_px, "l": 8, "r": 8, "b": 56, "autoexpand": True},
        font={"size": 12},
        xaxis={"title": {"text": f"key {unit}", "standoff": 4}, "tickmode": "array", "tickvals": first["xaxis.tickvals"],
               "ticktext": first["xaxis.ticktext"], "tickangle": -45, "constrain": "domain", "constraintoward": "left",
               "automargin": True},
        yaxis={"title": {"text": f"query {unit}", "standoff": 4}, "tickmode": "array", "tickvals": first["yaxis.tickvals"],
               "ticktext": first["yaxis.ticktext"], "autorange": "reversed", "scaleanchor": "x", "constrain": "domain",
               "constraintoward": "top", "automargin": True},
        updatemenus=[
            {"buttons": model_menu, "direction": "down", "x": 0.0, "xanchor": "left", "y": 1.0, "yanchor": "bottom",
             "pad": {"b": 48, "t": 0, "l": 0, "r": 0}, "showactive": True, "active": 0},
            {"buttons": order_buttons, "type": "buttons", "direction": "right", "x": 0.0, "xanchor": "left",
             "y": 1.0, "yanchor": "bottom", "pad": {"b": 8, "t": 0, "l": 0, "r": 0}, "showactive": True, "active": 0},
        ],
    )
    description = (f"Interactive heatmap ({title or 'OLA'}): {len(models)} models ({', '.join(models)}) x "
                   f"{len(orders)} maps ({', '.join(orders)}); hover a cell for query {unit}, key {unit} and weight.")
    return InteractiveFigure(figure, description)
