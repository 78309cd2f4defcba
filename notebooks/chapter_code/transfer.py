"""TOA transfer (chapter 07, appendix a5; paper section 4.4): an adapter trained on one model's OLA, scored unchanged
on every model of its kind.

Rows of a matrix are source models (the adapter's training model), columns targets of the same kind (CLM to CLM,
encoder to encoder, as the official code); the diagonal is the target-trained adapter. DP and POS data, adapter and
training are the syntax chapter's (input "order 1+2"), so its adapters are store hits here. Checkpoints are chosen on
*dev* (the official configs select on test). Bounds: the random-init twin, the majority class, a capitalisation
rule, zero-shot prompting (the paper's only baseline); verdict rules: :mod:`olacore.report`. Sizes:
:class:`olacore.profiles.TransferSettings`.

Throughout, ``store`` is the tensor store (default ``$OLACORE_CACHE/tensors``) and ``workers`` the extraction
processes on a cache miss (``None``: ``settings.workers``, else one per core). Reading task data raises
FileNotFoundError for a missing data file (naming ``OLACORE_DATA``); extracting maps raises ValueError for an unknown
model (listing the zoo) and ModuleNotFoundError / ImportError for a missing model package (with its ``pip`` line).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from olacore.profiles import TransferSettings
from olacore.results import HELD_OUT
from olacore.settings import cpu_workers
from olacore.store import TensorStore
from olacore.toa.data import ENTITY_TASKS, LabelVocab, TaskData, TaskItem, syntax_data, task_kind
from olacore.toa.train import (METRICS, TRANSFER_TASKS, TrainedAdapter, attachment_words, entity_f1,
                               paired_bootstrap_se, word_tags)
from olacore.report import NOT_TESTED, better, learned

from chapter_code.syntax import subset_splits, syntax_splits
from chapter_code.zeroshot import TASKS as ZERO_SHOT_TASKS

__all__ = ["task_splits", "task_data", "all_task_data", "transfer_scores", "sentence_counts", "counts_score",
           "entity_counts", "f1_of_counts", "ROW_COLUMNS", "random_init_rows",
           "matrix", "majority_bounds", "capitalisation_tags", "capitalisation_bound", "surface_bounds",
           "surface_margins",
           "zero_shot_rows", "PROMPTED", "ZERO_SHOT_TASK", "ZERO_SHOT_COLUMNS",
           "gap_table", "verdict_table", "learned_table", "re_keys", "zero_shot_keys", "re_paper_numbers",
           "transfer_heatmaps", "record_transfer", "similarity_hits", "similarity_vs_transfer", "NOT_MEASURED_HERE",
           "beats_bound", "UNDEFINED_FINDING", "findings_markdown", "show_findings"]

#: The columns of a transfer frame (the chapter's matrix, :func:`random_init_rows`), an empty one included.
ROW_COLUMNS = ("task", "kind", "source", "target", "seed", "diagonal", "score", "examples", "unaligned")


def task_splits(task: str, settings: TransferSettings) -> dict[str, list[Any]]:
    """Word-level examples of ``train``, ``dev``, ``test`` for one task.

    ``dp`` / ``pos``: the syntax chapter's EWT splits (``test_long`` dropped); ``re``: SemEval-2010 Task 8; ``wnut``:
    WNUT-17 (train, dev: the first sentences of their files; test spread evenly). ``ner``: UNER English-EWT, which has
    no train file here: ``dev`` spread evenly over UNER dev, ``train`` the first other UNER dev sentences, ``test`` the
    syntax chapter's EWT test sentences (:func:`olacore.corpora.ewt_splits`, maps shared when ``settings.ner.test`` equals
    its ``num_test``) less those UNER leaves out. Sizes: :class:`olacore.profiles.TaskSizes`.

    Raises:
        ValueError: ``ner`` asking for more train + dev sentences than UNER dev holds.
    """
    if task in ("dp", "pos"):
        splits = syntax_splits(settings.syntax)
        return {name: splits[name] for name in ("train", "dev", "test")}
    if task == "ner":
        return _uner_splits(settings.ner)
    from olacore.corpora import read_semeval, read_wnut17
    from olacore.corpora import evenly_spread

    read, sizes = {"re": (read_semeval, settings.re), "wnut": (read_wnut17, settings.wnut)}[task]
    return {"train": list(read("train").items[:sizes.train]), "dev": list(read("dev").items[:sizes.dev]),
            "test": evenly_spread(read("test").items, sizes.test)}


def _uner_splits(sizes) -> dict[str, list[Any]]:
    from olacore.corpora import read_uner
    from olacore.corpora import evenly_spread, read_ewt_syntax

    pool = read_uner("dev").items
    if sizes.train + sizes.dev > len(pool):
        raise ValueError(f"TransferSettings.ner: {sizes.train} train + {sizes.dev} dev sentences asked for, but UNER "
                         f"English-EWT dev holds {len(pool)} (its only source of both); lower TaskSizes.train or .dev")
    dev = evenly_spread(pool, sizes.dev)
    held = {s.sent_id for s in dev}
    train = [s for s in pool if s.sent_id not in held][:sizes.train]
    test = {s.sent_id: s for s in read_uner("test").items}
    spread = evenly_spread(read_ewt_syntax("test").items, sizes.test)
    return {"train": train, "dev": dev, "test": [test[s.sent_id] for s in spread if s.sent_id in test]}


def task_data(task: str, settings: TransferSettings, models: Sequence[str] | None = None, *,
              splits: Mapping[str, Sequence[Any]] | None = None, workers: int | None = None,
              store: TensorStore | None = None) -> dict[str, dict[str, TaskData]]:
    """``{model: {split: TaskData}}`` of one task for every model (paper section 4.4; maps extracted once, cached).

    Args:
        task: a key of :data:`TRANSFER_TASKS`.
        models: zoo names (default ``settings.models_for(task)``).
        splits: word-level examples (default :func:`task_splits`).

    Returns:
        Items' maps are ``T x T`` OLA orders (``T`` tokens, at most ``settings.syntax.max_tokens``); each ``report``
        counts the sentences the tokenizer could not align and the cut losses.

    Raises:
        ValueError: a text longer than a model's context.
    """
    splits = splits if splits is not None else task_splits(task, settings)
    models = settings.models_for(task) if models is None else models
    workers = workers or settings.workers or cpu_workers()
    # Order 3 everywhere: one cache entry per text serves this chapter and the syntax chapter.
    return {m: syntax_data(m, splits, settings.syntax, task=task, max_order=3, workers=workers, store=store)
            for m in models}


def all_task_data(settings: TransferSettings, *, workers: int | None = None, store: TensorStore | None = None
                  ) -> dict[str, dict[str, dict[str, TaskData]]]:
    """:func:`task_data` of every task of ``settings``, each model's maps extracted in one pass (one worker pool),
    together with the texts of :func:`similarity_hits` (paper section 4.4).

    Raises:
        ValueError: EWT train holds fewer than ``settings.similarity_texts`` official-recipe chunks, or a text
            longer than a model's context.
    """
    from olacore.pipeline import cached_ola
    from olacore.texts import similarity_texts

    workers = workers or settings.workers or cpu_workers()
    splits = {task: task_splits(task, settings) for task in settings.tasks}
    shared = [t.text for t in similarity_texts(settings.similarity_texts)]
    for model in settings.models:
        texts = [x.text for task, by_split in splits.items() if model in settings.models_for(task)
                 for split in by_split.values() for x in split]
        if texts:  # an extra encoder with neither dp nor pos among the tasks takes part in nothing
            cached_ola(model, list(dict.fromkeys(texts + shared)), 3, workers=workers, progress=False, store=store)
    return {task: task_data(task, settings, splits=splits[task], workers=workers, store=store)
            for task in settings.tasks}


def transfer_scores(adapter: TrainedAdapter, test: TaskData, predictions: Sequence[dict[str, np.ndarray]] | None = None
                    ) -> dict[str, Any]:
    """One cell of a transfer matrix: ``adapter`` (trained on its source) scored on a target's test data
    (``predictions``: its :meth:`~olacore.toa.train.TrainedAdapter.predict` there, when already made).

    Returns:
        ``score`` (the task's :data:`METRICS` value, percent), the task's other numeric scores (sorted),
        ``examples`` and ``unaligned`` (target sentences its tokenizer could not align, left out).

    Raises:
        ValueError: the target is of the other kind (CLM vs encoder) or for another task or grid.
    """
    scores = adapter.evaluate(test, predictions=predictions)
    numbers = {k: scores[k] for k in sorted(scores) if isinstance(scores[k], (int, float))}
    return {"score": numbers[METRICS[adapter.task]], **numbers, "examples": len(test),
            "unaligned": len(test.report.unaligned)}


def sentence_counts(task: str, items: Sequence[TaskItem], predictions: Sequence[dict[str, np.ndarray]],
                    vocab: LabelVocab) -> np.ndarray:
    """Per sentence, the counts whose sums give the headline score (:func:`counts_score`), for a bootstrap:
    ``(N, 3)`` found / predicted / gold entities (entity tasks), else ``(N, 2)`` right / scored units."""
    if task in ENTITY_TASKS:
        return entity_counts(*word_tags(items, predictions, vocab))
    kind = task_kind(task)
    if kind == "relation":
        names = vocab.labels
        pairs = [([item.label], [names[int(p["label"][0])]]) for item, p in zip(items, predictions)]
    elif kind == "tokens":
        pairs = list(zip(*word_tags(items, predictions, vocab)))
    else:
        gold_heads, _, pred_heads, _, _ = attachment_words(items, predictions, vocab)
        pairs = list(zip(gold_heads, pred_heads))
    return np.array([[sum(g == p for g, p in zip(gold, pred)), len(gold)] for gold, pred in pairs],
                    dtype=np.int64).reshape(-1, 2)


def counts_score(task: str, counts: np.ndarray) -> np.ndarray:
    """The headline score (percent) of summed :func:`sentence_counts`: ``(..., k) -> (...)``; 0 with no unit."""
    if task in ENTITY_TASKS:
        return f1_of_counts(counts)
    return 100.0 * counts[..., 0] / np.maximum(counts[..., 1], 1)


def entity_counts(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> np.ndarray:
    """Per sentence, ``(N, 3)`` found / predicted / gold entities (:func:`f1_of_counts` of their sum is F1)."""
    from seqeval.metrics.sequence_labeling import get_entities

    counts = np.zeros((len(gold), 3), dtype=np.int64)
    for i, (g, p) in enumerate(zip(gold, pred)):
        truth, guess = set(get_entities(list(g))), set(get_entities(list(p)))
        counts[i] = len(truth & guess), len(guess), len(truth)
    return counts


def f1_of_counts(counts: np.ndarray) -> np.ndarray:
    """Entity F1 (percent) of summed :func:`entity_counts`: ``(..., 3) -> (...)``; 0 without any entity."""
    return 200.0 * counts[..., 0] / np.maximum(counts[..., 1] + counts[..., 2], 1)



def random_init_rows(adapters: Mapping[tuple[str, str, int], TrainedAdapter],
                     data: Mapping[str, Mapping[str, Mapping[str, TaskData]]], settings: TransferSettings, *,
                     store: TensorStore | None = None) -> pd.DataFrame:
    """The control: every adapter scored on the test OLA of each target's random-init twin (paper section 4.4).

    The twin is :func:`olacore.loading.random_init` of the target (seed 0, the official control; by name,
    :func:`olacore.loading.twin_name`, so loaded only where its maps are missing). ``dp`` / ``pos`` / ``ner``: on
    ``settings.control_test`` EWT test sentences spread over the chapter's test; ``re`` / ``wnut``: their whole test.

    Args:
        adapters: ``{(task, source, seed): TrainedAdapter}``.
        data: :func:`task_data` per task; a control model absent from a task's data is skipped there.

    Returns:
        Per (task, source of the target's kind, target): :data:`ROW_COLUMNS` (the :func:`transfer_scores` on the
        twin), ``control``, ``transfer`` (the adapter on the real target's maps of the same sentences) and ``se``
        (paired bootstrap standard error of their difference, points); empty with these columns when no row.

    Raises:
        ValueError: a control model whose backbone cannot be re-initialised.
    """
    from olacore.loading import twin_name

    rows = []
    for target in settings.control_models:
        tasks = [task for task, by_model in data.items() if target in by_model]
        if not tasks:
            continue
        twin = twin_name(target, seed=0)
        for task in tasks:
            splits = task_splits(task, settings)
            test = splits["test"] if task in ("re", "wnut") else subset_splits(splits, num_test=settings.control_test)["test"]
            twin_test = task_data(task, settings, [twin], splits={"test": test}, store=store)[twin]["test"]
            real_test = (data[task][target]["test"] if task in ("re", "wnut") else  # the twin's sentences
                         task_data(task, settings, [target], splits={"test": test}, store=store)[target]["test"])
            if not len(twin_test):
                continue
            kind = "causal" if twin_test.causal else "encoder"
            for (cell_task, source, seed), adapter in adapters.items():
                if cell_task != task or bool(adapter.record["causal"]) != bool(twin_test.causal):
                    continue
                on_twin, on_real = adapter.predict(twin_test), adapter.predict(real_test)
                by_id = [dict(zip((item.sent_id for item in d.items), sentence_counts(task, d.items, p, adapter.vocab)))
                         for d, p in ((real_test, on_real), (twin_test, on_twin))]
                both = [sent_id for sent_id in by_id[1] if sent_id in by_id[0]]  # row i: one sentence on both sides
                counts = [np.array([side[i] for i in both]).reshape(len(both), -1) for side in by_id]
                rows.append({"task": task, "kind": kind, "source": source, "target": target, "seed": seed,
                             "diagonal": False, **transfer_scores(adapter, twin_test, on_twin),
                             "control": "random init", "transfer": transfer_scores(adapter, real_test, on_real)["score"],
                             "se": paired_bootstrap_se(*counts, lambda c: counts_score(task, c))})
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=[*ROW_COLUMNS, "control", "transfer", "se"])


def matrix(rows: pd.DataFrame, task: str, kind: str) -> pd.DataFrame:
    """Source x target matrix of ``score`` (mean over seeds) for one task and kind.

    Raises:
        ValueError: no row of that task and kind.
    """
    chosen = rows[(rows["task"] == task) & (rows["kind"] == kind)]
    if chosen.empty:
        raise ValueError(f"no transfer rows for task {task!r} and kind {kind!r}")
    return chosen.pivot_table(index="source", columns="target", values="score", aggfunc="mean", sort=False)


#: The zero-shot task (:mod:`chapter_code.zeroshot`) each prompted task is asked as (:func:`zero_shot_rows`).
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
    """The model-free lower bound of each task on its test split (word level), set on train.

    The floor TOA transfer (paper section 4.4) is read against; the paper gives none.

    - ``re``: the most frequent training relation for every example (accuracy);
    - ``pos``: the most frequent training XPOS tag for every word (accuracy);
    - ``ner``, ``wnut``: every word ``O`` (entity F1 0; :func:`surface_bounds` finds some);
    - ``dp``: every word's head is its left (or right) neighbour, the side chosen on train (UAS with punctuation;
      the first / last word attaches to the root).

    Returns:
        ``task, bound, score`` (percent), one row per task of ``tasks`` (default ``settings.tasks``).
    """
    rows = []
    for task in settings.tasks if tasks is None else tasks:
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
    return pd.DataFrame(rows, columns=["task", "bound", "score"])


def capitalisation_tags(words: Sequence[str], entity_type: str) -> list[str]:
    """BIO tags of the capitalisation rule: every word not at the sentence start whose first character is an
    upper-case letter is part of an entity of ``entity_type`` (e.g. ``"LOC"``); a run of such words is one entity.
    Model-free; reads the surface form only.

    Returns:
        One tag per word (``"O"``, ``"B-<type>"``, ``"I-<type>"``).
    """
    tags, inside = [], False
    for i, word in enumerate(words):
        capitalised = i > 0 and word[:1].isupper()
        tags.append(("I-" if inside else "B-") + entity_type if capitalised else "O")
        inside = capitalised
    return tags


def capitalisation_bound(train: Sequence[Any], test: Sequence[Any]) -> dict[str, Any]:
    """Entity F1 (seqeval, strict BIO) of :func:`capitalisation_tags` on ``test``, every entity given the commonest
    entity type of ``train`` (both :class:`olacore.corpora.NERSentence` records).

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


def surface_bounds(settings: TransferSettings) -> pd.DataFrame:
    """The capitalisation bound (:func:`capitalisation_bound`) of each entity task of ``settings.tasks`` on its test
    split: what the surface form gives away, which the adapter never sees.

    Returns:
        ``task, bound, score`` (entity F1, %), ``precision, recall`` (%), one row per task.
    """
    rows = []
    for task in [t for t in settings.tasks if t in ENTITY_TASKS]:
        splits = task_splits(task, settings)
        b = capitalisation_bound(splits["train"], splits["test"])
        rows.append({"task": task, "bound": f"capitalised word not at sentence start = {b['type']}",
                     "score": b["f1"], "precision": b["precision"], "recall": b["recall"]})
    return pd.DataFrame(rows, columns=["task", "bound", "score", "precision", "recall"])


def surface_margins(adapters: Mapping[tuple[str, str, int], TrainedAdapter],
                    data: Mapping[str, Mapping[str, Mapping[str, TaskData]]], settings: TransferSettings
                    ) -> pd.DataFrame:
    """Each entity task's target-trained adapters against the capitalisation rule on the very words they are
    scored on (those before the length cut), with a standard error over test sentences.

    ``se``: the standard deviation of the F1 difference over 2,000 paired bootstrap resamples of the test
    sentences (seed 0, :func:`olacore.toa.train.paired_bootstrap_se`).

    Returns:
        ``task, kind, model, seed, f1, capitalisation, margin, se`` (percent; points) and ``sentences, entities``;
        one row per diagonal adapter of an entity task.
    """
    rows = []
    for task in [t for t in settings.tasks if t in ENTITY_TASKS]:
        splits = task_splits(task, settings)
        kind_of_entity = capitalisation_bound(splits["train"], splits["test"])["type"]
        words = {s.sent_id: s.words for s in splits["test"]}
        for (cell_task, model, s), adapter in adapters.items():
            test = data[task].get(model, {}).get("test") if cell_task == task else None
            if test is None or not len(test):
                continue
            gold, pred = word_tags(test.items, adapter.predict(test), adapter.vocab)
            rule = [capitalisation_tags(words[item.sent_id][:len(tags)], kind_of_entity)
                    for item, tags in zip(test.items, gold)]
            ours, bound = entity_counts(gold, pred), entity_counts(gold, rule)
            f1, rule_f1 = f1_of_counts(ours.sum(0)), f1_of_counts(bound.sum(0))
            rows.append({"task": task, "kind": "causal" if test.causal else "encoder", "model": model, "seed": s,
                         "f1": float(f1), "capitalisation": float(rule_f1), "margin": float(f1 - rule_f1),
                         "se": paired_bootstrap_se(ours, bound, f1_of_counts),
                         "sentences": len(gold), "entities": int(ours[:, 2].sum())})
    return pd.DataFrame(rows, columns=["task", "kind", "model", "seed", "f1", "capitalisation", "margin", "se",
                                       "sentences", "entities"])


def zero_shot_rows(settings: TransferSettings, *, store=None) -> pd.DataFrame:
    """Zero-shot prompting (:func:`chapter_code.zeroshot.zero_shot`) of ``settings.zero_shot_models`` on the test
    subset the transfer is scored on (answers cached): the paper's only TOA baseline (section 4.4, its RE table).

    Prompted (:data:`PROMPTED`): ``re``, and ``wnut`` asked as ``"ner"``. Not ``dp`` / ``pos`` (the paper prompts for
    neither; the answer is a label per word), nor UNER's ``ner`` (the prompt names WNUT-17's six types).

    Returns:
        :data:`ZERO_SHOT_COLUMNS`: ``score`` (RE accuracy / WNUT entity F1, %), ``macro_f1`` (RE), ``unparseable``
        (counted wrong), ``outside_label_set``, ``majority`` (RE: majority-class accuracy on the same examples);
        empty when nothing is prompted.
    """
    from chapter_code.zeroshot import zero_shot, zero_shot_scores

    rows = []
    for task in [t for t in settings.tasks if t in PROMPTED]:
        examples = task_splits(task, settings)["test"]
        for model in settings.zero_shot_models:
            answers = zero_shot(model, ZERO_SHOT_TASK[task], examples, workers=settings.workers, progress=False,
                                store=store)
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


#: The paper's RE-table model of each family (:func:`olacore.report.paper_family`).
_FAMILY_NAMES = {"L": "Llama-3.2-3B", "Q": "Qwen2-1.5B", "G": "Gemma-2-2B"}


def _paper_name(model: str) -> str | None:
    """The paper's RE-table model of ``model``'s family (zoo names or the paper's own ids), else ``None``."""
    from olacore.report import paper_family

    try:
        return _FAMILY_NAMES[paper_family(model.split("/")[-1])]
    except ValueError:
        return None


def gap_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per off-diagonal ``(task, kind, source, target)``, means over seeds: ``transfer``, ``transfer std``,
    ``target-trained`` and ``source-trained`` (the diagonal scores; NaN where missing), ``gap`` (target-trained minus
    transfer, points) and ``recovered`` (transfer / target-trained, %; NaN where target-trained is 0;
    :func:`verdict_table` masks it further).

    Args:
        rows: the chapter's transfer rows (``task, kind, source, target, seed, score``, percent), diagonal included.

    Raises:
        KeyError: ``rows`` lacks one of those columns.
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


#: A transfer verdict whose bound was not measured (no random-init twin, no zero-shot prompting).
NOT_MEASURED_HERE = "-"


def beats_bound(transfer: float, bound: float, source_learned: bool = True) -> str:
    """A transferred TOA cell against one bound (zero-shot, random init, majority; percent).

    ``"-"`` where the bound is NaN (not measured); else :data:`~olacore.report.NOT_TESTED` where the source adapter
    did not learn (:func:`olacore.report.learned`); else ``"holds"`` when above the bound by more than 1e-6,
    ``"does not hold here"`` otherwise.
    """
    if math.isnan(bound):
        return NOT_MEASURED_HERE
    return better(transfer, bound, margin=1e-6) if source_learned else NOT_TESTED


def verdict_table(gaps: pd.DataFrame, control: pd.DataFrame, bounds: pd.DataFrame,
                  zero_shot: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each off-diagonal cell of :func:`gap_table` beside its bounds, with the computed verdicts (scores in percent).

    Adds ``random init`` and ``transfer, same sentences`` (the adapter on the twin and on the real target, same
    sentences; NaN where no twin ran), ``SE vs random init`` (mean over seeds), ``majority``, ``zero-shot`` (the
    causal target prompted) and ``beats zero-shot`` / ``beats random init`` / ``beats majority``
    (:func:`beats_bound`; not tested where the source's diagonal does not beat the majority).
    ``recovered`` and ``recovered above majority`` ((transfer - majority) / (target-trained - majority), %) are kept
    only where the target-trained score beats the majority.

    Args:
        control: :func:`random_init_rows` (may be empty); bounds: :func:`majority_bounds`; zero_shot:
            :func:`zero_shot_rows` or ``None``.

    Raises:
        KeyError: a frame lacks a column read here.
    """
    out = gaps.copy()
    ri = (control.groupby(["task", "source", "target"])[["score", "transfer", "se"]].mean() if len(control)
          else pd.DataFrame(columns=["score", "transfer", "se"], dtype=float))
    majority = bounds.set_index("task")["score"]
    zs = zero_shot.set_index(["task", "model"])["score"] if zero_shot is not None and len(zero_shot) else {}
    cells = list(zip(out["task"], out["source"], out["target"]))
    out["random init"] = [ri["score"].get(c, np.nan) for c in cells]
    out["transfer, same sentences"] = [ri["transfer"].get(c, np.nan) for c in cells]
    out["SE vs random init"] = [ri["se"].get(c, np.nan) for c in cells]
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
    for column, score, bound in (("beats zero-shot", "transfer", "zero-shot"),
                                 ("beats random init", "transfer, same sentences", "random init"),
                                 ("beats majority", "transfer", "majority")):
        out[column] = [beats_bound(a, b, ok) for a, b, ok in zip(out[score], out[bound], source_learned)]
    return out


def learned_table(rows: pd.DataFrame, bounds: pd.DataFrame) -> pd.DataFrame:
    """Did the target-trained adapter (the matrix diagonal) beat the majority bound by more than
    :data:`olacore.report.LEARNED_TOL` points (:func:`olacore.report.learned`)? A transfer verdict tests OLAS
    only where it did.

    Args:
        rows: the chapter's transfer rows (``task, kind, source, target, diagonal, score``).
        bounds: :func:`majority_bounds`.

    Returns:
        One row per task and kind: ``task, kind, models`` (diagonal cells), ``above majority`` (how many beat the
        bound), ``best target-trained`` and ``majority`` (percent).
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
    from olacore.report import paper_toa_relation_extraction

    src, tgt = _paper_name(source), _paper_name(target)
    published = paper_toa_relation_extraction()
    return [f"toa-re/{src}/{tgt}"] if src in published.index and tgt in published.columns else []


def zero_shot_keys(task: str, model: str) -> list[str]:
    """The report key of our zero-shot prompting score of ``model`` on ``task`` (RE only)."""
    tgt = _paper_name(model)
    return [f"toa-re/zero-shot prompting/{tgt}"] if task == "re" and tgt else []


def re_paper_numbers(rows: pd.DataFrame, zero_shot: pd.DataFrame | None = None) -> pd.DataFrame:
    """Our numbers beside the paper's RE table (section 4.4) for :func:`olacore.report.paper_comparison`: each causal
    RE cell (mean over seeds) and zero-shot RE score, our models standing in for the paper's by family.

    Returns:
        ``subject`` (``"<source> -> <target>"`` or ``"zero-shot, <model>"``), ``value`` (%), ``paper_keys``.
    """
    re_rows = rows[(rows["task"] == "re") & (rows["kind"] == "causal")]
    out = [{"subject": f"{source} -> {target}", "value": float(value), "paper_keys": re_keys(source, target)}
           for (source, target), value in re_rows.groupby(["source", "target"])["score"].mean().items()]
    for _, z in (zero_shot.iterrows() if zero_shot is not None and len(zero_shot) else []):
        out.append({"subject": f"zero-shot, {z['model']}", "value": float(z["score"]),
                    "paper_keys": zero_shot_keys(z["task"], z["model"])})
    return pd.DataFrame(out, columns=["subject", "value", "paper_keys"])


def transfer_heatmaps(rows: pd.DataFrame, tasks: Sequence[str], kinds: Sequence[str] = ("causal", "encoder")):
    """Annotated source x target heatmaps (mean over seeds), a row of panels per task and a column per kind, the
    diagonal (target-trained) cells outlined. Returns the matplotlib ``Figure``."""
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
            image = ax.imshow(m.to_numpy(dtype=float), cmap="viridis", vmin=0, vmax=vmax)
            bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.03)
            bar.ax.tick_params(labelsize=7)
            bar.set_label(f"{METRICS[task]} (%)", fontsize=7)
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

    Causal RE cells and zero-shot RE scores carry the report's keys (:func:`re_keys`, :func:`zero_shot_keys`),
    protocol held-out (checkpoints chosen on dev), chance 100/19 and, for a cell, the verdict that it beats zero-shot
    prompting (the paper's claim). A cell whose ``recovered`` is NaN gets no ``recovered`` record.

    Args:
        rows, verdicts, zero_shot, bounds: the chapter's transfer rows, :func:`verdict_table`, :func:`zero_shot_rows`,
            :func:`majority_bounds` (%).
        note: a sentence attached to the records (profile, sizes).

    Raises:
        ValueError: a key recorded twice or a value that is not finite.
    """
    means = rows.groupby(["task", "kind", "source", "target"], sort=False)["score"].mean()
    # the paper's claim on its RE table: transfer beats zero-shot prompting (:func:`beats_bound`)
    beats = {(v["task"], v["source"], v["target"]): v["beats zero-shot"] for _, v in verdicts.iterrows()
             if v["beats zero-shot"] != NOT_MEASURED_HERE}
    for (task, kind, source, target), value in means.items():
        keys, extra = [], {}
        if task == "re" and kind == "causal":
            keys, extra = re_keys(source, target), dict(chance=100 / 19, protocol=HELD_OUT)
            extra["verdict"] = beats.get((task, source, target), "")
        results.add(f"toa/{task}/{source}->{target}/{METRICS[task]}",
                    f"TOA {task.upper()} {METRICS[task]}, adapter trained on {source}, applied to {target}", value,
                    paper_keys=keys, subject=f"{source} -> {target}", anchor="tbl-toa-matrices", note=note, **extra)
    for _, z in zero_shot.iterrows():
        keys = zero_shot_keys(z["task"], z["model"])
        results.add(f"toa/{z['task']}/zero-shot/{z['model']}", f"zero-shot prompting of {z['model']}, {z['task'].upper()}",
                    z["score"], paper_keys=keys, subject=f"zero-shot, {z['model']}", anchor="tbl-toa-zero-shot",
                    note=f"{z['n']} test examples, {z['unparseable']} unparseable answers counted wrong",
                    **({"chance": 100 / 19, "protocol": HELD_OUT} if z["task"] == "re" else {}))
    for _, b in bounds.iterrows():
        results.add(f"toa/{b['task']}/bound/majority", f"{b['task'].upper()} lower bound: {b['bound']}", b["score"],
                    anchor="tbl-toa-bounds")
    for _, v in verdicts.iterrows():
        if not math.isnan(v["random init"]):
            results.add(f"toa/{v['task']}/{v['source']}->{v['target']}/random-init",
                        f"TOA {v['task'].upper()}, adapter from {v['source']} on random-init {v['target']}",
                        v["random init"], verdict=v["beats random init"], anchor="tbl-toa-verdicts",
                        note=f"against the same adapter on the real {v['target']}'s maps of the same test sentences: "
                             f"{v['transfer, same sentences']:.1f} (paired standard error of the difference "
                             f"{v['SE vs random init']:.1f} points)")
        if math.isnan(v["recovered"]):
            continue
        results.add(f"toa/{v['task']}/{v['source']}->{v['target']}/recovered",
                    f"share of the target-trained {v['task'].upper()} score recovered by transfer from {v['source']} "
                    f"to {v['target']}", v["recovered"], anchor="tbl-toa-verdicts")


def similarity_hits(settings: TransferSettings, results: str | Path | None = None, *, profile: str,
                    workers: int = 1, store=None) -> tuple[pd.DataFrame, str]:
    """Order-1 SSIM retrieval Hits@1 (percent) of every ordered pair of models of one kind (paper section 4.1).

    Per kind, read from chapter 03's kept table (:data:`chapter_code.retrieval.PAIRS_TABLE`, official protocol) in
    ``results`` (default :func:`olacore.results.results_dir`) when saved at ``profile`` and holding every pair of
    the kind; else computed with :func:`olacore.similarity.retrieval_table` on the first ``settings.similarity_texts``
    official-recipe texts (chapter 03's official protocol: maps resized to 50 x 50, sinks cleaned with whole-row
    statistics). Source = gallery, target = queries.

    Returns:
        ``(table, where)``: ``kind, source, target, hits@1`` (empty when no kind has two models) and a sentence
        saying where each kind's numbers come from.

    Raises:
        ValueError: chapter 03's results file is malformed (:func:`olacore.results.load_results`), or a kind is
            computed and EWT train holds fewer than ``settings.similarity_texts`` official-recipe chunks.
    """
    extra = tuple(m for m in settings.extra_encoders if any(m in settings.models_for(t) for t in settings.tasks))
    kinds = [(k, n) for k, n in (("causal", settings.causal), ("encoder", settings.encoders + extra)) if len(n) >= 2]
    columns = ["kind", "source", "target", "hits@1"]
    if not kinds:
        return pd.DataFrame(columns=columns), "no similarity: no kind has two models (a pair is needed)"
    saved, skipped = _saved_hits(results, profile)
    frames, where, missing = [], [], []
    for kind, names in kinds:
        rows = saved[saved["kind"].eq(kind) & saved["source"].isin(names) & saved["target"].isin(names)]
        if set(zip(rows["source"], rows["target"])) == set(itertools.permutations(names, 2)):
            frames.append(rows)
            where.append(f"{kind}: chapter 03's saved results (03_retrieval.json)")
        else:
            missing.append((kind, names))
    if missing:
        from olacore.maps import make_maps
        from olacore.pipeline import token_maps
        from olacore.similarity import retrieval_table
        from olacore.texts import similarity_texts

        texts = [t.text for t in similarity_texts(settings.similarity_texts)]
        for kind, names in missing:
            maps = {n: make_maps(token_maps(n, texts, ("order1",), workers=workers, progress=False, store=store),
                                 align="resize", sinks="clean", size=50, sink_stats="row") for n in names}
            table = retrieval_table(maps, ks=(1,))
            frames.append(table.assign(kind=kind, **{"hits@1": 100 * table["hits@1"]}))
            where.append(f"{kind}: computed here ({len(texts)} official-recipe EWT texts, order-1 OLA resized to "
                         "50 x 50, sinks cleaned with whole-row statistics)")
    return pd.concat(frames, ignore_index=True)[columns], "; ".join(where) + skipped


def _saved_hits(folder: str | Path | None, profile: str) -> tuple[pd.DataFrame, str]:
    """Chapter 03's order-1 Hits@1 (%) of the official protocol when saved at ``profile`` (``kind, source, target,
    hits@1``; empty when it was not), and a note when the file was saved at another profile."""
    from olacore.results import OFFICIAL, load_results
    from chapter_code.retrieval import PAIRS_COLUMNS, PAIRS_TABLE

    columns = ["kind", "source", "target", "hits@1"]
    none = pd.DataFrame(columns=columns)
    try:
        chapter = load_results("03_retrieval", folder)
    except FileNotFoundError:
        return none, ""
    if chapter.profile != profile:
        return none, (f" (03_retrieval.json was recorded at profile {chapter.profile!r}, this chapter runs at "
                      f"{profile!r}: not used)")
    rows = chapter.tables.get(PAIRS_TABLE, [])
    lacking = sorted({c for row in rows for c in PAIRS_COLUMNS if c not in row})
    if lacking:
        raise ValueError(f"03_retrieval.json: its table {PAIRS_TABLE!r} lacks the columns {lacking}; execute chapter "
                         "03 again (python scripts/execute_notebooks.py --force notebooks/03_retrieval.py)")
    table = pd.DataFrame(rows, columns=list(PAIRS_COLUMNS))
    table = table[table["channel"].eq("order1") & table["protocol"].eq(OFFICIAL)]
    return table[columns].astype({"hits@1": float}), ""


def similarity_vs_transfer(gaps: pd.DataFrame, hits: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Transfer beside Hits@1 for every off-diagonal pair, and Spearman's rho over the pairs: per task of the
    transfer score, pooled over tasks of the share recovered (scores of different tasks are not comparable).

    Returns:
        ``(pairs, spearman)``: the gap rows with ``hits@1``; ``over, value, rho, p, pairs`` (rho NaN when a side is
        constant or fewer than 3 pairs).
    """
    from scipy.stats import spearmanr

    table = gaps.merge(hits, on=["kind", "source", "target"], how="left")
    rows = []
    groups = [(f"{task} ({METRICS[task]})", g, "transfer") for task, g in table.groupby("task", sort=False)]
    groups.append(("every task", table, "recovered"))
    for over, group, value in groups:
        group = group.dropna(subset=["hits@1", value])
        rho = p = np.nan
        if len(group) >= 3 and group["hits@1"].nunique() > 1 and group[value].nunique() > 1:
            rho, p = spearmanr(group["hits@1"], group[value])
        rows.append({"over": over, "value": value, "rho": float(rho), "p": float(p), "pairs": len(group)})
    return table, pd.DataFrame(rows)


#: A number that could not be computed, as Python formats it ("nan", "inf", "-inf").
_UNDEFINED = re.compile(r"(?<![\w.])[-+]?(nan|inf)(?![\w])", re.IGNORECASE)
UNDEFINED_FINDING = "- One finding could not be computed at this profile: a number it needs is missing or undefined."


def findings_markdown(lines: Sequence[str], none: str) -> str:
    """A chapter's findings (MyST lines) joined, a line holding ``nan`` or ``inf`` replaced by
    :data:`UNDEFINED_FINDING`; ``none`` when there is no line."""
    kept = [UNDEFINED_FINDING if _UNDEFINED.search(line) else line for line in lines if line.strip()]
    return "\n".join(kept) if kept else none


def show_findings(label: str, lines: Sequence[str], none: str) -> None:
    """Show a chapter's findings (:func:`findings_markdown`) and glue them under ``label``."""
    from IPython.display import Markdown
    from myst_nb import glue

    glue(label, Markdown(findings_markdown(lines, none)), display=True)
