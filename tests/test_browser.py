"""The smoke-built book as a reader meets it: every page opened in headless Chromium.

The book of ``conftest.smoke_book`` (chapters executed at profile=smoke, built strictly) is
served on 127.0.0.1 by ``http.server`` and opened page by page in Debian's Chromium, driven
by playwright. Every request that leaves 127.0.0.1 is blocked and counted: the book must
work offline. Checks: no console error and no failed request, every image loads, every
content image has alt text (not a file name) or a caption, every figure of a chapter (images and
the interactive one) has a number and a caption, MathJax typesets every formula,
internal links (and their #anchors) resolve, the search page finds "rollout", the
interactive figure of chapter 02 draws its SVG, answers a click and a hover and keeps a usable
heatmap with no control over another at both widths, and the
labelled tables are where a page can link to them. Every page is also laid out at a
desktop's 1280 px and a phone's 390 px and searched for content that is cut off (see
``CLIP_PROBE``). One full-page screenshot per page and width is saved in
``<book>/_build/browser/`` with ``summary.json`` (counts and seconds).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from explorer_layout import PARTS_PROBE, layout_problems

CHROMIUM = Path(os.environ.get("OLACORE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SKIP_DIRS = {"_static", "_sources", "_downloads", "_images"}
IMAGE_FILE = re.compile(r"\.(png|jpe?g|gif|svg|webp)$", re.IGNORECASE)
LABELLED_TABLES = {"book/generated/03_retrieval.html": ["tbl-retrieval", "tbl-verdicts"],
                   "book/generated/04_proxy.html": ["tbl-proxy", "tbl-proxy-verdicts"],
                   "book/generated/06_syntax.html": ["tbl-syntax-headline"],
                   "book/generated/a4_syntax_extras.html": ["tbl-syntax-pos"],
                   "book/generated/05_controls.html": ["tbl-controls-encoder", "tbl-controls-verdicts"],
                   "book/generated/08_report.html": ["tbl-report-summary", "tbl-report-proxy"],
                   "book/departures.html": ["tbl-departures"]}
INTERACTIVE_PAGE = "book/generated/02_qualitative.html"
EXPLORER_MIN_HEATMAP = {390: 250, 1280: 340}  # px of heatmap the explorer keeps at each page width
WIDTHS = (1280, 390)  # a desktop browser, a phone

pytestmark = pytest.mark.slow

PAGE_PROBE = r"""async () => {
  const imgs = [...document.querySelectorAll('img')];
  imgs.forEach(i => { i.loading = 'eager'; });
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })));
  const math = [...document.querySelectorAll('.math')];
  if (math.length) {
    const start = Date.now();
    while (!(window.MathJax && MathJax.startup && MathJax.startup.promise) && Date.now() - start < 20000)
      await new Promise(r => setTimeout(r, 100));
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  }
  const article = document.querySelector('article') || document.body;
  return {
    title: document.title,
    images: imgs.map(i => ({src: i.getAttribute('src'), width: i.naturalWidth, alt: i.getAttribute('alt') || '',
                            inArticle: article.contains(i),
                            caption: !!(i.closest('figure') && i.closest('figure').querySelector('figcaption')),
                            numbered: !!(i.closest('figure') &&
                                         i.closest('figure').querySelector('figcaption .caption-number'))})),
    plotly: [...document.querySelectorAll('div.plotly-graph-div')].map(d =>
      !!(d.closest('figure') && d.closest('figure').querySelector('figcaption .caption-number'))),
    math: math.length,
    mathTypeset: math.filter(m => m.querySelector('mjx-container')).length,
    mathErrors: document.querySelectorAll('mjx-merror').length,
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    parameterBlocks: [...document.querySelectorAll('.admonition-title')]
      .filter(t => t.textContent.trim() === 'Parameters of this run').length,
    parameterCells: [...document.querySelectorAll('div.cell div.cell_input pre')]
      .filter(p => /^\s*profile\s*=/m.test(p.textContent)).length,
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    // cells tagged hide-input / hide-output: myst-nb folds them into a <details> block
    collapsed: [...document.querySelectorAll('div.cell details.hide')].map(d => ({
      open: d.open, shown: [...d.children].filter(c => c.tagName !== 'SUMMARY').some(c => c.checkVisibility())})),
  };
}"""


# What a reader cannot see. An element that is wider than its box while its box hides the
# overflow (overflow-x hidden or clip) is cut off; one that scrolls inside its box is fine.
# MathJax's copy for screen readers (mjx-assistive-mml) is clipped on purpose, and inline
# elements do not clip. Besides: the page itself must not scroll sideways, code must wrap
# at the column (no code block wider than its box), a table's caption must fit the box the
# table scrolls in (else it scrolls out of view with the table) and, at the desktop width, every display
# equation must fit its column (a reader with overlay scrollbars would not see the rest).
CLIP_PROBE = r"""() => {
  const root = document.querySelector('main') || document.body;
  const describe = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
    (typeof e.className === 'string' && e.className.trim() ? '.' + e.className.trim().split(/\s+/).join('.') : '') +
    ` (${e.scrollWidth} px in ${e.clientWidth} px): ` + JSON.stringify(e.textContent.trim().slice(0, 50));
  const wider = e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 2;
  const clipped = [];
  for (const e of root.querySelectorAll('*')) {
    if (e.closest('mjx-assistive-mml') || !wider(e)) continue;
    const style = getComputedStyle(e);
    const inline = style.display.startsWith('inline') && style.display !== 'inline-block';
    if (!inline && ['hidden', 'clip'].includes(style.overflowX)) clipped.push(describe(e));
  }
  return {
    clipped,
    pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth,
    code: [...root.querySelectorAll('div.highlight pre, div.cell_output pre')].filter(wider).map(describe),
    // a table may scroll, its caption must fit the visible width of the box it scrolls in
    captions: [...root.querySelectorAll('table > caption')].filter(c => {
      let box = c.parentElement;
      while (box && box !== root && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
      return box && box !== root && c.getBoundingClientRect().width > box.clientWidth + 2;
    }).map(c => 'caption wider than its box: ' + JSON.stringify(c.textContent.trim().slice(0, 50))),
    equations: [...root.querySelectorAll('div.math mjx-container')].filter(wider).map(describe),
  };
}"""


class _Handler(SimpleHTTPRequestHandler):
    """Serves the built book and records (path, status) of every request."""

    log = []

    def log_request(self, code="-", size="-"):
        self.log.append((self.path, int(code) if str(code).isdigit() else code))

    def log_message(self, *args):
        pass


class _QuietServer(ThreadingHTTPServer):
    """A reader that navigates away mid-download (a cancelled font) is no server error."""

    def handle_error(self, request, client_address):
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


@pytest.fixture(scope="session")
def served_book(smoke_book):
    assert smoke_book.returncode == 0, "the smoke book did not build:\n" + smoke_book.log
    log = []
    handler = type("Handler", (_Handler,), {"log": log})
    server = _QuietServer(("127.0.0.1", 0), partial(handler, directory=str(smoke_book.html)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", smoke_book.html, log
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: install Debian's package (`apt-get install -y chromium`, as root; "
                    "`make test` tries this) or point OLACORE_CHROMIUM at a Chromium binary", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 900},
        )
        yield context
        context.close()


def _pages(html: Path) -> list[str]:
    return sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html") if not SKIP_DIRS & set(p.relative_to(html).parts))


@pytest.fixture(scope="session")
def visits(served_book, browser):
    """Open every page once; return ``{page: record}`` plus the run's summary."""
    base, html, server_log = served_book
    shots = html.parent / "browser"
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    external = []
    browser.route("**/*", lambda route: route.continue_() if urlsplit(route.request.url).hostname == "127.0.0.1"
                  else (external.append(route.request.url), route.abort())[1])
    start = time.perf_counter()
    records = {}
    for name in _pages(html):
        page = browser.new_page()
        console, failed, bad = [], [], []
        page.on("console", lambda m, c=console: c.append(f"{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e, c=console: c.append(f"page error: {e}"))
        page.on("requestfailed", lambda r, f=failed: f.append(f"{r.url} ({r.failure})"))
        page.on("response", lambda r, b=bad: b.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.goto(base + name, wait_until="load")
        if 'http-equiv="refresh"' in (html / name).read_text().lower():  # index.html: a redirect page
            page.wait_for_url(lambda url: url != base + name, timeout=10000)
            page.wait_for_load_state("load")
        record = page.evaluate(PAGE_PROBE)
        record["layout"] = {}
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(300)  # the theme and MathJax re-lay out the page
            record["layout"][width] = page.evaluate(CLIP_PROBE)
            page.screenshot(path=str(shots / (name.replace("/", "__").removesuffix(".html") + f"-{width}.png")),
                            full_page=True)
        record.update(console=console, failed=failed, bad=bad)
        records[name] = record
        page.close()
    summary = {"pages": len(records), "images": sum(len(r["images"]) for r in records.values()),
               "formulas": sum(r["math"] for r in records.values()),
               "console_errors": sum(len(r["console"]) for r in records.values()),
               "external_requests": len(external), "seconds": round(time.perf_counter() - start, 1),
               "screenshots": str(shots)}
    (shots / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"\nbrowser check: {summary}")
    return {"base": base, "records": records, "external": external, "server_log": server_log, "summary": summary}


def test_every_page_opens_without_console_errors_or_failed_requests(visits):
    assert visits["records"], "no page found in the built book"
    problems = {name: r["console"] + r["failed"] + r["bad"] for name, r in visits["records"].items()
                if r["console"] or r["failed"] or r["bad"]}
    assert not problems, json.dumps(problems, indent=1)


@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_is_cut_off(visits, width):
    """At both widths: no clipped element, no sideways page scroll, code wrapped; at 1280 px every equation fits."""
    problems = {}
    for name, record in visits["records"].items():
        layout = record["layout"][width]
        found = ([f"clipped: {e}" for e in layout["clipped"]] + [f"code wider than its box: {e}" for e in layout["code"]]
                 + layout["captions"])
        if layout["pageWidth"] > layout["viewport"] + 1:
            found.append(f"the page scrolls sideways: {layout['pageWidth']} px in a {layout['viewport']} px window")
        if width >= 1000:
            found += [f"equation wider than the column: {e}" for e in layout["equations"]]
        if found:
            problems[name] = found
    assert not problems, f"cut off at {width} px:\n" + json.dumps(problems, indent=1)


def test_the_book_loads_nothing_from_outside(visits):
    assert not visits["external"], f"requests that left 127.0.0.1: {sorted(set(visits['external']))}"


def test_every_image_loads(visits):
    broken = {name: [i["src"] for i in r["images"] if i["width"] == 0] for name, r in visits["records"].items()}
    broken = {name: srcs for name, srcs in broken.items() if srcs}
    assert visits["summary"]["images"] > 0
    assert not broken, f"images that did not load: {broken}"


def test_every_figure_has_alt_text_or_a_caption(visits):
    missing = {}
    for name, record in visits["records"].items():
        for image in record["images"]:
            alt = image["alt"].strip()
            if image["inArticle"] and not image["caption"] and (not alt or IMAGE_FILE.search(alt)):
                missing.setdefault(name, []).append(image["src"])
    assert not missing, f"images with neither alt text nor caption: {missing}"


def test_every_chapter_figure_is_numbered_and_captioned(visits):
    """Every image and interactive figure of a chapter sits in a figure with a number ("Fig. 3") and a caption."""
    unnumbered = {}
    for name, record in visits["records"].items():
        if not name.startswith("book/generated/"):
            continue
        found = [i["src"] for i in record["images"] if i["inArticle"] and not i["numbered"]]
        found += ["an interactive figure" for numbered in record["plotly"] if not numbered]
        if found:
            unnumbered[name] = found
    assert not unnumbered, f"figures without a number and caption: {unnumbered}"


def test_math_is_typeset_by_mathjax(visits):
    with_math = {name: r for name, r in visits["records"].items() if r["math"]}
    assert with_math, "no page with mathematics found (the derivation chapter has formulas)"
    untypeset = {name: f"{r['mathTypeset']} of {r['math']} typeset, {r['mathErrors']} errors"
                 for name, r in with_math.items() if r["mathTypeset"] != r["math"] or r["mathErrors"]}
    assert not untypeset, untypeset


def test_internal_links_and_anchors_resolve(visits, served_book):
    base, html, server_log = served_book
    records, broken = visits["records"], []
    targets = {}
    for name, record in records.items():
        for link in record["links"]:
            if link.startswith(base):
                path, _, fragment = link[len(base):].partition("#")
                targets.setdefault(unquote(path.split("?")[0]) or "index.html", set()).add((name, fragment))
    import urllib.request

    for path, sources in sorted(targets.items()):
        try:
            with urllib.request.urlopen(urljoin(base, path)) as response:
                status = response.status
        except Exception as error:  # HTTPError carries the status
            status = getattr(error, "code", str(error))
        if status != 200:
            broken.append(f"{path} ({status}) linked from {sorted({s for s, _ in sources})}")
            continue
        page = path if path.endswith(".html") else path.rstrip("/") + "/index.html"
        if page in records:
            ids = set(records[page]["ids"])
            broken += [f"{path}#{fragment} (no such anchor) linked from {source}"
                       for source, fragment in sources if fragment and unquote(fragment) not in ids]
    assert len(targets) > len(records), "too few internal links found to believe the check"
    assert not broken, "\n".join(broken)
    assert not [entry for entry in server_log if entry[1] == 404], [e for e in server_log if e[1] == 404]


def test_search_finds_rollout(served_book, browser):
    base, _, _ = served_book
    page = browser.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(base + "search.html?q=rollout", wait_until="load")
    page.wait_for_selector("#search-results ul.search li", timeout=30000)
    hits = page.locator("#search-results ul.search li a").all_inner_texts()
    page.close()
    assert not errors, errors
    assert any("OLA" in hit or "rollout" in hit.lower() for hit in hits), hits


def test_interactive_figure_draws_and_answers(served_book, browser):
    base, html, _ = served_book
    page = browser.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(base + INTERACTIVE_PAGE, wait_until="load")
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=20000)
    graph = page.locator(".plotly-graph-div").first
    state = "el => ({traces: el.data.length, visible: el.data.map(t => t.visible), z: el.data[0].z.flat().reduce((a, b) => a + b, 0)})"
    before = graph.evaluate(state)
    assert before["traces"] >= 2 and before["visible"].count(True) == 1, before
    assert page.locator(".plotly-graph-div .heatmaplayer image, .plotly-graph-div .hm image").count() >= 1
    buttons = page.locator(".plotly-graph-div .updatemenu-button")
    buttons.filter(has_text="order 2").first.click()
    page.wait_for_timeout(300)
    after = graph.evaluate(state)
    assert after["z"] != before["z"], "the order buttons did not change the map"
    page.locator(".plotly-graph-div .updatemenu-header").first.click()
    page.wait_for_timeout(200)
    models = page.locator(".plotly-graph-div .updatemenu-dropdown-button")
    assert models.count() == before["traces"]
    models.nth(1).click()
    page.wait_for_timeout(300)
    assert graph.evaluate(state)["visible"].index(True) == 1, "the model menu did not switch the model"
    box = page.locator(".plotly-graph-div .nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.6)
    page.wait_for_selector(".plotly-graph-div .hoverlayer .hovertext", timeout=5000)
    hover = page.locator(".plotly-graph-div .hoverlayer .hovertext").first.text_content()
    page.mouse.move(0, 0)
    layouts = {}
    for width, min_heatmap_px in EXPLORER_MIN_HEATMAP.items():  # plotly's responsive config redraws at the width
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(1500)
        layouts[width] = layout_problems(graph.evaluate(PARTS_PROBE), min_heatmap_px)
    page.close()
    assert "query" in hover and "key" in hover and "weight" in hover, hover
    assert not errors, errors
    assert not any(layouts.values()), f"the explorer's layout: {layouts}"


def test_interactive_figure_is_small_and_plotly_js_is_served_once(served_book):
    _, html, _ = served_book
    page = (html / INTERACTIVE_PAGE).read_text()
    scripts = re.findall(r"<script>\s*window\.PLOTLYENV.*?</script>", page, flags=re.S)
    assert len(scripts) == 1
    assert len(scripts[0].encode()) < 2_000_000, f"the figure adds {len(scripts[0].encode())} bytes"
    assert page.count("plotly.min.js") == 1 and (html / "_static" / "plotly.min.js").exists()
    others = [p for p in html.rglob("*.html") if p.name != Path(INTERACTIVE_PAGE).name and "plotly.min.js" in p.read_text()]
    assert not others, f"pages loading plotly.js without a figure: {others}"


def test_hidden_cells_are_collapsed_until_clicked(visits, served_book, browser):
    """Bookkeeping cells (tagged hide-input / hide-output) open folded; a click unfolds one."""
    blocks = {name: r["collapsed"] for name, r in visits["records"].items() if r["collapsed"]}
    assert blocks, "no collapsed cell on any page: the chapters tag their bookkeeping cells hide-input / hide-output"
    unfolded = {name: [b for b in found if b["open"] or b["shown"]] for name, found in blocks.items()}
    assert not any(unfolded.values()), f"collapsed cells shown when the page opens: {unfolded}"
    base, _, _ = served_book
    page = browser.new_page()
    page.goto(base + sorted(blocks)[0], wait_until="load")
    block = page.locator("div.cell details.hide").first
    block.locator("summary").click()
    page.wait_for_timeout(200)
    opened = block.evaluate("d => d.open && [...d.children].some(c => c.tagName !== 'SUMMARY' && c.checkVisibility())")
    page.close()
    assert opened, "a click on a collapsed cell did not show it"


def test_labelled_tables_are_linkable(visits):
    for name, labels in LABELLED_TABLES.items():
        ids = set(visits["records"][name]["ids"])
        missing = [label for label in labels if label not in ids]
        assert not missing, f"{name} lacks table anchors {missing}"


def test_chapters_offer_their_notebook_and_source_for_download(visits):
    for name, record in visits["records"].items():
        if name.startswith("book/generated/"):
            stem = Path(name).stem
            downloads = [link for link in record["links"] if "/_downloads/" in link]
            assert any(link.endswith(f"{stem}.ipynb") for link in downloads), (name, downloads)
            assert any(link.endswith(f"{stem}.py") for link in downloads), (name, downloads)


def test_chapters_show_their_parameters_once(visits):
    for name, record in visits["records"].items():
        if name.startswith("book/generated/"):
            assert (record["parameterBlocks"], record["parameterCells"]) == (1, 0), (name, record["parameterBlocks"],
                                                                                 record["parameterCells"])
