"""Experiment-level TOA functions for the syntax and transfer chapters: data, grids, tidy tables.

A notebook cell calls a few of these:

>>> settings = toa_settings("default")                                    # doctest: +SKIP
>>> splits = syntax_splits(settings)
>>> data = syntax_datasets(settings, splits, workers=cpu_workers())       # every data set, maps cached
>>> screens = {m: layer_screen(data[m]["dev"]) for m in settings.layer_models}  # raw layers, on dev
>>> cells = settings.cells() + layer_cells(screens, settings.seeds[0])    # the best one gets an adapter
>>> table, adapters = syntax_grid(data, settings, cells)                   # trained once, cached
>>> summary(table); distance_gaps(table); order_comparison(table)

Every adapter is trained through :func:`olacore.toa.train.train_adapters` (cached in the
store, missing ones in one single-threaded worker process per core), its checkpoint chosen
on dev, and test scored once here. Transfer to other models is in
:func:`olacore.toa.transfer.transfer_rows` (the adapter never sees the target in training).
Readings of the grid (verdicts, the causal-map analysis, the paper's table beside ours) are in
:mod:`olacore.toa.analysis`.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from olacore.settings import cpu_workers
from olacore.store import TensorStore
from olacore.toa.analysis import distance_gaps, layer_cells, layer_screen, order_comparison, summary
from olacore.toa.config import ToaSettings, input_spec
from olacore.toa.inputs import InputSpec
from olacore.toa.tasks import TaskData, build_task_data
from olacore.toa.train import TrainedAdapter, make_job, train_adapters

__all__ = [
    "syntax_splits",
    "subset_splits",
    "syntax_data",
    "syntax_datasets",
    "random_init_model",
    "evaluate_cached",
    "layer_screen",
    "layer_cells",
    "syntax_grid",
    "summary",
    "distance_gaps",
    "order_comparison",
    "pos_scores",
    "pos_table",
    "SCORE_COLUMNS",
    "SOURCES",
]

SCORE_COLUMNS = ("uas", "las", "uas_nopunct", "las_nopunct")
#: Channel sources :func:`syntax_data` can attach (:mod:`olacore.channels`).
SOURCES = ("ola", "alti", "attention")


def syntax_splits(settings: ToaSettings) -> dict[str, list[Any]]:
    """The EWT sentences of the syntax chapter (:func:`olacore.ud.ewt_splits`): ``train``,
    ``dev``, ``test`` and, with ``settings.long_sentences``, ``test_long`` (> 30 words)."""
    from olacore.ud import ewt_splits

    splits = ewt_splits(settings.num_train, settings.num_dev, settings.num_test)
    if not settings.long_sentences:
        splits.pop("test_long", None)
    return splits


def subset_splits(splits: Mapping[str, Sequence[Any]], num_train: int | None = None, num_dev: int | None = None,
                  num_test: int | None = None) -> dict[str, list[Any]]:
    """Smaller splits drawn from the chapter's: the first ``num_train`` / ``num_dev`` sentences
    of train / dev, and ``num_test`` test sentences spread evenly over the chapter's test
    (which is itself spread over EWT's genres). ``None`` keeps a split whole; ``test_long`` is
    dropped when a split is cut.

    Raises:
        ValueError: a size that is not a positive int, or a split without ``train``, ``dev``, ``test``.
    """
    for name in ("train", "dev", "test"):
        if name not in splits:
            raise ValueError(f"splits need train, dev and test; got {list(splits)}")
    for value in (num_train, num_dev, num_test):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise ValueError(f"subset sizes must be positive ints or None; got {value!r}")
    test = list(splits["test"])
    if num_test is not None and num_test < len(test):
        test = [test[i] for i in sorted(set(np.linspace(0, len(test) - 1, num_test).round().astype(int).tolist()))]
    out = {"train": list(splits["train"])[:num_train], "dev": list(splits["dev"])[:num_dev], "test": test}
    if "test_long" in splits and num_train is None and num_dev is None and num_test is None:
        out["test_long"] = list(splits["test_long"])
    return out


def _source_records(model: Any, texts: list[str], source: str, causal: bool, **settings: Any) -> list[Any]:
    if source == "alti":
        from olacore.alti import cached_alti

        return cached_alti(model, texts, **settings)
    from olacore.pipeline import cached_attention

    return cached_attention(model, texts, **settings)  # Extractions: the "attention" source records


def syntax_data(model: Any, splits: Mapping[str, Sequence[Any]], settings: ToaSettings, *, task: str = "dp",
                sources: Sequence[str] = ("ola",), max_order: int = 3, workers: int = 1, device: str | None = None,
                progress: bool = False, store: TensorStore | None = None) -> dict[str, TaskData]:
    """Task data of every split for one model, its maps computed once (cached) for all of them.

    Args:
        model: zoo name, id / folder, or :class:`olacore.loading.LoadedModel` (a control).
        splits: ``{"train": [...], "dev": [...], "test": [...], ...}`` of word-level sources
            (:func:`olacore.ud.ewt_splits` for EWT).
        settings: the length cut (``max_tokens``) and the ``grid``.
        task: ``"dp"`` (default), ``"dp-universal"``, ``"pos"``, ``"upos"``.
        sources: channel sources to attach (:data:`SOURCES`): ``"ola"`` (always: orders
            ``0..max_order`` and the rollout, :func:`olacore.pipeline.cached_ola`), ``"alti"``
            (:func:`olacore.alti.cached_alti`, for the ``"ALTI"`` input), ``"attention"``
            (:func:`olacore.pipeline.cached_attention`, for ``"layer <n>"`` inputs).
        max_order: OLA orders to compute (3: the syntax grid needs order 3).
        workers: extraction processes on a miss (one single-threaded process per core:
            :func:`olacore.settings.cpu_workers`; a :class:`LoadedModel` runs in-process).
        device, progress, store: passed to the cached extraction on a miss.

    Returns:
        ``{split: TaskData}``; each report counts unaligned sentences and what the cut lost;
        ``TaskData.sources`` holds the ``"alti"`` / ``"attention"`` records of its items.

    Raises:
        ValueError: an unknown source.
    """
    from olacore.pipeline import cached_ola

    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise ValueError(f"unknown map sources {unknown}; choose from {SOURCES}")
    unique = list({s.text: s for split in splits.values() for s in split}.values())
    texts = [s.text for s in unique]
    options = dict(workers=workers, device=device, progress=progress, store=store)
    records = cached_ola(model, texts, max_order, **options)
    by_text = dict(zip(texts, records))
    causal = bool(records[0].is_causal) if records else False
    extra = {source: dict(zip(texts, _source_records(model, texts, source, causal, **options)))
             for source in dict.fromkeys(sources) if source != "ola"}
    out = {}
    for name, split in splits.items():
        data = build_task_data(task, model, split, name, max_tokens=settings.max_tokens, grid=settings.grid,
                               records=[by_text[s.text] for s in split])
        data.sources = {source: [found[item.text] for item in data.items] for source, found in extra.items()}
        out[name] = data
    return out


def random_init_model(name: str, seed: int = 0, device: str | None = None):
    """The model ``name`` with freshly initialised weights (:func:`olacore.controls.random_init`)."""
    from olacore.controls import random_init
    from olacore.loading import load_model

    return random_init(load_model(name, device=device), seed=seed)


def syntax_datasets(settings: ToaSettings, splits: Mapping[str, Sequence[Any]], *, workers: int | None = None,
                    device: str | None = None, progress: bool = False, store: TensorStore | None = None,
                    ) -> dict[str, dict[str, TaskData]]:
    """Every data set of ``settings.datasets()``: ``{name: {split: TaskData}}`` (maps cached).

    A data set's splits are :func:`subset_splits` of ``splits`` at its sizes; its model is the
    zoo model or, for a random-init data set, its twin (:func:`random_init_model`, seed 0,
    extracted in this process). Texts shared between data sets are extracted once.

    Args:
        settings: the profile's settings.
        splits: the chapter's splits (:func:`syntax_splits`).
        workers: extraction processes (default one per core on a CPU).
        device, progress, store: as for :func:`syntax_data`.
    """
    workers = workers or cpu_workers(device)
    out = {}
    twins: dict[str, Any] = {}
    for name, dataset in settings.datasets().items():
        model: Any = dataset.model
        if dataset.random_init:
            model = twins.setdefault(dataset.model, random_init_model(dataset.model, device=device))
        chosen = subset_splits(splits, dataset.num_train, dataset.num_dev, dataset.num_test)
        out[name] = syntax_data(model, chosen, settings, sources=dataset.sources, workers=workers, device=device,
                                progress=progress, store=store)
    return out


# Bump when scoring changes: every stored score is then recomputed.
EVALUATION_VERSION = 1


def evaluate_cached(adapter: TrainedAdapter, data: TaskData, store: TensorStore | None = None) -> dict[str, Any]:
    """:meth:`TrainedAdapter.evaluate`, its scores kept in the store (a warm chapter re-scores nothing).

    The key holds the adapter's key, a sha256 of the data's items and of its raw maps for the
    adapter's input, and :data:`EVALUATION_VERSION`. An adapter without a key (not from
    :func:`olacore.toa.train.train_adapters`) is scored without the store.
    """
    from olacore.store import tensor_digest

    if adapter.key is None:
        return adapter.evaluate(data)
    store = store if store is not None else TensorStore()
    maps = hashlib.sha256("".join(tensor_digest(m) for m in data.raw(adapter.spec)).encode()).hexdigest()
    key = TensorStore.key(kind="toa-evaluation", version=EVALUATION_VERSION, adapter=adapter.key, items=data.digest(),
                          maps=maps)
    stored = store.get(key)
    if stored is not None:
        return stored[1]
    scores = adapter.evaluate(data)
    store.put_or_warn(key, {"none": torch.zeros(0)}, scores)
    return scores


def _kind(data: Mapping[str, TaskData]) -> str:
    return "causal" if next(iter(data.values())).causal else "encoder"


def syntax_grid(data: Mapping[str, Mapping[str, TaskData]], settings: ToaSettings,
                cells: Sequence[tuple[str, str, int]] | None = None, *, workers: int | None = None,
                store: TensorStore | None = None, progress: bool = True
                ) -> tuple[pd.DataFrame, dict[tuple[str, str, int], TrainedAdapter]]:
    """Train (or read back) one adapter per cell and score it on test: the syntax table.

    Args:
        data: ``data[name][split]`` from :func:`syntax_datasets` or :func:`syntax_data` (splits
            ``train``, ``dev``, ``test`` and optionally ``test_long``).
        settings: adapter, training, seeds.
        cells: ``(data set, input name, seed)`` to run (default :meth:`ToaSettings.cells`).
            Input names: keys of :data:`olacore.toa.config.SYNTAX_GRID` or ``"layer <n>"``
            (:func:`olacore.toa.config.input_spec`).
        workers: training processes (default ``settings.workers`` or one per core).
        store: where adapters are kept (default ``$OLACORE_CACHE/tensors``).
        progress: a bar over the adapters being trained.

    Returns:
        ``(table, adapters)``: one row per cell with ``model`` (the data set's name),
        ``kind``, ``input``, ``seed``, ``train`` (training sentences), ``epoch`` (chosen on
        dev), ``dev_uas``, ``dev_las``, the test ``uas``, ``las``, ``uas_nopunct``,
        ``las_nopunct`` (percent; with punctuation as the paper), ``long_uas`` and
        ``long_las`` (when ``test_long`` is given), ``train_seconds``,
        ``sentences_per_second`` (training, forward + backward) and ``words`` (test words
        scored); and the trained adapters by cell.

    Raises:
        KeyError: a cell names a data set that is not in ``data`` or an unknown input.
    """
    cells = settings.cells() if cells is None else list(cells)
    jobs = []
    for model, name, seed in cells:
        if model not in data:
            raise KeyError(f"no data set {model!r}; have {list(data)}")
        splits = data[model]
        jobs.append(make_job(splits["train"], splits["dev"], input_spec(name), settings.adapter, settings.training,
                             seed=seed, model=model, input=name))
    workers = workers or settings.workers or cpu_workers(settings.training.device)
    adapters = train_adapters(jobs, workers=workers, store=store, progress=progress)
    rows, by_cell = [], {}
    for (model, name, seed), adapter in zip(cells, adapters):
        splits = data[model]
        test = evaluate_cached(adapter, splits["test"], store)
        row = {"model": model, "kind": _kind(splits), "input": name, "seed": seed, "train": len(splits["train"]),
               "epoch": adapter.record["best_epoch"], "dev_uas": adapter.record["dev"]["uas"],
               "dev_las": adapter.record["dev"]["las"], **{k: test[k] for k in SCORE_COLUMNS}}
        if "test_long" in splits and len(splits["test_long"]):
            long = evaluate_cached(adapter, splits["test_long"], store)
            row.update(long_uas=long["uas"], long_las=long["las"])
        row.update(train_seconds=adapter.record["train_seconds"],
                   sentences_per_second=adapter.record["sentences_per_second"], words=test["words"])
        rows.append(row)
        by_cell[(model, name, seed)] = adapter
    return pd.DataFrame(rows), by_cell


def pos_scores(data: Mapping[str, TaskData], settings: ToaSettings, spec: InputSpec | None = None, seed: int = 0, *,
               workers: int = 1, store: TensorStore | None = None, **labels: Any) -> tuple[dict[str, Any], TrainedAdapter]:
    """Train (cached) a POS adapter on ``data["train"]``, select on dev, score test: one row.

    Args:
        data: ``{split: TaskData}`` of a ``pos`` / ``upos`` task (:func:`syntax_data` with ``task="pos"``).
        settings: adapter and training.
        spec: input (default: the official order 1+2, raw and clean).
        seed: the training seed.
        workers, store: as :func:`olacore.toa.train.train_adapters`.
        **labels: extra row columns.

    Returns:
        ``(row, adapter)``; the row holds ``accuracy`` (per word), ``subtoken_accuracy``,
        ``dev_accuracy``, ``epoch``, ``train_seconds``.
    """
    spec = spec or input_spec("order 1+2")
    job = make_job(data["train"], data["dev"], spec, settings.adapter, settings.training, seed=seed, **labels)
    adapter = train_adapters([job], workers=workers, store=store, progress=False)[0]
    test = evaluate_cached(adapter, data["test"], store)
    row = {**labels, "task": data["train"].task, "input": spec.label, "seed": seed, "epoch": adapter.record["best_epoch"],
           "dev_accuracy": adapter.record["dev"]["accuracy"], "accuracy": test["accuracy"],
           "subtoken_accuracy": test["subtoken_accuracy"], "unknown_labels": test["unknown_labels"],
           "train_seconds": adapter.record["train_seconds"]}
    return row, adapter


def pos_table(data: Mapping[str, Mapping[str, TaskData]], settings: ToaSettings, spec: InputSpec | None = None,
              seed: int = 0, *, workers: int | None = None, store: TensorStore | None = None
              ) -> tuple[pd.DataFrame, dict[str, TrainedAdapter]]:
    """:func:`pos_scores` for several models at once, their adapters trained side by side.

    Args:
        data: ``{model: {split: TaskData}}`` of a ``pos`` / ``upos`` task.
        settings, spec, seed, store: as :func:`pos_scores`.
        workers: training processes (default ``settings.workers`` or one per core).

    Returns:
        ``(table, adapters)``: one :func:`pos_scores` row per model (column ``model``).
    """
    spec = spec or input_spec("order 1+2")
    jobs = [make_job(d["train"], d["dev"], spec, settings.adapter, settings.training, seed=seed, model=m)
            for m, d in data.items()]
    workers = workers or settings.workers or cpu_workers(settings.training.device)
    train_adapters(jobs, workers=workers, store=store, progress=False)  # all missing ones at once; read back below
    rows, adapters = [], {}
    for model, splits in data.items():
        row, adapters[model] = pos_scores(splits, settings, spec, seed, store=store, model=model)
        rows.append(row)
    return pd.DataFrame(rows), adapters
