"""olacore.plots: a DataFrame with a caption and a label, as HTML for Jupyter and a MyST table for the book."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from docutils import nodes
from docutils.core import publish_doctree
from myst_parser.parsers.docutils_ import Parser

from olacore.plots import LabelledTable, show_table


def _frame():
    frame = pd.DataFrame({("hits@1", "order 1"): [83.61, np.nan], ("hits@5", "order 1"): [95.0, 12.25]},
                         index=pd.MultiIndex.from_tuples([("causal", "a|b"), ("encoder", "x_y")], names=["kind", "pair"]))
    frame[("verdict", "")] = ["holds", "does not hold here"]
    return frame


def test_markdown_is_a_myst_table_with_caption_label_and_flat_columns():
    text = LabelledTable(_frame(), "tbl-retrieval", "Hits (%) with $x$.", decimals=1).to_markdown()
    lines = text.splitlines()
    assert lines[0] == ":::{table} Hits (%) with $x$." and lines[1] == ":name: tbl-retrieval" and lines[7] == ":::"
    assert lines[3] == "| kind | pair | hits@1 order 1 | hits@5 order 1 | verdict |"
    assert lines[4] == "|:---|:---|---:|---:|:---|"
    assert lines[5] == r"| causal | a\|b | 83.6 | 95.0 | holds |"
    assert lines[6] == r"| encoder | x\_y | – | 12.2 | does not hold here |"


def test_a_dash_gets_a_note_under_the_table_and_a_full_table_none():
    text = LabelledTable(_frame(), "tbl-a", "c", missing="no encoder score").to_markdown()
    after = text.split("\n:::\n", 1)[1]
    assert "–" in after and "no encoder score" in after
    full = LabelledTable(pd.DataFrame({"a": [1.0, 2.0]}), "tbl-b", "c", missing="no encoder score")
    assert full.to_markdown().endswith(":::") and "no encoder score" not in full._repr_html_()
    assert "no encoder score" in LabelledTable(_frame(), "tbl-a", "c", missing="no encoder score")._repr_html_()


def test_index_numbers_print_as_labels_and_formats_override_decimals():
    frame = pd.DataFrame({"hits": [50.0, 1e-17]}, index=pd.MultiIndex.from_tuples(
        [("noise", 0.01), ("trained", np.nan)], names=["control", "scale"]))
    text = LabelledTable(frame, "tbl-n", "c", decimals=1, formats={"hits": ".1e"}).to_markdown()
    assert "| noise | 0.01 | 5.0e+01 |" in text and "| trained | – | 1.0e-17 |" in text
    with pytest.raises(ValueError, match="hitz"):
        LabelledTable(frame, "tbl-n", "c", formats={"hitz": ".1e"})


def test_the_markdown_parses_to_a_numbered_table_node_with_the_label():
    text = LabelledTable(_frame(), "tbl-retrieval", "Hits (%).", decimals=1).to_markdown()
    doctree = publish_doctree(text, parser=Parser(), settings_overrides={
        "myst_enable_extensions": ["colon_fence"], "report_level": 2, "halt_level": 2})
    tables = list(doctree.findall(nodes.table))
    assert len(tables) == 1 and "tbl-retrieval" in tables[0]["ids"]
    assert tables[0].next_node(nodes.title).astext() == "Hits (%)."
    rows = list(tables[0].findall(nodes.row))
    assert len(rows) == 3 and rows[1].astext().split("\n\n")[:2] == ["causal", "a|b"]


def test_html_repr_carries_the_anchor_and_caption():
    table = LabelledTable(_frame(), "tbl-x", "A <caption>.")
    html = table._repr_html_()
    assert html.startswith('<div class="olacore-table" id="tbl-x">') and "A &lt;caption&gt;." in html
    assert "<table" in html and "83.610" in html
    assert repr(table).startswith("Table (tbl-x). A <caption>.")


def test_a_plain_index_is_not_shown_and_numbers_follow_pandas_precision():
    with pd.option_context("display.precision", 2):
        text = LabelledTable(pd.DataFrame({"a": [1, 2], "b": [0.125, True]}), "tbl-y", "c").to_markdown()
    assert "| a | b |" in text and "| 1 | 0.12 |" in text


@pytest.mark.parametrize("label", ["Tbl-X", "tbl x", "", "tbl_x", "-tbl", "tbl-"])
def test_bad_labels_are_refused(label):
    with pytest.raises(ValueError, match="hyphens"):
        LabelledTable(pd.DataFrame({"a": [1]}), label, "caption")


def test_caption_and_frame_are_required():
    with pytest.raises(ValueError, match="needs a caption"):
        LabelledTable(pd.DataFrame({"a": [1]}), "tbl-z", "  ")
    with pytest.raises(ValueError, match="Series with .to_frame"):
        LabelledTable(pd.Series([1]), "tbl-z", "c")


def test_show_table_displays_both_representations(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    assert show_table(pd.DataFrame({"a": [1.5]}), "tbl-a", "caption") is None
    assert isinstance(shown[0], LabelledTable) and ":name: tbl-a" in shown[0]._repr_markdown_()
