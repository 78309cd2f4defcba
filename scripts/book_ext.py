"""Sphinx extension for the book (``_config.yml``: ``sphinx.local_extensions``): alt text and plotly.js.

- **Alt text.** A notebook output image gets, as its ``alt`` text, the description that the
  runner's kernel set-up (``scripts/kernel_setup.py``) left in the same output's ``text/plain``
  ("Figure: ..."), matched to the image by the SHA-256 of its bytes (myst-nb names output
  images by that hash), also for a figure glued by ``myst_nb.glue`` and pasted by
  ``{glue:figure}`` (a numbered, captioned figure). An alt text set in the cell's metadata wins.
- **Each script once.** Inline scripts added by extensions (sphinx-thebe's ``const
  THEBE_JS_URL = ...``, togglebutton's selector) reach every page twice with Sphinx 7.4, once
  with file name ``None`` and once with ``""`` (a JavaScript error on every page: the
  constant is declared twice); identical scripts are dropped from a page's list.
- **The book's styles.** Every ``.css`` file of ``book/_static/`` (``olacore.css``: nothing
  cut off at a desktop's or a phone's width) is served from ``_static`` and linked from every
  page. The folder sits inside ``book/`` so that a copy of the book sources (the tests' smoke
  book) carries it.
- **plotly.js, offline.** Pages whose body draws a plotly figure (``Plotly.newPlot``) load
  ``_static/plotly.min.js``, copied from the installed ``plotly`` package; other pages do
  not. Interactive figures are written without an embedded copy of the library (see
  ``notebooks/chapter_code/explorer.py``), so the library is served once, from the book itself.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

from docutils import nodes

DESCRIPTION_PREFIX = "Figure: "
#: ``myst_nb.glue(..., display=False)`` stores a figure's outputs under this prefix
#: (``olacore.plots.show_figure``: a numbered figure pasted by ``{glue:figure}``).
GLUE_PREFIX = "application/papermill.record/"
BOOK_STATIC = Path("book") / "_static"
IMAGE_TYPES = ("image/png", "image/jpeg")


def image_descriptions(notebook_path: Path) -> dict[str, str]:
    """``{sha256 of image bytes: description}`` for the output images of an executed notebook."""
    try:
        notebook = json.loads(Path(notebook_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found = {}
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            data = {key.removeprefix(GLUE_PREFIX): value for key, value in output.get("data", {}).items()}
            text = data.get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            if not text.startswith(DESCRIPTION_PREFIX):
                continue
            for mime in IMAGE_TYPES:
                if mime in data:
                    payload = data[mime]
                    payload = "".join(payload) if isinstance(payload, list) else payload
                    found[hashlib.sha256(base64.b64decode(payload)).hexdigest()] = text.strip()
    return found


def add_alt_text(app, doctree) -> None:
    """``doctree-read``: give the output images of a notebook page their figure description."""
    source = Path(app.env.doc2path(app.env.docname))
    if source.suffix != ".ipynb":
        return
    described = image_descriptions(source)
    if not described:
        return
    for image in doctree.findall(nodes.image):
        stem = Path(image.get("uri", "")).stem
        if stem in described and not image.get("alt"):
            image["alt"] = described[stem]


def drop_duplicate_scripts(app, pagename, templatename, context, doctree) -> None:
    """``html-page-context``: keep the first of identical script entries (same file, same attributes)."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        # an inline script is registered once with filename None and once with "": the same script
        key = (getattr(script, "filename", str(script)) or "", repr(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique  # the builder restores its own list after the page


def plotly_source() -> Path:
    """The minified plotly.js shipped inside the installed ``plotly`` package."""
    import importlib.util

    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the plotly package is not installed: pip install plotly")
    return Path(list(spec.submodule_search_locations)[0]) / "package_data" / "plotly.min.js"


def add_plotly_js(app, pagename, templatename, context, doctree) -> None:
    """``html-page-context``: load plotly.js on pages that draw a plotly figure (and only there)."""
    if "Plotly.newPlot" in context.get("body", ""):
        app.add_js_file("plotly.min.js")


def copy_plotly_js(app, exception) -> None:
    """``build-finished``: copy plotly.min.js into ``_static`` (a no-op when already identical)."""
    if exception is None and app.builder.format == "html":
        from sphinx.util.fileutil import copy_asset_file

        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        copy_asset_file(str(plotly_source()), str(static / "plotly.min.js"))


def add_book_static(app) -> None:
    """``builder-inited``: serve ``book/_static/`` from ``_static`` and link each of its stylesheets from every page."""
    static = Path(app.srcdir) / BOOK_STATIC
    if not static.is_dir():
        return
    if str(static) not in app.config.html_static_path:
        app.config.html_static_path.append(str(static))
    for css in sorted(static.glob("*.css")):
        app.add_css_file(css.name)


def setup(app):
    app.connect("builder-inited", add_book_static)
    app.connect("doctree-read", add_alt_text)
    app.connect("html-page-context", add_plotly_js)
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    app.connect("build-finished", copy_plotly_js)
    # A new version of this file or of a stylesheet in book/_static/ invalidates Sphinx's saved
    # environment: every page is rebuilt and links the new stylesheet (Sphinx copies static
    # files only when it writes pages, so a changed stylesheet alone would not reach the book).
    digest = hashlib.sha256(Path(__file__).read_bytes())
    for css in sorted((Path(__file__).resolve().parent.parent / BOOK_STATIC).glob("*.css")):
        digest.update(css.read_bytes())
    env_version = int(digest.hexdigest()[:8], 16)
    return {"version": "1", "env_version": env_version, "parallel_read_safe": True, "parallel_write_safe": True}
