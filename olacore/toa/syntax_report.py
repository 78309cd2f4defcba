"""The syntax chapter's numbers beside the paper's table, and recorded for the report page.

The paper's table (:func:`olacore.paper.syntax`: BERT-, RoBERTa-, ELECTRA-base, UAS / LAS per
OLA order and rollout) has no model of ours; our two encoders stand beside all three of its
encoders, and the report page (:mod:`olacore.report`) puts each of our encoder numbers in the
rows of the same channel and metric for every paper encoder (keys ``syntax/<paper model>/
<channel>/<metric>``), under the honest protocol (checkpoint chosen on dev; the official
configs select on test). The causal LMs have no published syntax number.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from olacore import paper
from olacore.results import ChapterResults
from olacore.toa.analysis import summary
from olacore.verdicts import better

__all__ = ["PAPER_INPUTS", "syntax_paper_numbers", "syntax_keys", "main_data_sets", "record_syntax", "record_rows"]

#: Our input names of the paper's table rows (its channels).
PAPER_INPUTS = {"order 1": "order1", "order 2": "order2", "order 3": "order3", "rollout": "rollout"}


def syntax_keys(input_name: str, metric: str, kind: str) -> list[str]:
    """The report keys (:func:`olacore.report.published`) one of our numbers stands beside:
    every paper encoder's ``input_name`` and ``metric`` (``"uas"``/``"las"``) for an encoder of
    ours, none for a causal LM or an input the paper did not run."""
    if kind != "encoder" or input_name not in PAPER_INPUTS or metric not in ("uas", "las"):
        return []
    return [f"syntax/{model}/{PAPER_INPUTS[input_name]}/{metric}" for model in paper.syntax()["model"].unique()]


def syntax_paper_numbers(table: pd.DataFrame) -> pd.DataFrame:
    """Our numbers that stand beside the paper's syntax table, for :func:`olacore.report.paper_comparison`
    (section ``"syntax"``): UAS / LAS (mean over seeds) of each main encoder data set
    (:func:`main_data_sets`) on each of the paper's inputs, with the keys of :func:`syntax_keys`.

    Args:
        table: the grid (:func:`olacore.toa.experiments.syntax_grid`).

    Returns:
        columns ``subject`` (data set), ``input``, ``metric``, ``value`` (percent), ``paper_keys``.
    """
    kinds = dict(zip(table["model"], table["kind"]))
    main = main_data_sets(table["model"])
    means = summary(table[table["model"].isin(main) & table["input"].isin(list(PAPER_INPUTS))])
    rows = [{"subject": r["model"], "input": r["input"], "metric": metric, "value": r[f"{metric}_mean"],
             "paper_keys": syntax_keys(r["input"], metric, kinds[r["model"]])}
            for _, r in means.iterrows() for metric in ("uas", "las")]
    return pd.DataFrame(rows, columns=["subject", "input", "metric", "value", "paper_keys"])


def main_data_sets(names: Sequence[str]) -> list[str]:
    """The data sets that are a zoo model's main run (``"minilm-l6"``), not a smaller or control
    one (``"minilm-l6 [ALTI subset]"``, ``"... [train 125]"``, ``"... [random init]"``)."""
    return [name for name in dict.fromkeys(names) if " [" not in str(name)]


def record_syntax(results: ChapterResults, table: pd.DataFrame, verdicts: pd.DataFrame, *, anchor: str = "",
                  note: str = "") -> None:
    """Record every cell of the grid (mean over seeds) and every verdict in ``results``.

    Keys: ``syntax/<data set>/<input>/<metric>`` (percent; ``uas``, ``las``, ``uas_nopunct``,
    ``las_nopunct``) and ``verdict/<claim>/<data set>/<other input>`` (the mean paired
    difference, points). An encoder's number of a paper input carries the report keys of
    :func:`syntax_keys`, the protocol ``"honest"`` and, as its verdict, whether it beats the same
    model's distance-only baseline (a number at the distance baseline reproduces nothing); only
    a main data set (:func:`main_data_sets`) stands beside the paper, never a smaller, a
    learning-curve or a random-init one.

    Raises:
        ValueError: a number is NaN or a key repeats (:meth:`ChapterResults.add`).
    """
    metrics = ("uas", "las", "uas_nopunct", "las_nopunct")
    means = summary(table, metrics)
    kinds = dict(zip(table["model"], table["kind"]))
    main = set(main_data_sets(table["model"]))
    for _, r in means.iterrows():
        model, name = r["model"], r["input"]
        distance = means[(means["model"] == model) & (means["input"] == "distance")]
        for metric in metrics:
            details: dict[str, Any] = {"anchor": anchor, "subject": model,
                                       "note": f"mean of {int(r[metric + '_count'])} seed(s); {note}".strip("; ")}
            keys = syntax_keys(name, metric, kinds[model]) if model in main else []
            if keys:
                details.update(paper_keys=keys, protocol="honest")
                if not distance.empty:
                    details["verdict"] = better(r[metric + "_mean"], distance[metric + "_mean"].iloc[0])
            results.add(f"syntax/{model}/{name}/{metric}", f"test {metric.upper().replace('_NOPUNCT', ' without punct.')}"
                        f", DP adapter on {name}, {model}", r[metric + "_mean"], **details)
    for _, v in verdicts.iterrows():
        results.add(f"verdict/{v['claim']}/{v['model']}/{v['other']}", f"{v['claim']}: order 1 - {v['other']}, "
                    f"{v['model']} (UAS points, {v['seeds']} seed(s))", v["mean_diff"], unit="points",
                    verdict=v["verdict"], anchor=anchor, subject=v["model"])


def record_rows(results: ChapterResults, frame: pd.DataFrame, prefix: str, keys: Sequence[str], values: Sequence[str],
                claim: str, unit: str = "%", anchor: str = "") -> None:
    """Record ``values`` of every row of ``frame`` as ``<prefix>/<key values>/<value column>``
    (NaN cells are skipped: a cell that did not run is not a number).

    Raises:
        ValueError: a key repeats (:meth:`ChapterResults.add`).
    """
    for _, row in frame.iterrows():
        where = "/".join(str(row[k]) for k in keys)
        for column in values:
            value = row[column]
            if value is None or pd.isna(value):
                continue
            results.add(f"{prefix}/{where}/{column}", f"{claim}: {column}, {where.replace('/', ', ')}", float(value),
                        unit=unit, anchor=anchor, subject=str(row[keys[0]]))
