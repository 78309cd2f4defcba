"""chapter_code.explorer.order_explorer (chapter 02): one heatmap, a model menu, order buttons, hover text."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from chapter_code.explorer import InteractiveFigure, order_explorer


def _maps(sizes=None, orders=("order 1", "order 2", "rollout")):
    rng = np.random.default_rng(0)
    sizes = sizes or {"smollm2-135m": 4, "gemma-3-270m": 4}
    maps = {m: {o: rng.dirichlet(np.ones(t), size=t) for o in orders} for m, t in sizes.items()}
    labels = {m: [f"w{i}" for i in range(t)] for m, t in sizes.items()}
    return maps, labels


def test_one_trace_per_model_first_visible_with_query_key_hover():
    maps, labels = _maps()
    maps["gemma-3-270m"]["order 1"] = torch.as_tensor(maps["gemma-3-270m"]["order 1"])  # tensors work too
    figure = order_explorer(maps, labels, title="t", unit="word").figure
    assert [t.name for t in figure.data] == ["smollm2-135m", "gemma-3-270m"]
    assert [t.visible for t in figure.data] == [True, False]
    trace = figure.data[0]
    assert np.allclose(np.array(trace.z), maps["smollm2-135m"]["order 1"], atol=1e-4)
    assert tuple(trace.customdata[2][1]) == ("w2", "w1")  # row = query, column = key
    assert "query word" in trace.hovertemplate and "key word" in trace.hovertemplate and "weight" in trace.hovertemplate
    assert trace.zmax == pytest.approx(np.quantile(maps["smollm2-135m"]["order 1"], 0.99), rel=1e-3)


def test_menu_picks_the_model_and_buttons_restyle_every_model_to_the_order():
    maps, labels = _maps(sizes={"a": 3, "b": 5})
    labels["b"] = ["x", "y", "z", "u", "v"]
    figure = order_explorer(maps, labels, unit="token").figure
    model_menu, order_buttons = figure.layout.updatemenus
    assert [b.label for b in model_menu.buttons] == ["a", "b"]
    assert model_menu.buttons[1].args[0] == {"visible": [False, True]}
    assert model_menu.buttons[1].args[1]["xaxis.ticktext"] == ["x", "y", "z", "u", "v"]
    assert [b.label for b in order_buttons.buttons] == ["order 1", "order 2", "rollout"]
    restyle = order_buttons.buttons[2].args[0]
    assert len(restyle["z"]) == 2 and np.allclose(restyle["z"][1], maps["b"]["rollout"], atol=1e-4)
    assert len(restyle["zmax"]) == 2


def test_mime_bundle_draws_with_the_page_plotly_and_stays_small():
    maps, labels = _maps(sizes={m: 12 for m in ["a", "b", "c", "d", "e"]}, orders=("order 1", "order 2", "order 3", "rollout"))
    interactive = order_explorer(maps, labels, title="five models")
    bundle = interactive._repr_mimebundle_()
    assert set(bundle) == {"application/vnd.plotly.v1+json", "text/html", "text/plain"}
    assert "Plotly.newPlot" in bundle["text/html"] and "plotly.js v" not in bundle["text/html"]
    assert len(bundle["text/html"]) < 200_000
    json.dumps(bundle["application/vnd.plotly.v1+json"])
    assert bundle["text/plain"].startswith("Interactive heatmap (five models): 5 models")
    assert interactive.to_html() == interactive.to_html()  # stable div id: same maps, same page
    assert isinstance(interactive, InteractiveFigure)


@pytest.mark.parametrize("change, message", [
    (lambda m, l: m.clear(), "at least one"),
    (lambda m, l: m["gemma-3-270m"].pop("rollout"), "every model needs the orders"),
    (lambda m, l: m["smollm2-135m"].update({"order 1": np.ones((4, 3))}), "must be square"),
    (lambda m, l: m["smollm2-135m"].update({"order 1": np.full((4, 4), np.nan)}), "NaN"),
    (lambda m, l: l.update({"gemma-3-270m": ["a"]}), "need 4 labels"),
    (lambda m, l: l.pop("gemma-3-270m"), "no word labels"),
])
def test_bad_input_is_named(change, message):
    maps, labels = _maps()
    change(maps, labels)
    with pytest.raises(ValueError, match=message):
        order_explorer(maps, labels)


@pytest.mark.slow
def test_labels_and_title_show_as_typed_in_a_browser():
    """Plotly reads ``<b>``, ``<br>`` and ``&amp;`` as markup: user words must reach the page's
    tick labels, title and hover text as typed (drawn by plotly.js in headless Chromium)."""
    import os
    from pathlib import Path

    import plotly

    chromium = Path(os.environ.get("OLACORE_CHROMIUM", "/usr/bin/chromium"))
    if not chromium.exists():
        pytest.fail(f"no Chromium at {chromium}: install Debian's package or set OLACORE_CHROMIUM")
    from playwright.sync_api import sync_playwright

    words = ["It", "costs", "$5", "<b>bold</b>", "a&amp;b", "x<br>y"]
    title = "It costs $5 & <i>more</i> tomorrow."
    rng = np.random.default_rng(0)
    figure = order_explorer({"m<1>": {"order 1": rng.dirichlet(np.ones(6), size=6)}}, {"m<1>": words}, title=title)
    script = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()

    def read_page():  # the sync API refuses a thread with a running asyncio loop (one an earlier test left)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(chromium), headless=True, args=["--no-sandbox"])
            try:
                page = browser.new_page()
                page.set_content(f"<html><head><script>{script}</script></head><body>{figure.to_html()}</body></html>")
                page.wait_for_selector(".xtick")
                assert page.eval_on_selector_all(".xtick text", "es => es.map(e => e.textContent)") == words
                assert page.eval_on_selector(".gtitle", "e => e.textContent") == title
                box = page.locator(".nsewdrag").first.bounding_box()  # hover query 2 ($5), key 3 (<b>bold</b>)
                page.mouse.move(box["x"] + box["width"] * 3.5 / 6, box["y"] + box["height"] * 2.5 / 6)
                page.wait_for_selector(".hovertext")
                hover = page.eval_on_selector(".hovertext", "e => e.textContent")
            finally:
                browser.close()
        return hover

    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        hover = pool.submit(read_page).result()
    assert "$5" in hover and "<b>bold</b>" in hover and "m<1>" in hover


@pytest.mark.slow
@pytest.mark.parametrize("column_px, min_heatmap_px", [(358, 250), (700, 340)])  # a phone's column (390 px), a desktop's
def test_the_explorer_fits_a_phone_and_a_desktop_column(column_px, min_heatmap_px):
    """Five models, four orders and a sentence of 13 words, drawn by plotly.js in a column as wide as
    the book's on a phone and on a desktop: the heatmap keeps a usable size and no title, control,
    colour bar or label is drawn over another or past the figure's edge."""
    import concurrent.futures
    import os
    from pathlib import Path

    import plotly
    from explorer_layout import PARTS_PROBE, layout_problems

    chromium = Path(os.environ.get("OLACORE_CHROMIUM", "/usr/bin/chromium"))
    if not chromium.exists():
        pytest.fail(f"no Chromium at {chromium}: install Debian's package or set OLACORE_CHROMIUM")
    from playwright.sync_api import sync_playwright

    words = ["The", "committee", "approved", "the", "new", "budget", "after", "a", "long", "debate", "about", "schools", "."]
    models = ["smollm2-135m", "gemma-3-270m", "qwen2.5-0.5b", "minilm-l6", "mpnet-base"]
    maps, _ = _maps(sizes={m: len(words) for m in models}, orders=("order 1", "order 2", "order 3", "rollout"))
    figure = order_explorer(maps, {m: words for m in models},
                            title="\u201cThe committee approved the new budget after a long debate about schools.\u201d")
    library = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"

    def read_page(folder):
        page_file = Path(folder) / "explorer.html"
        page_file.write_text(f"<html><head><script src='{library.as_uri()}'></script></head><body style='margin:0'>"
                             f"<div style='width:{column_px}px'>{figure.to_html()}</div></body></html>")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(chromium), headless=True, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": column_px + 32, "height": 900})
                page.set_default_timeout(120_000)
                page.goto(page_file.as_uri())
                page.wait_for_selector(".plotly-graph-div .xtick")
                return page.locator(".plotly-graph-div").first.evaluate(PARTS_PROBE)
            finally:
                browser.close()

    import tempfile

    with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(1) as pool:
        found = pool.submit(read_page, folder).result()
    problems = layout_problems(found, min_heatmap_px)
    assert not problems, problems
