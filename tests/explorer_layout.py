"""The parts of a drawn ``order_explorer`` figure and what is wrong with their layout.

Shared by ``test_explorer.py`` (the figure alone, in a column of a phone's and a desktop's
width) and ``test_browser.py`` (the figure in the built book at 390 and 1280 px).
"""

from __future__ import annotations

#: Playwright ``evaluate`` on a ``.plotly-graph-div``: the page boxes (left, top, right, bottom,
#: in CSS px) of the figure, the heatmap's plot area, the title, every visible control (the
#: model menu's header and the order buttons), the colour bar and the tick labels of each axis.
PARTS_PROBE = r"""el => {
  const box = r => ({left: r.left, top: r.top, right: r.right, bottom: r.bottom});
  const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const union = es => {
    const rs = es.filter(shown).map(e => e.getBoundingClientRect());
    if (!rs.length) return null;
    return {left: Math.min(...rs.map(r => r.left)), top: Math.min(...rs.map(r => r.top)),
            right: Math.max(...rs.map(r => r.right)), bottom: Math.max(...rs.map(r => r.bottom))};
  };
  const parts = {};
  const title = el.querySelector('.gtitle');
  if (title && shown(title)) parts['title'] = box(title.getBoundingClientRect());
  [...el.querySelectorAll('.updatemenu-header, .updatemenu-button')].filter(shown).forEach((e, i) => {
    const label = e.textContent.trim() || String(i);
    parts['control ' + label] = box(e.getBoundingClientRect());
  });
  const colorbar = union([...el.querySelectorAll('.colorbar')]);
  if (colorbar) parts['colour bar'] = colorbar;
  const xlabels = union([...el.querySelectorAll('.xtick text')]);
  if (xlabels) parts['x tick labels'] = xlabels;
  const ylabels = union([...el.querySelectorAll('.ytick text')]);
  if (ylabels) parts['y tick labels'] = ylabels;
  return {figure: box(el.getBoundingClientRect()), heatmap: box(el.querySelector('.nsewdrag').getBoundingClientRect()),
          parts};
}"""


def _overlap(a: dict, b: dict, tolerance: float = 1.0) -> bool:
    return (min(a["right"], b["right"]) - max(a["left"], b["left"]) > tolerance
            and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > tolerance)


def layout_problems(found: dict, min_heatmap_px: float) -> list[str]:
    """What a reader cannot use in a probed explorer (``PARTS_PROBE``'s result): a heatmap
    narrower than ``min_heatmap_px``, two parts drawn over each other (the heatmap counts as a
    part), or a part that reaches past the figure's left or right edge. Empty when all is well."""
    figure, heatmap, parts = found["figure"], found["heatmap"], dict(found["parts"])
    problems = []
    width = heatmap["right"] - heatmap["left"]
    if width < min_heatmap_px:
        problems.append(f"heatmap {width:.0f} px wide in a {figure['right'] - figure['left']:.0f} px figure "
                        f"(needs {min_heatmap_px:.0f})")
    if not any(name.startswith("control ") for name in parts):
        problems.append("no control drawn (model menu, order buttons)")
    everything = {"heatmap": heatmap, **parts}
    names = list(everything)
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            if {first, second} & {"x tick labels", "y tick labels"} and "heatmap" in (first, second):
                continue  # tick labels sit on the plot area's edge by design
            if _overlap(everything[first], everything[second]):
                problems.append(f"{first} overlaps {second}")
    for name, part in everything.items():
        if part["left"] < figure["left"] - 1 or part["right"] > figure["right"] + 1:
            problems.append(f"{name} reaches past the figure's edge ({part['left']:.0f}..{part['right']:.0f} px in "
                            f"{figure['left']:.0f}..{figure['right']:.0f} px)")
    return problems
