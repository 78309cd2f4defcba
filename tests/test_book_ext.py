"""The book's Sphinx extension and kernel set-up: figure descriptions become alt text, scripts appear once."""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from conftest import ROOT  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import book_ext  # noqa: E402


def test_image_descriptions_are_keyed_by_the_image_hash(tmp_path):
    png = b"\x89PNG fake bytes"
    notebook = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "display_data", "data": {"image/png": base64.b64encode(png).decode(),
                                                  "text/plain": ["Figure: Two panels. ", "Panels: a; b."]}},
        {"output_type": "display_data", "data": {"image/png": base64.b64encode(b"other").decode(),
                                                  "text/plain": "<Figure size 640x480 with 1 Axes>"}},
    ]}]}
    path = tmp_path / "chapter.ipynb"
    path.write_text(json.dumps(notebook))
    assert book_ext.image_descriptions(path) == {hashlib.sha256(png).hexdigest(): "Figure: Two panels. Panels: a; b."}
    assert book_ext.image_descriptions(tmp_path / "missing.ipynb") == {}


def test_a_glued_figure_keeps_its_description(tmp_path):
    """A figure glued by myst_nb.glue (display=False: its outputs under the glue prefix) and pasted
    by {glue:figure} is written by its bytes' hash like any output image: its description is found."""
    png = b"\x89PNG glued bytes"
    prefix = book_ext.GLUE_PREFIX
    notebook = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "display_data", "metadata": {"scrapbook": {"name": "fig-x", "mime_prefix": prefix}},
         "data": {prefix + "image/png": base64.b64encode(png).decode(), prefix + "text/plain": "Figure: Glued."}},
    ]}]}
    path = tmp_path / "chapter.ipynb"
    path.write_text(json.dumps(notebook))
    assert book_ext.image_descriptions(path) == {hashlib.sha256(png).hexdigest(): "Figure: Glued."}


def test_duplicate_inline_scripts_are_dropped():
    def script(filename, **attributes):
        return SimpleNamespace(filename=filename, attributes=attributes)

    scripts = [script("_static/a.js"), script(None, body="const X = 1"), script("", body="const X = 1"),
               script("", body="const Y = 2"), script("_static/a.js", defer="defer")]
    context = {"script_files": scripts}
    book_ext.drop_duplicate_scripts(None, "page", "page.html", context, None)
    assert [(s.filename, s.attributes) for s in context["script_files"]] == [
        ("_static/a.js", {}), (None, {"body": "const X = 1"}), ("", {"body": "const Y = 2"}),
        ("_static/a.js", {"defer": "defer"})]


def test_plotly_js_is_found_in_the_installed_package():
    assert book_ext.plotly_source().name == "plotly.min.js" and book_ext.plotly_source().stat().st_size > 1_000_000


def test_kernel_setup_describes_figures_from_their_titles_and_labels():
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    exec((ROOT / "scripts" / "kernel_setup.py").read_text(), {"get_ipython": lambda: shell})
    plain = shell.display_formatter.formatters["text/plain"]
    figure, axes = plt.subplots(1, 2)
    figure.suptitle("Hits@1 by order")
    axes[0].set_title("causal")
    axes[1].set_title("encoder")
    axes[1].set_xlabel("target")
    axes[1].set_ylabel("source")
    assert plain(figure) == "Figure: Hits@1 by order. Panels: causal; encoder. Axes: target against source."
    bare = plt.figure()
    bare.add_subplot()
    assert plain(bare) == "Figure: 1 panel without titles."
    plt.close("all")


def test_book_styles_are_served_and_linked(tmp_path):
    static = tmp_path / "book" / "_static"
    static.mkdir(parents=True)
    (static / "olacore.css").write_text("pre { white-space: pre-wrap; }")
    (static / "notes.txt").write_text("not a stylesheet")
    linked = []
    app = SimpleNamespace(srcdir=str(tmp_path), config=SimpleNamespace(html_static_path=[]), add_css_file=linked.append)
    book_ext.add_book_static(app)
    assert app.config.html_static_path == [str(static)] and linked == ["olacore.css"]
    empty = SimpleNamespace(srcdir=str(tmp_path / "none"), config=SimpleNamespace(html_static_path=[]),
                            add_css_file=linked.append)
    book_ext.add_book_static(empty)
    assert empty.config.html_static_path == []
