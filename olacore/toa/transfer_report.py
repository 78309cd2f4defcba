"""Readings of the TOA transfer matrices: gaps, verdicts, our numbers beside the paper's table, figures.

The lower bounds (majority class, zero-shot prompting) are in :mod:`olacore.toa.transfer_bounds`;
similarity vs transfer is read in :mod:`olacore.toa.transfer_similarity`.

Everything here reads the rows of :mod:`olacore.toa.transfer` (scores in percent) and fixes
its rules before the runs in :mod:`olacore.verdicts`: a target-trained adapter *learned* its task
when it beats the majority bound by more than :data:`olacore.verdicts.LEARNED_TOL` points
(:func:`olacore.verdicts.learned`); a transfer *beats* a bound when it is strictly above it
(:func:`olacore.verdicts.beats_bound`); the share *recovered* is transfer / target-trained.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from olacore.toa.train import METRICS
from olacore.toa.transfer import matrix
from olacore.verdicts import NOT_MEASURED_HERE, beats_bound, learned

__all__ = ["gap_table", "verdict_table", "learned_table", "re_keys", "zero_shot_keys", "re_paper_numbers", "PAPER_NAMES",
           "transfer_heatmaps", "record_transfer"]

#: The paper's model each of our causal models stands in for (by family, as :data:`olacore.report.ZOO_FAMILIES`).
PAPER_NAMES = {"smollm2-135m": "Llama-3.2-3B", "qwen2.5-0.5b": "Qwen2-1.5B", "gemma-3-270m": "Gemma-2-2B"}
_FAMILY_NAMES = {"L": "Llama-3.2-3B", "Q": "Qwen2-1.5B", "G": "Gemma-2-2B"}



def _paper_name(model: str) -> str | None:
    """The paper's RE-table model of ``model``'s family (zoo names or the paper's own ids), else ``None``."""
    from olacore.report import paper_family

    try:
        return _FAMILY_NAMES[paper_family(model.split("/")[-1])]
    except ValueError:
        return None


def gap_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per off-diagonal cell: ``task, kind, source, target, transfer, target-trained, gap``
    (target-trained minus transferred, points) and ``recovered`` (transfer / target-trained, %),
    means over seeds (``transfer std`` where several seeds ran).

    Args:
        rows: :func:`olacore.toa.transfer.transfer_rows` (``task, kind, source, target, seed,
            score``; score in percent), diagonal cells included.

    Returns:
        One row per off-diagonal ``(task, kind, source, target)``: ``transfer``, ``transfer
        std``, ``target-trained`` and ``source-trained`` (the diagonal scores of target and
        source; NaN where missing), ``gap`` (points), ``recovered`` (%; NaN where the
        target-trained score is 0). :func:`verdict_table` masks ``recovered`` further.

    Raises:
        KeyError: ``rows`` lacks one of the columns above.
    """
    means = rows.groupby(["task", "kind", "source", "target"], sort=False)["score"].agg(["mean", "std"]).reset_index()
    diagonal = means[means["source"] == means["target"]].set_index(["task", "target"])["mean"]
    off = means[means["source"] != means["target"]].copy()
    off["target-trained"] = [diagonal.get((t, g), np.nan) for t, g in zip(off["task"], off["target"])]
    off["source-trained"] = [diagonal.get((t, s), np.nan) for t, s in zip(off["task"], off["source"])]
    off = off.rename(columns={"mean": "transfer", "std": "transfer std"})
    off["gap"] = off["target-trained"] - off["transfer"]
    trained = off["target-trained"].where(off["target-trained"] > 0)  # undefined when the target-trained score is 0
    off["recovered"] = 100 * off["transfer"] / trained
    return off.reset_index(drop=True)


def verdict_table(gaps: pd.DataFrame, control: pd.DataFrame, bounds: pd.DataFrame,
                  zero_shot: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each off-diagonal cell beside its bounds, with the computed verdicts.

    Columns: the :func:`gap_table` columns, ``random init`` (the same adapter on the
    target's random-init twin; NaN where no twin ran), ``majority``, ``zero-shot`` (the
    target prompted, causal RE / NER only), and ``beats zero-shot``, ``beats random init``,
    ``beats majority`` (``"holds"`` / ``"does not hold here"`` / ``"-"`` where not measured /
    ``"not tested: source did not learn"`` where the source's own diagonal score does not beat
    the majority bound). ``recovered`` is NaN and ``recovered above majority``
    ((transfer - majority) / (target-trained - majority), %) is defined only where the
    target-trained score beats the majority bound.

    Args:
        gaps: :func:`gap_table`.
        control: :func:`olacore.toa.transfer.random_init_rows` (``task, source, target,
            score``; may be empty).
        bounds: :func:`majority_bounds` (``task, bound, score``, percent).
        zero_shot: :func:`zero_shot_rows` (``task, model, score``) or ``None``.

    Returns:
        ``gaps`` (one row per off-diagonal cell) with the columns above added; scores in percent.

    Raises:
        KeyError: a frame lacks one of the columns above.
    """
    out = gaps.copy()
    ri = (control.groupby(["task", "source", "target"])["score"].mean() if len(control)
          else pd.Series(dtype=float))
    majority = bounds.set_index("task")["score"]
    zs = zero_shot.set_index(["task", "model"])["score"] if zero_shot is not None and len(zero_shot) else {}
    out["random init"] = [ri.get((t, s, g), np.nan) for t, s, g in zip(out["task"], out["source"], out["target"])]
    out["majority"] = [majority.get(t, np.nan) for t in out["task"]]
    out["zero-shot"] = [zs.get((t, g), np.nan) if len(zs) else np.nan for t, g in zip(out["task"], out["target"])]
    # A cell is tested only when its source adapter learned its task on its own model (diagonal
    # above the majority bound, same rule as learned_table); a share of a target-trained
    # score that does not beat the majority bound is a ratio to a constant predictor: NaN.
    source_learned = [learned(s, m) for s, m in zip(out["source-trained"], out["majority"])]
    target_learned = pd.Series([learned(t, m) for t, m in zip(out["target-trained"], out["majority"])], index=out.index)
    out["recovered"] = out["recovered"].where(target_learned)
    out["recovered above majority"] = (100 * (out["transfer"] - out["majority"])
                                       / (out["target-trained"] - out["majority"])).where(target_learned)
    for column, bound in (("beats zero-shot", "zero-shot"), ("beats random init", "random init"),
                          ("beats majority", "majority")):
        out[column] = [beats_bound(a, b, ok) for a, b, ok in zip(out["transfer"], out[bound], source_learned)]
    return out


def learned_table(rows: pd.DataFrame, bounds: pd.DataFrame) -> pd.DataFrame:
    """Did the target-trained adapter (the matrix diagonal) beat the majority bound by more than
    :data:`olacore.verdicts.LEARNED_TOL` points (:func:`olacore.verdicts.learned`)?

    A transfer verdict tests OLAS only where the adapter learned the task on its own model: if
    the diagonal does not beat the model-free bound, transferred cells at or below it say
    nothing about the source-target similarity.

    Args:
        rows: :func:`olacore.toa.transfer.transfer_rows` (``task, kind, source, target,
            diagonal, score``).
        bounds: :func:`majority_bounds` (``task, bound, score``).

    Returns:
        One row per task and kind: ``task, kind, models`` (diagonal cells), ``above majority``
        (how many beat the bound), ``best target-trained`` and ``majority`` (percent).
    """
    majority = bounds.set_index("task")["score"]
    diagonal = rows[rows["diagonal"]].groupby(["task", "kind", "target"], sort=False)["score"].mean().reset_index()
    out = []
    for (task, kind), group in diagonal.groupby(["task", "kind"], sort=False):
        bound = float(majority.get(task, np.nan))
        out.append({"task": task, "kind": kind, "models": len(group),
                    "above majority": sum(learned(score, bound) for score in group["score"]),
                    "best target-trained": float(group["score"].max()), "majority": bound})
    return pd.DataFrame(out)


def re_keys(source: str, target: str) -> list[str]:
    """The report keys (:func:`olacore.report.published`) of our causal RE cell ``source -> target``:
    ``toa-re/<paper source>/<paper target>`` of the same families, where the paper ran that pair."""
    from olacore import paper

    src, tgt = _paper_name(source), _paper_name(target)
    published = paper.toa_relation_extraction()
    return [f"toa-re/{src}/{tgt}"] if src in published.index and tgt in published.columns else []


def zero_shot_keys(task: str, model: str) -> list[str]:
    """The report key of our zero-shot prompting score of ``model`` on ``task`` (RE only)."""
    tgt = _paper_name(model)
    return [f"toa-re/zero-shot prompting/{tgt}"] if task == "re" and tgt else []


def re_paper_numbers(rows: pd.DataFrame, zero_shot: pd.DataFrame | None = None) -> pd.DataFrame:
    """Our numbers that stand beside the paper's RE table, for :func:`olacore.report.paper_comparison`
    (section ``"TOA relation extraction"``; paper section 4.4): each causal RE cell (mean over
    seeds, accuracy on the same test subset for every row) and each zero-shot RE score whose paper
    counterpart exists (our models stand in for the paper's by family, :data:`PAPER_NAMES`).

    Args:
        rows: :func:`olacore.toa.transfer.transfer_rows` (``task, kind, source, target, score``, %).
        zero_shot: :func:`zero_shot_rows` (``task, model, score``) or ``None``.

    Returns:
        columns ``subject`` (``"<source> -> <target>"`` or ``"zero-shot, <model>"``), ``value``
        (percent), ``paper_keys`` (:func:`re_keys`, :func:`zero_shot_keys`).

    Raises:
        KeyError: ``rows`` lacks a column above, or a non-empty ``zero_shot`` lacks ``task``,
            ``model`` or ``score``.
    """
    re_rows = rows[(rows["task"] == "re") & (rows["kind"] == "causal")]
    out = [{"subject": f"{source} -> {target}", "value": float(value), "paper_keys": re_keys(source, target)}
           for (source, target), value in re_rows.groupby(["source", "target"])["score"].mean().items()]
    for _, z in (zero_shot.iterrows() if zero_shot is not None and len(zero_shot) else []):
        out.append({"subject": f"zero-shot, {z['model']}", "value": float(z["score"]),
                    "paper_keys": zero_shot_keys(z["task"], z["model"])})
    return pd.DataFrame(out, columns=["subject", "value", "paper_keys"])


def transfer_heatmaps(rows: pd.DataFrame, tasks: Sequence[str], kinds: Sequence[str] = ("causal", "encoder")):
    """Annotated source x target heatmaps (mean score over seeds): one row of panels per
    task, one column per kind; the diagonal cells are outlined (target-trained).

    Returns:
        The matplotlib ``Figure``.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(tasks), len(kinds), figsize=(4.2 * len(kinds), 3.3 * len(tasks)), squeeze=False)
    for r, task in enumerate(tasks):
        for c, kind in enumerate(kinds):
            ax = axes[r][c]
            try:
                m = matrix(rows, task, kind)
            except ValueError:
                ax.axis("off")
                continue
            m = m.reindex(columns=list(m.index) + [t for t in m.columns if t not in m.index])
            vmax = max(1.0, float(np.nanmax(m.to_numpy(dtype=float))))
            ax.imshow(m.to_numpy(dtype=float), cmap="viridis", vmin=0, vmax=vmax)
            for i, source in enumerate(m.index):
                for j, target in enumerate(m.columns):
                    value = m.iloc[i, j]
                    ax.text(j, i, "-" if pd.isna(value) else f"{value:.1f}", ha="center", va="center",
                            # viridis is dark below about 60 % of its range: white text there, black above
                            color="black" if source == target or (not pd.isna(value) and value / vmax > 0.6)
                            else "white",
                            bbox=None if source != target else dict(facecolor="white", alpha=0.7, lw=0))
            ax.set_xticks(range(len(m.columns)), m.columns, rotation=30, ha="right", fontsize=8)
            ax.set_yticks(range(len(m.index)), m.index, fontsize=8)
            ax.set_title(f"{task.upper()} {METRICS[task]} (%), {kind}", fontsize=9)
            ax.set_xlabel("target", fontsize=8)
            ax.set_ylabel("source", fontsize=8)
    fig.tight_layout()
    return fig


def record_transfer(results, rows: pd.DataFrame, verdicts: pd.DataFrame, zero_shot: pd.DataFrame,
                    bounds: pd.DataFrame, note: str) -> None:
    """Record every cell, bound and zero-shot score in ``results`` (:class:`olacore.results.ChapterResults`).

    Causal RE cells and zero-shot RE scores carry the report's keys
    (``toa-re/<paper source>/<paper target>``, :func:`olacore.report.published`), subject
    ``"<source> -> <target>"``, protocol ``"honest"`` (checkpoints chosen on dev), chance 100/19
    and, for a transferred cell, the verdict on the paper's claim that it beats zero-shot prompting
    (``beats zero-shot`` of :func:`verdict_table`, where measured).

    Args:
        results: the chapter's :class:`olacore.results.ChapterResults` (written to in place).
        rows, verdicts, zero_shot, bounds: :func:`olacore.toa.transfer.transfer_rows`,
            :func:`verdict_table`, :func:`zero_shot_rows`, :func:`majority_bounds` (scores in %).
        note: a sentence attached to the records (profile, sizes).

    Returns:
        ``None``; cells whose ``recovered`` is NaN get no ``recovered`` record.

    Raises:
        ValueError: a key recorded twice (e.g. ``record_transfer`` called twice on one
            ``results``) or a value that is not a finite number, such as a NaN score or bound
            (:meth:`olacore.results.ChapterResults.add`).
        KeyError: a frame lacks a column read here (``rows``: ``task, kind, source, target,
            score``; ``verdicts``: ``task, source, target, random init, beats random init,
            beats zero-shot, recovered``; ``zero_shot``: ``task, model, score, n, unparseable``; ``bounds``:
            ``task, bound, score``), or a task outside :data:`olacore.toa.transfer.METRICS`.
    """
    means = rows.groupby(["task", "kind", "source", "target"], sort=False)["score"].mean()
    # the paper's claim on its RE table: transfer beats zero-shot prompting (:func:`beats_bound`)
    beats = {(v["task"], v["source"], v["target"]): v["beats zero-shot"] for _, v in verdicts.iterrows()
             if v["beats zero-shot"] != NOT_MEASURED_HERE}
    for (task, kind, source, target), value in means.items():
        keys, extra = [], {}
        if task == "re" and kind == "causal":
            keys, extra = re_keys(source, target), dict(chance=100 / 19, protocol="honest")
            extra["verdict"] = beats.get((task, source, target), "")
        results.add(f"toa/{task}/{source}->{target}/{METRICS[task]}",
                    f"TOA {task.upper()} {METRICS[task]}, adapter trained on {source}, applied to {target}", value,
                    paper_keys=keys, subject=f"{source} -> {target}", anchor="tbl-toa-matrices", note=note, **extra)
    for _, z in zero_shot.iterrows():
        keys = zero_shot_keys(z["task"], z["model"])
        results.add(f"toa/{z['task']}/zero-shot/{z['model']}", f"zero-shot prompting of {z['model']}, {z['task'].upper()}",
                    z["score"], paper_keys=keys, subject=f"zero-shot, {z['model']}", anchor="tbl-toa-zero-shot",
                    note=f"{z['n']} test examples, {z['unparseable']} unparseable answers counted wrong",
                    **({"chance": 100 / 19, "protocol": "honest"} if z["task"] == "re" else {}))
    for _, b in bounds.iterrows():
        results.add(f"toa/{b['task']}/bound/majority", f"{b['task'].upper()} lower bound: {b['bound']}", b["score"],
                    anchor="tbl-toa-bounds")
    for _, v in verdicts.iterrows():
        if not math.isnan(v["random init"]):
            results.add(f"toa/{v['task']}/{v['source']}->{v['target']}/random-init",
                        f"TOA {v['task'].upper()}, adapter from {v['source']} on random-init {v['target']}",
                        v["random init"], verdict=v["beats random init"], anchor="tbl-toa-verdicts")
        if math.isnan(v["recovered"]):
            continue
        results.add(f"toa/{v['task']}/{v['source']}->{v['target']}/recovered",
                    f"share of the target-trained {v['task'].upper()} score recovered by transfer from {v['source']} "
                    f"to {v['target']}", v["recovered"], anchor="tbl-toa-verdicts")
