"""The page "How claims are judged" (book/claims.md) states the rules' constants as numbers: they must be the
modules', and the rate rule it describes must be the one :func:`olacore.report.verdict` applies."""

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

from olacore import report as verdicts
from olacore.toa.train import paired_bootstrap_se

from chapter_code import report as report_page

PAGE = Path(__file__).resolve().parent.parent / "book" / "claims.md"


def constants() -> dict[str, float]:
    """The page's constants table: first column (backticks stripped) -> value."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("(claims-constants)=", 1)[1].split("\n(", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return {name.strip().strip("`"): float(value) for name, value in rows[1:]}


def test_the_page_gives_the_modules_constants():
    table = constants()
    for name in ("MARGIN", "GOAL", "STRONG_NOISE", "LEARNED_TOL"):
        assert table[name] == getattr(verdicts, name), name
    assert table["TOLERANCE"] == report_page.TOLERANCE
    assert table["bootstrap draws"] == inspect.signature(paired_bootstrap_se).parameters["draws"].default


def test_the_rate_rule_in_words_is_the_modules():
    """The rule rebuilt from the page's three numbers gives the module's verdict on a grid of rates and chances."""
    table = constants()
    floor, strong, weak = table["rate floor"], table["rate multiple"], table["weak multiple"]
    for chance in (0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5):
        bar = max(floor, strong * chance)
        for observed in np.linspace(0, 1, 401):
            expected = (verdicts.HOLDS if observed >= bar else
                        verdicts.WEAK if observed >= min(weak * chance, bar) else verdicts.FAILS)
            assert verdicts.verdict(observed, chance) == expected, (observed, chance)


@pytest.mark.parametrize("label", ["claims", "claims-protocols", "claims-verdicts", "claims-constants", "claims-rate",
                                   "claims-margin", "claims-controls", "claims-learned", "claims-transfer", "claims-se",
                                   "claims-reproduction"])
def test_the_rules_have_labels_chapters_can_link(label):
    assert re.search(rf"^\({re.escape(label)}\)=\n#", PAGE.read_text(encoding="utf-8"), re.MULTILINE)
