"""The published numbers (olacore.report), the report page's generator (chapter_code.report) on hand-made results
files, and the runner re-executing the report when a chapter's results change."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, load_runner

from olacore.profiles import PAPER_CAUSAL
from olacore.report import (
    CAUSAL_PROXY_TARGETS,
    PROXY_TARGET_NAMES,
    paper_comparison,
    paper_family,
    paper_proxy,
    proxy_keys,
    published,
    retrieval_keys,
)
from olacore.results import ChapterResults, load_results
from olacore.report import CANNOT_JUDGE, NOT_TESTED

from chapter_code.report import (BELOW, NOT_MEASURED, NOT_REPRODUCED, REPRODUCED, WEAKLY, claims_table, report_chapters,
                                 report_summary, report_table, reproduction, write_claims)

sys.path.insert(0, str(ROOT / "scripts"))
import notebook_manifest  # noqa: E402


def test_every_published_number_has_one_key():
    items = published()
    keys = [p.key for p in items]
    assert len(keys) == len(set(keys))
    sections = {s: sum(p.section == s for p in items) for s in dict.fromkeys(p.section for p in items)}
    assert sections == {"SSIM retrieval": 8, "visual proxy": 24, "controls": 3, "syntax": 24,
                        "TOA relation extraction": 9}
    by_key = {p.key: p for p in items}
    assert by_key["retrieval/Qwen2-1.5B->gemma-2-2b/hits@1"].paper == 83.6
    assert by_key["proxy/order1/G-2b"].paper == paper_proxy().loc["order1", "G-2b"] == 93.1
    assert by_key["controls/random init"].paper is None


def test_our_models_stand_in_for_the_paper_family_by_family():
    assert [paper_family(n) for n in ("qwen2.5-0.5b", "gemma-3-270m", "smollm2-135m")] == ["Q", "G", "L"]
    # the paper profile's own models, by their hub ids
    assert [paper_family(n) for n in PAPER_CAUSAL] == ["Q", "G", "L"]
    assert [paper_family(n) for n in ("Qwen2-1.5B", "gemma-2-2b", "Llama-3.2-3B", "L-8b")] == ["Q", "G", "L", "L"]
    assert retrieval_keys("qwen2.5-0.5b", "gemma-3-270m") == ["retrieval/Qwen2-1.5B->gemma-2-2b/hits@1"]
    assert retrieval_keys("smollm2-135m", "qwen2.5-0.5b", "hits@5") == ["retrieval/Llama-3.2-3B->Qwen2-1.5B/hits@5"]
    assert retrieval_keys("gemma-3-270m", "qwen2.5-0.5b") == []  # the paper did not report that pair
    assert proxy_keys("qwen2.5-0.5b", "order1") == ["proxy/order1/Q-1b5", "proxy/order1/Q-7b"]
    assert proxy_keys("gemma-3-270m", "order3") == []  # no published order-3 proxy number
    # every abbreviated proxy target is spelled out, as a model of the abbreviation's family
    assert tuple(PROXY_TARGET_NAMES) == CAUSAL_PROXY_TARGETS
    assert all(paper_family(name) == paper_family(short) for short, name in PROXY_TARGET_NAMES.items())
    with pytest.raises(ValueError, match="no family"):
        paper_family("minilm-l6")


def test_the_reproduction_verdict_rule():
    assert reproduction(None, 83.6) == NOT_MEASURED
    assert reproduction(80.0, 83.6, 1.0) == REPRODUCED  # within 10 points
    assert reproduction(46.0, 91.6, 1.0) == BELOW  # holds against chance, far below the paper
    assert reproduction(3.0, 91.6, 1.0) == NOT_REPRODUCED  # short of 5 x chance
    assert reproduction(40.0, 81.3, None, "holds") == BELOW and reproduction(40.0, 81.3, None, "") == NOT_REPRODUCED
    assert reproduction(75.0, 81.3) == REPRODUCED  # neither chance nor a chapter verdict: the tolerance alone
    assert reproduction(12.5, 7.7, 12.5) == NOT_REPRODUCED  # at chance: close to the paper, but reproduces nothing
    assert reproduction(80.0, 81.3, None, "does not hold here") == NOT_REPRODUCED
    assert reproduction(25.0, None, 25.0, "yes") == REPRODUCED and reproduction(90.0, None, 25.0, "no") == NOT_REPRODUCED
    with pytest.raises(ValueError, match="NaN"):
        reproduction(float("nan"), 80.0)


def test_a_verdict_follows_the_papers_claim_not_only_its_number():
    # "order 1 beats rollout": our rollout above the paper's, but our order 1 barely ahead of it
    assert reproduction(55.6, 46.2, None, "holds", reference=57.4) == WEAKLY
    assert reproduction(55.6, 46.2, None, "holds", reference=55.0) == NOT_REPRODUCED  # the claim is contradicted
    assert reproduction(40.0, 46.2, None, "holds", reference=60.0) == REPRODUCED  # ordering holds, close to the paper
    assert reproduction(20.0, 46.2, None, "holds", reference=60.0) == BELOW
    # the beaten number is weak by the paper's own account: its failing chance test is no contradiction
    assert reproduction(14.0, 20.0, 8.0, "does not hold here", reference=30.0) == REPRODUCED
    assert reproduction(14.0, 20.0, 8.0, "does not hold here", reference=15.0) == WEAKLY


def test_a_rate_that_cannot_clear_its_chance_bar_is_not_judged():
    # Hits@5 among 8 texts: chance 62.5 %, so 3 x chance exceeds 100 % and even a perfect score fails the rate rule
    assert reproduction(100.0, 89.4, 62.5, "does not hold here") == CANNOT_JUDGE
    assert reproduction(100.0, 89.4, 100 / 3 - 0.1, "holds") == REPRODUCED  # just below that, judged as usual
    # a lower bound (zero-shot prompting) is judged by closeness, not against chance
    assert reproduction(7.0, 7.69, 100 / 19, bound=True) == REPRODUCED
    assert reproduction(30.0, 7.69, 100 / 19, bound=True) == NOT_REPRODUCED  # a much stronger bound than the paper's
    assert reproduction(7.0, 7.69, 100 / 19, "does not hold here", bound=True) == NOT_REPRODUCED
    # the chapter's verdict on the claim decides even where the number clears chance (transfer vs zero-shot)
    assert reproduction(31.0, 30.49, 100 / 19, "holds") == REPRODUCED
    assert reproduction(31.0, 30.49, 100 / 19, "does not hold here") == NOT_REPRODUCED
    assert reproduction(31.0, 30.49, 100 / 19, NOT_TESTED) == NOT_REPRODUCED
    with pytest.raises(ValueError, match="NaN"):
        reproduction(50.0, 46.2, None, "holds", reference=float("nan"))


def test_the_report_reads_the_papers_orderings_and_bounds():
    by_key = {p.key: p for p in published()}
    assert by_key["syntax/BERT-base/rollout/uas"].reference == "syntax/BERT-base/order1/uas"
    assert by_key["proxy/alti/G-2b"].reference == "proxy/order1/G-2b" and not by_key["proxy/order2/G-2b"].reference
    assert by_key["toa-re/zero-shot prompting/Qwen2-1.5B"].bound and not by_key["toa-re/Qwen2-1.5B/Qwen2-1.5B"].bound
    results = ChapterResults("06_syntax", "smoke")
    for channel, value in (("order1", 57.4), ("rollout", 55.6), ("order2", 58.0)):
        results.add(f"syntax/enc/{channel}/uas", "UAS", value, protocol="held-out", verdict="holds", subject="enc",
                    paper_keys=[f"syntax/BERT-base/{channel}/uas"])
    table = report_table({"06_syntax": results}).set_index("published number")
    assert table.loc["UAS, BERT-base, order 1", "verdict"] == BELOW  # 57.4 vs 81.3
    assert table.loc["UAS, BERT-base, rollout", "verdict"] == WEAKLY  # above the paper's 46.2, 1.8 behind order 1
    assert table.loc["UAS, BERT-base, order 2", "verdict"] == NOT_REPRODUCED  # ahead of our order 1


def test_a_chapter_shows_the_papers_numbers_beside_its_own():
    ours = pd.DataFrame({"subject": ["a -> b", "zero-shot, b"], "value": [31.0, 7.0],
                         "paper_keys": [["toa-re/Llama-3.2-3B/Qwen2-1.5B"], ["toa-re/zero-shot prompting/Qwen2-1.5B"]]})
    beside = paper_comparison("TOA relation extraction", ours)
    assert beside["ours: model"].tolist() == ["a -> b", "zero-shot, b"]
    assert beside["paper %"].tolist() == [30.49, 7.69] and beside["ours %"].tolist() == [31.0, 7.0]
    assert paper_comparison("syntax", ours).empty
    with pytest.raises(ValueError, match="section"):
        paper_comparison("no such experiment", ours)


def _quantitative() -> ChapterResults:
    """Hand-made results of chapters 03-04: one proxy target under both protocols, one retrieval pair."""
    results = ChapterResults("03_retrieval", "smoke")
    keys = proxy_keys("qwen2.5-0.5b", "order1")
    results.add("proxy/causal/qwen2.5-0.5b/order1/official", "proxy, official protocol", 62.0, protocol="official",
                chance=2.0, paper_keys=keys, subject="qwen2.5-0.5b")
    results.add("proxy/causal/qwen2.5-0.5b/order1/honest", "proxy, held-out protocol", 41.0, protocol="held-out",
                chance=2.0, paper_keys=keys, subject="qwen2.5-0.5b")
    results.add("retrieval/causal/qwen->gemma", "Hits@1", 90.0, protocol="official", chance=1.0,
                paper_keys=retrieval_keys("qwen2.5-0.5b", "gemma-3-270m"), subject="qwen2.5-0.5b -> gemma-3-270m")
    results.add("retrieval/causal/mean", "a number of no published row", 50.0, protocol="official")
    return results


def _controls() -> ChapterResults:
    """Hand-made results of chapter 05, one record per kind for the random-init claim, no protocol."""
    results = ChapterResults("05_controls", "smoke")
    for kind, value, vanishes in (("encoder", 25.0, "yes"), ("causal", 60.0, "no")):
        results.add(f"controls/{kind}/random init/order1/hits@1", "Hits@1", value, chance=12.5, verdict=vanishes,
                    paper_keys=["controls/random init"], subject=f"{kind} pair")
    return results


def test_rows_put_each_record_under_its_published_number_and_protocol():
    table = report_table({"03_retrieval": _quantitative(), "05_controls": _controls(),
                          "06_syntax": ChapterResults("06_syntax", "smoke")})
    assert list(table.columns) == ["section", "published number", "paper %", "ours: model", "ours: official protocol %",
                                   "ours: held-out protocol %", "official - held-out", "verdict", "chapter"]
    proxy = table[table["published number"].str.contains("target Q-") & table["published number"].str.contains("order 1")]
    assert len(proxy) == 2 and (proxy["ours: model"] == "qwen2.5-0.5b").all()  # Q-1b5 and Q-7b
    row = proxy.iloc[0]
    assert (row["paper %"], row["ours: official protocol %"], row["ours: held-out protocol %"]) == (52.6, 62.0, 41.0)
    assert row["official - held-out"] == pytest.approx(21.0)
    assert row["verdict"] == REPRODUCED  # judged on the official-protocol number: 62 >= 52.6 - 10
    assert proxy.iloc[1]["paper %"] == 49.2 and proxy.iloc[1]["verdict"] == REPRODUCED  # Q-7b: one number, two rows
    retrieval = table[table["published number"] == "Hits@1, Qwen2-1.5B -> Gemma-2-2B, 1st-order OLA"].iloc[0]
    assert retrieval["verdict"] == REPRODUCED and np.isnan(retrieval["ours: held-out protocol %"])
    controls = table[table["section"] == "controls"]
    assert controls["ours: model"].tolist() == ["encoder pair", "causal pair", "-", "-"]
    assert controls["verdict"].tolist() == [REPRODUCED, NOT_REPRODUCED, NOT_MEASURED, NOT_MEASURED]
    # a chapter that records none of the published numbers (syntax here) leaves its rows unmeasured
    syntax = table[table["section"] == "syntax"]
    assert len(syntax) == 24 and (syntax["verdict"] == NOT_MEASURED).all() and (syntax["chapter"] == "06_syntax").all()
    assert (table[table["section"] == "TOA relation extraction"]["verdict"] == NOT_MEASURED).all()
    # an unmeasured published number names the page that measures it: retrieval 03, the proxy 04
    unmeasured = table[table["verdict"] == NOT_MEASURED].groupby("section")["chapter"].unique()
    assert list(unmeasured["SSIM retrieval"]) == ["03_retrieval"] and list(unmeasured["visual proxy"]) == ["04_proxy"]
    summary = report_summary(table)
    assert summary.loc["syntax", NOT_MEASURED] == 24 and summary.loc["visual proxy", REPRODUCED] >= 1


def test_an_official_number_that_cannot_be_judged_is_compared_with_nothing():
    results = ChapterResults("04_proxy", "smoke")
    keys = proxy_keys("qwen2.5-0.5b", "order1")
    results.add("proxy/official", "proxy, official protocol", 4.0, protocol="official", chance=2.0, paper_keys=keys,
                subject="qwen2.5-0.5b", verdict=CANNOT_JUDGE)
    results.add("proxy/honest", "proxy, held-out protocol", 51.0, protocol="held-out", chance=2.0, paper_keys=keys,
                subject="qwen2.5-0.5b", verdict="holds")
    rows = report_table({"04_proxy": results})
    rows = rows[rows["ours: model"] == "qwen2.5-0.5b"]
    assert len(rows) == 2 and (rows["verdict"] == CANNOT_JUDGE).all()
    assert rows["official - held-out"].isna().all() and (rows["ours: held-out protocol %"] == 51.0).all()
    assert reproduction(90.0, 94.6, 2.0, CANNOT_JUDGE) == CANNOT_JUDGE  # whatever the numbers


def test_a_record_given_twice_is_refused():
    results = _quantitative()
    results.add("proxy/causal/qwen2.5-0.5b/order1/again", "again", 61.0, protocol="official",
                paper_keys=proxy_keys("qwen2.5-0.5b", "order1"), subject="qwen2.5-0.5b")
    with pytest.raises(ValueError, match="two official records"):
        report_table({"03_retrieval": results})


def test_results_files_are_read_and_a_missing_one_is_named(tmp_path):
    _quantitative().save(tmp_path)
    _controls().save(tmp_path)
    loaded = {chapter: load_results(chapter, tmp_path) for chapter in ("03_retrieval", "05_controls")}
    assert loaded["03_retrieval"].records[0].paper_keys == ["proxy/order1/Q-1b5", "proxy/order1/Q-7b"]
    table = report_table(loaded)
    assert table.equals(report_table({"03_retrieval": _quantitative(), "05_controls": _controls()}))
    with pytest.raises(FileNotFoundError, match="06_syntax"):
        load_results("06_syntax", tmp_path)


def test_the_report_reads_every_other_chapter():
    chapters = report_chapters(ROOT / "notebooks", "08_report")
    assert chapters[:5] == ["01_derivation", "02_qualitative", "03_retrieval", "04_proxy", "05_controls"]
    assert "08_report" not in chapters
    appendices = sorted(p.stem for p in (ROOT / "notebooks").glob("a[0-9]_*.py"))
    assert chapters[len(chapters) - len(appendices):] == appendices  # the appendices' records too, after the main path
    assert notebook_manifest.reads_results(ROOT / "notebooks" / "08_report.py")
    assert not notebook_manifest.reads_results(ROOT / "notebooks" / "03_retrieval.py")


def test_the_report_fingerprint_covers_the_other_chapters_results(tmp_path):
    source = tmp_path / "08_report.py"
    source.write_text(f"# %%\n{notebook_manifest.READS_RESULTS}\nprint(1)\n")
    out = tmp_path / "out"
    (out / "results").mkdir(parents=True)
    (out / "results" / "03_retrieval.json").write_text('{"a": 1}')
    shared = {"package": "p"}
    first = notebook_manifest.chapter_fingerprint(source, {}, shared, out)
    (out / "results" / "08_report.json").write_text("its own results")  # not an input of itself
    assert notebook_manifest.chapter_fingerprint(source, {}, shared, out) == first
    (out / "results" / "03_retrieval.json").write_text('{"a": 2}')
    assert notebook_manifest.chapter_fingerprint(source, {}, shared, out)["results"] != first["results"]
    with pytest.raises(ValueError, match="output folder"):
        notebook_manifest.chapter_fingerprint(source, {}, shared)
    plain = tmp_path / "03_x.py"
    plain.write_text("# %%\nprint(1)\n")
    assert "results" not in notebook_manifest.chapter_fingerprint(plain, {}, shared, out)


TINY_REPORT = f'''# %% tags=["parameters"]
profile = "default"  # smoke, default or paper

# %%
{notebook_manifest.READS_RESULTS}
import os
from pathlib import Path

Path(os.environ["OLACORE_TEST_MARKER"]).write_text((Path(os.environ["OLACORE_RESULTS"]) / "03_x.json").read_text())
'''


@pytest.mark.slow
def test_a_changed_chapter_result_reexecutes_the_report_and_the_runner_puts_it_last(tmp_path, monkeypatch):
    runner = load_runner()
    source, out, marker = tmp_path / "08_report.py", tmp_path / "out", tmp_path / "ran.txt"
    source.write_text(TINY_REPORT)
    monkeypatch.setenv("OLACORE_TEST_MARKER", str(marker))
    (out / "results").mkdir(parents=True)
    (out / "results" / "03_x.json").write_text('{"value": 1}')
    shared = notebook_manifest.shared_fingerprint(ROOT)
    assert runner.run_chapter(source, out, {"profile": "smoke"}, shared=shared)["status"] == "executed"
    assert marker.read_text() == '{"value": 1}'
    assert runner.run_chapter(source, out, {"profile": "smoke"}, shared=shared)["status"] == "skipped"
    (out / "results" / "03_x.json").write_text('{"value": 2}')
    row = runner.run_chapter(source, out, {"profile": "smoke"}, shared=shared)
    assert (row["status"], row["reason"]) == ("executed", "results changed") and marker.read_text() == '{"value": 2}'
    ordered = sorted([source, ROOT / "notebooks" / "03_retrieval.py"], key=notebook_manifest.reads_results)
    assert ordered[-1] == source
    manifest = json.loads(notebook_manifest.manifest_path(out).read_text())
    assert "results" in manifest["chapters"]["08_report"]["fingerprint"]


def test_the_claims_at_a_glance_table_spans_and_counts(tmp_path):
    table = pd.DataFrame({
        "section": ["SSIM retrieval"] * 3 + ["controls"],
        "published number": ["Hits@1, A -> B, 1st-order OLA", "Hits@1, B -> A, 1st-order OLA",
                             "Hits@5, A -> B, 1st-order OLA", "OLAS vanishes"],
        "paper %": [90.0, 80.0, 99.0, np.nan],
        "ours: official protocol %": [40.0, np.nan, 50.0, np.nan],
        "ours: held-out protocol %": [np.nan, np.nan, np.nan, np.nan],
        "verdict": ["reproduced", "not measured yet", "reproduced", "not measured yet"]})
    claims = claims_table(table)
    assert len(claims) == 2  # Hits@1 retrieval, controls; claims without a row are left out
    assert claims.iloc[0][["paper %", "ours %"]].tolist() == ["90.0", "40.0"]  # Hits@5 is not this claim
    assert claims.iloc[0]["verdict"] == "reproduced 1 (1 of 2 published numbers measured)"
    assert claims.iloc[1]["ours %"] == "-" and "not measured" in claims.iloc[1]["verdict"]
    path = write_claims(table, "smoke", tmp_path / "claims.md")
    text = path.read_text()
    assert text.startswith(":::{table}") and ":name: tbl-claims-at-a-glance" in text and "nan" not in text.lower()


def test_value_span_gives_one_value_where_the_ends_agree():
    import pandas as pd

    from olacore.report import value_span

    assert value_span(pd.Series([8.31, 8.29])) == "8.3"
    assert value_span(pd.Series([3.0, float("nan"), 12.5])) == "3.0 to 12.5"
    assert value_span(pd.Series([float("nan")])) == "-"
