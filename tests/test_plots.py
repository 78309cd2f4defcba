"""Figures (olacore.plots, and chapter 06's dependency-arc overlay, which checks its inputs)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from chapter_code.syntax import draw_arcs  # noqa: E402
from olacore.corpora import UDSentence  # noqa: E402


def test_draw_arcs_marks_gold_and_predicted_heads():
    sentence = UDSentence("t", "w0 w1 w2", ("w0", "w1", "w2"), ((0, 2), (3, 5), (6, 8)), (2, 0, 2),
                          ("dep", "root", "dep"), ("NOUN", "VERB", "NOUN"))
    fig, ax = plt.subplots()
    draw_arcs(ax, torch.rand(3, 3), sentence, [2, 0, 1], title="toy")
    assert ax.get_title() == "toy: root gold=['w1'] pred=['w1']"
    gold, predicted = (np.asarray(c.get_offsets()) for c in ax.collections)
    # markers sit at (column = head - 1, row = dependent)
    assert sorted(map(tuple, gold.tolist())) == [(1.0, 0.0), (1.0, 2.0)]
    assert sorted(map(tuple, predicted.tolist())) == [(0.0, 2.0), (1.0, 0.0)]
    with pytest.raises(ValueError, match="do not fit"):
        draw_arcs(ax, torch.rand(2, 2), sentence, [2, 0, 1])
    with pytest.raises(ValueError, match="do not fit"):
        draw_arcs(ax, torch.rand(3, 3), sentence, [2, 0])
    plt.close(fig)


def _svg_texts(fig) -> list[str]:
    """The strings of the figure's SVG ``<text>`` elements (with ``svg.fonttype = none`` matplotlib
    writes plain text as one element; mathtext splits it into positioned glyphs)."""
    import io
    import xml.etree.ElementTree as ET

    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg")
    root = ET.fromstring(buffer.getvalue())
    return ["".join(e.itertext()).strip() for e in root.iter("{http://www.w3.org/2000/svg}text")]


@pytest.mark.parametrize("text", ["It costs $5 today and $10 tomorrow.", "Ba$$in", r"$\x and $y", "a_b^c {x}"])
def test_user_text_is_drawn_as_typed_in_titles_and_ticks(text):
    from olacore.plots import draw_maps

    words = text.split()
    fig = draw_maps({"m": {"order 1": torch.rand(len(words), len(words))}}, labels={"m": words}, title=text,
                    panel_size=8)  # wide enough for the title on one line
    texts = _svg_texts(fig)  # mathtext fails on Ba$$in, and splits '$5 today and $10' into glyphs
    assert text in texts
    assert all(word in texts for word in words)
    plt.close(fig)


def test_long_title_is_wrapped_inside_the_figure():
    from olacore.plots import draw_maps

    title = "The committee, having considered every submission received before the deadline, decided."
    fig = draw_maps({"m": {"order 1": torch.rand(3, 3), "order 2": torch.rand(3, 3)}}, title=title)
    fig.canvas.draw()
    box = fig._suptitle.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    assert " ".join(fig._suptitle.get_text().split()) == title  # wrapped, nothing dropped
    plt.close(fig)


def test_arc_overlay_draws_words_as_typed():
    sentence = UDSentence("t", "$5 or $6", ("$5", "or", "$6"), ((0, 2), (3, 5), (6, 8)), (2, 0, 2),
                          ("dep", "root", "dep"), ("NUM", "CCONJ", "NUM"))
    fig, ax = plt.subplots()
    draw_arcs(ax, torch.rand(3, 3), sentence, [2, 0, 1], title="$5 or $6")
    texts = _svg_texts(fig)
    assert ax.get_title() in texts and "$5" in texts and "$6" in texts
    plt.close(fig)


def test_tokens_are_shown_without_tokenizer_markers():
    from olacore.plots import readable_token

    assert [readable_token(t) for t in ["\u0120preacher", "\u2581the", "##ing", "\u0120", "<s>", "word"]] == [
        "preacher", "the", "-ing", "\u2423", "<s>", "word"]
    fig = draw_maps_with(["\u0120The", "\u0120preacher", "\u2581said"])
    texts = _svg_texts(fig)
    assert "preacher" in texts and not any("\u0120" in t or "\u2581" in t for t in texts)
    plt.close(fig)


def draw_maps_with(tokens):
    from olacore.plots import draw_maps

    return draw_maps({"m": {"order 1": torch.rand(len(tokens), len(tokens))}}, labels={"m": tokens})


def test_every_map_has_a_colour_bar_and_many_panels_wrap():
    from olacore.plots import draw_maps

    fig = draw_maps({"m": {f"order {k}": torch.rand(4, 4) for k in range(1, 6)}})
    shown = [ax for ax in fig.axes if ax.get_visible() and ax.images]
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(shown) == 5 and len(bars) == 5
    assert max(ax.get_subplotspec().colspan.stop for ax in shown) <= 2  # two panels a row at most
    plt.close(fig)


def test_a_figure_needs_a_label_and_a_caption():
    from olacore.plots import LabelledFigure

    figure = LabelledFigure("<img>", "fig-order-maps", "Order 1,  in % .")
    assert figure.to_markdown().splitlines()[:2] == [":::{glue:figure} fig-order-maps", ":name: fig-order-maps"]
    assert "Order 1, in % ." in figure.to_markdown()
    with pytest.raises(ValueError, match="label"):
        LabelledFigure("<img>", "Fig 1", "caption")
    with pytest.raises(ValueError, match="caption"):
        LabelledFigure("<img>", "fig-x", "  ")
