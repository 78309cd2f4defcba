"""Experiment-level TOA functions for the syntax and transfer chapters: data, grids, tidy tables.

A notebook cell calls a few of these:

>>> settings = toa_settings("default")                                    # doctest: +SKIP
>>> splits = syntax_splits(settings)
>>> data = {m: syntax_data(m, splits, settings) for m in settings.models}
>>> data["minilm-l6 (random init)"] = syntax_data(random_init_model("minilm-l6"), splits, settings)
>>> table, adapters = syntax_grid(data, settings)                         # trained once, cached
>>> summary(table); distance_gaps(table); order_comparison(table)

Every adapter is trained through :func:`olacore.toa.train.train_adapters` (cached in the
store, missing ones in one single-threaded worker process per core), its checkpoint chosen
on dev, and test scored once here. :func:`transfer_table` scores one trained adapter on the
task data of other models (the next chapter: the adapter never sees the target in training).
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from olacore.settings import cpu_workers
from olacore.store import TensorStore
from olacore.toa.config import SYNTAX_GRID, ToaSettings
from olacore.toa.inputs import InputSpec
from olacore.toa.tasks import TaskData, build_task_data
from olacore.toa.train import TrainedAdapter, make_job, train_adapters

__all__ = [
    "syntax_splits",
    "syntax_data",
    "random_init_model",
    "evaluate_cached",
    "syntax_grid",
    "summary",
    "distance_gaps",
    "order_comparison",
    "pos_scores",
    "transfer_table",
    "SCORE_COLUMNS",
]

SCORE_COLUMNS = ("uas", "las", "uas_nopunct", "las_nopunct")


def syntax_splits(settings: ToaSettings) -> dict[str, list[Any]]:
    """The EWT sentences of the syntax chapter (:func:`olacore.ud.ewt_splits`): ``train``,
    ``dev``, ``test`` and, with ``settings.long_sentences``, ``test_long`` (> 30 words)."""
    from olacore.ud import ewt_splits

    splits = ewt_splits(settings.num_train, settings.num_dev, settings.num_test)
    if not settings.long_sentences:
        splits.pop("test_long", None)
    return splits


def syntax_data(model: Any, splits: Mapping[str, Sequence[Any]], settings: ToaSettings, *, task: str = "dp",
                max_order: int = 3, device: str | None = None, progress: bool = False,
                store: TensorStore | None = None) -> dict[str, TaskData]:
    """Task data of every split for one model, its OLA computed once (cached) for all of them.

    Args:
        model: zoo name, id / folder, or :class:`olacore.loading.LoadedModel` (a control).
        splits: ``{"train": [...], "dev": [...], "test": [...], ...}`` of word-level sources
            (:func:`olacore.ud.ewt_splits` for EWT).
        settings: the length cut (``max_tokens``) and the ``grid``.
        task: ``"dp"`` (default), ``"dp-universal"``, ``"pos"``, ``"upos"``.
        max_order: OLA orders to compute (3: the syntax grid needs order 3).
        device, progress, store: passed to :func:`olacore.pipeline.cached_ola` on a miss.

    Returns:
        ``{split: TaskData}``; each report counts unaligned sentences and what the cut lost.
    """
    from olacore.pipeline import cached_ola

    unique = list({s.text: s for split in splits.values() for s in split}.values())
    records = cached_ola(model, [s.text for s in unique], max_order, device=device, progress=progress, store=store)
    by_text = dict(zip((s.text for s in unique), records))
    return {name: build_task_data(task, model, split, name, max_tokens=settings.max_tokens, grid=settings.grid,
                                  records=[by_text[s.text] for s in split])
            for name, split in splits.items()}


def random_init_model(name: str, seed: int = 0, device: str | None = None):
    """The model ``name`` with freshly initialised weights (:func:`olacore.controls.random_init`)."""
    from olacore.controls import random_init
    from olacore.loading import load_model

    return random_init(load_model(name, device=device), seed=seed)


# Bump when scoring changes: every stored score is then recomputed.
EVALUATION_VERSION = 1


def evaluate_cached(adapter: TrainedAdapter, data: TaskData, store: TensorStore | None = None) -> dict[str, Any]:
    """:meth:`TrainedAdapter.evaluate`, its scores kept in the store (a warm chapter re-scores nothing).

    The key holds the adapter's key, a sha256 of the data's items and of its raw maps for the
    adapter's input, and :data:`EVALUATION_VERSION`. An adapter without a key (not from
    :func:`olacore.toa.train.train_adapters`) is scored without the store.
    """
    import torch

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
        data: ``data[model][split]`` from :func:`syntax_data` (splits ``train``, ``dev``,
            ``test`` and optionally ``test_long``).
        settings: adapter, training, seeds.
        cells: ``(model, input name, seed)`` to run (default :meth:`ToaSettings.cells`, plus
            order 1 for every ``data`` key not in ``settings.models``, e.g. a random-init twin).
            Input names are keys of :data:`olacore.toa.config.SYNTAX_GRID`.
        workers: training processes (default ``settings.workers`` or one per core).
        store: where adapters are kept (default ``$OLACORE_CACHE/tensors``).
        progress: a bar over the adapters being trained.

    Returns:
        ``(table, adapters)``: one row per cell with ``model``, ``kind``, ``input``, ``seed``,
        ``epoch`` (chosen on dev), ``dev_uas``, ``dev_las``, the test ``uas``, ``las``,
        ``uas_nopunct``, ``las_nopunct`` (percent; with punctuation as the paper), ``long_uas``
        and ``long_las`` (when ``test_long`` is given), ``train_seconds``,
        ``sentences_per_second`` (training, forward + backward) and ``words`` (test words
        scored); and the trained adapters by cell.

    Raises:
        KeyError: a cell names a model without data or an unknown input.
    """
    if cells is None:
        cells = settings.cells() + [(m, "order 1", settings.seeds[0]) for m in data if m not in settings.models]
    jobs = []
    for model, name, seed in cells:
        if name not in SYNTAX_GRID:
            raise KeyError(f"unknown input {name!r}; known: {list(SYNTAX_GRID)}")
        splits = data[model]
        jobs.append(make_job(splits["train"], splits["dev"], SYNTAX_GRID[name], settings.adapter, settings.training,
                             seed=seed, model=model, input=name))
    workers = workers or settings.workers or cpu_workers(settings.training.device)
    adapters = train_adapters(jobs, workers=workers, store=store, progress=progress)
    rows, by_cell = [], {}
    for (model, name, seed), adapter in zip(cells, adapters):
        splits = data[model]
        test = evaluate_cached(adapter, splits["test"], store)
        row = {"model": model, "kind": _kind(splits), "input": name, "seed": seed, "epoch": adapter.record["best_epoch"],
               "dev_uas": adapter.record["dev"]["uas"], "dev_las": adapter.record["dev"]["las"],
               **{k: test[k] for k in SCORE_COLUMNS}}
        if "test_long" in splits and len(splits["test_long"]):
            long = evaluate_cached(adapter, splits["test_long"], store)
            row.update(long_uas=long["uas"], long_las=long["las"])
        row.update(train_seconds=adapter.record["train_seconds"],
                   sentences_per_second=adapter.record["sentences_per_second"], words=test["words"])
        rows.append(row)
        by_cell[(model, name, seed)] = adapter
    return pd.DataFrame(rows), by_cell


def summary(table: pd.DataFrame, columns: Sequence[str] = ("uas", "las")) -> pd.DataFrame:
    """Mean, standard deviation (n - 1) and number of seeds of ``columns`` per model and input."""
    grouped = table.groupby(["model", "input"], sort=False)[list(columns)]
    out = grouped.agg(["mean", "std", "count"])
    out.columns = [f"{column}_{stat}" for column, stat in out.columns]
    return out.reset_index()


def distance_gaps(table: pd.DataFrame, seed: int | None = None, column: str = "uas") -> pd.DataFrame:
    """Per model: order-1 and distance-only ``column`` (seed ``seed``, default the first) and their gap.

    Returns:
        columns ``model``, ``order1``, ``distance``, ``gap`` (points; the issue's goal: >= 20).
    """
    seed = table["seed"].min() if seed is None else seed
    picked = table[table["seed"] == seed]
    wide = picked.pivot_table(index="model", columns="input", values=column, sort=False)
    wide = wide[[c for c in ("order 1", "distance") if c in wide.columns]].dropna()
    out = pd.DataFrame({"model": wide.index, "order1": wide["order 1"].to_numpy(), "distance": wide["distance"].to_numpy()})
    out["gap"] = out["order1"] - out["distance"]
    return out.reset_index(drop=True)


def order_comparison(table: pd.DataFrame, reference: str = "order 1", others: Sequence[str] = ("order 3", "rollout"),
                     column: str = "uas") -> pd.DataFrame:
    """Paired differences ``reference - other`` of ``column`` over the seeds both ran, per model.

    Returns:
        columns ``model``, ``other``, ``seeds``, ``mean_diff``, ``std_diff`` (n - 1; NaN for
        one seed), ``min_diff`` and ``all_seeds_better`` (the reference ahead on every seed).
    """
    rows = []
    for model, group in table.groupby("model", sort=False):
        by_seed = group.pivot_table(index="seed", columns="input", values=column)
        for other in others:
            if reference not in by_seed or other not in by_seed:
                continue
            diff = (by_seed[reference] - by_seed[other]).dropna()
            if diff.empty:
                continue
            rows.append({"model": model, "other": other, "seeds": len(diff), "mean_diff": float(diff.mean()),
                         "std_diff": float(diff.std()) if len(diff) > 1 else float("nan"),
                         "min_diff": float(diff.min()), "all_seeds_better": bool((diff > 0).all())})
    return pd.DataFrame(rows)


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
    spec = spec or SYNTAX_GRID["order 1+2"]
    job = make_job(data["train"], data["dev"], spec, settings.adapter, settings.training, seed=seed, **labels)
    adapter = train_adapters([job], workers=workers, store=store, progress=False)[0]
    test = evaluate_cached(adapter, data["test"], store)
    row = {**labels, "task": data["train"].task, "input": spec.label, "seed": seed, "epoch": adapter.record["best_epoch"],
           "dev_accuracy": adapter.record["dev"]["accuracy"], "accuracy": test["accuracy"],
           "subtoken_accuracy": test["subtoken_accuracy"], "unknown_labels": test["unknown_labels"],
           "train_seconds": adapter.record["train_seconds"]}
    return row, adapter


def transfer_table(adapter: TrainedAdapter, targets: Mapping[str, TaskData], **labels: Any) -> pd.DataFrame:
    """Score one trained adapter, unchanged, on the task data of every target model.

    Args:
        adapter: trained on a source model.
        targets: ``{model name: TaskData}`` of the adapter's task (test split), each in its
            own tokenisation; models of the other kind (CLM vs encoder) are refused.
        **labels: extra columns (source model, seed, ...).

    Returns:
        one row per target: the labels, ``target`` and every score of
        :meth:`olacore.toa.train.TrainedAdapter.evaluate`.
    """
    rows = []
    for name, data in targets.items():
        scores = adapter.evaluate(data)
        rows.append({**labels, "target": name, **{k: (float(v) if isinstance(v, (float, np.floating)) else v)
                                                  for k, v in scores.items()}})
    return pd.DataFrame(rows)
