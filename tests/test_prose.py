"""The chapters' prose follows the book's conventions: numbers a run computes are glued, never typed; imports stay
out of sight; every main chapter says what the reader will learn, ends with a written summary and links the
departures from the paper."""

import ast
import re
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SOURCES = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")) + sorted(NOTEBOOKS.glob("a[0-9]_*.py"))
MAIN = [p for p in SOURCES if p.name[0].isdigit()]

#: Typed percentages that are not results of a run (a constant of the method, a published number quoted as
#: such), as ``(notebook file name, the matched text)``. Keep it small: a number a run computes is glued.
ALLOWED_PERCENTAGES: set[tuple[str, str]] = set()

#: A number followed by a percent sign or the word "percent" ("12 %", "12.5%", "3 percent").
PERCENTAGE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s*(?:%|percent\b)", re.IGNORECASE)
FENCE = re.compile(r"^(`{3,}|~{3,})(?!\{)[^\n]*\n.*?^\1\s*$", re.MULTILINE | re.DOTALL)  # fenced code, not directives
INLINE_CODE = re.compile(r"`[^`\n]*`")
OPTION = re.compile(r"^\s*:[\w-]+:.*$", re.MULTILINE)  # a directive's options (":width: 80%")
HIDDEN = {"remove-input", "remove-cell", "hide-input"}
MAX_IMPORT_LINES = 10


def cells(path: Path, kind: str):
    return [cell for cell in jupytext.read(path).cells if cell.cell_type == kind]


def prose(cell) -> str:
    """A markdown cell's text without code (fenced blocks, inline spans) and directive options."""
    return OPTION.sub("", INLINE_CODE.sub("", FENCE.sub("", cell.source)))


def typed_percentages(path: Path) -> list[str]:
    found = [m.group(0) for cell in cells(path, "markdown") for m in PERCENTAGE.finditer(prose(cell))]
    return [text for text in found if (path.name, text) not in ALLOWED_PERCENTAGES]


def import_lines(source: str) -> int:
    """Lines spanned by the import statements of a code cell (IPython magics dropped before parsing)."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return 0
    return sum(node.end_lineno - node.lineno + 1 for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


def test_the_checks_catch_what_they_should():
    """The patterns, on made-up prose: a typed percentage is found, glued or quoted code is not."""
    sample = jupytext.reads("# %% [markdown]\n# Hits@1 was 56.7 % and 12% of 3 percent; {glue:text}`x:.1f` %, "
                            "`f\"{v} %\"`, $100/n$ %.\n#\n# ```{figure} a.png\n# :width: 80%\n# ```\n#\n"
                            "# ```python\n# print(f'{v:.1f} %')  # 5 %\n# ```\n", fmt="py:percent")
    found = [m.group(0) for m in PERCENTAGE.finditer(prose(sample.cells[0]))]
    assert found == ["56.7 %", "12%", "3 percent"]
    assert import_lines("import a\nfrom b import (\n    c,\n    d,\n)\nx = 1\n") == 5


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_no_typed_percentage_in_prose(path):
    """A percentage in a markdown cell is glued from the run ({glue:text}), never typed."""
    assert not typed_percentages(path), f"{path.name}: typed percentages in prose (glue them): {typed_percentages(path)}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_no_long_visible_import_block(path):
    """A visible code cell holds at most MAX_IMPORT_LINES lines of imports; longer blocks are hidden (remove-input)."""
    long = [import_lines(cell.source) for cell in cells(path, "code")
            if not HIDDEN & set(cell.metadata.get("tags", [])) and import_lines(cell.source) > MAX_IMPORT_LINES]
    assert not long, f"{path.name}: visible code cells with {long} import lines (hide them: tag remove-input)"


@pytest.mark.parametrize("path", MAIN, ids=lambda p: p.stem)
def test_a_main_chapter_has_goals_a_summary_and_the_departures(path):
    text = "\n".join(cell.source for cell in cells(path, "markdown"))
    assert re.search(r"^(:::|```)\{admonition\} What you will learn\s*$", text, re.MULTILINE), \
        f"{path.name}: no 'What you will learn' admonition"
    assert re.search(r"^#{1,6} Summary\s*$", text, re.MULTILINE), f"{path.name}: no 'Summary' heading"
    assert "{ref}`departures`" in text, f"{path.name}: no link to the departures ({{ref}}`departures`)"
