"""The syntax chapter's data: EWT splits, every data set's task data, maps extracted once and cached.

>>> settings = olacore.profiles.settings("syntax", "default")                                    # doctest: +SKIP
>>> splits = syntax_splits(settings)
>>> data = syntax_datasets(settings, splits, workers=cpu_workers())       # every data set, maps cached

The chapter then trains one adapter per cell with :func:`olacore.toa.train.make_job` and
:func:`olacore.toa.train.train_adapters` in a visible loop and scores test once; the transfer
chapter reuses :func:`syntax_data` for every task (:mod:`olacore.toa.transfer`). Readings of the
grid (verdicts, the causal-map analysis) are in :mod:`olacore.toa.analysis`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from olacore.profiles import SyntaxSettings
from olacore.settings import cpu_workers
from olacore.store import TensorStore
from olacore.toa.data import TaskData, build_task_data

__all__ = ["syntax_splits", "subset_splits", "syntax_data", "syntax_datasets", "SCORE_COLUMNS", "SOURCES"]

SCORE_COLUMNS = ("uas", "las", "uas_nopunct", "las_nopunct")
#: Channel sources :func:`syntax_data` can attach (:mod:`olacore.channels`).
SOURCES = ("ola", "alti", "attention")


def syntax_splits(settings: SyntaxSettings) -> dict[str, list[Any]]:
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


def _source_records(model: Any, texts: list[str], source: str, **settings: Any) -> list[Any]:
    if source == "alti":
        from olacore.alti import cached_alti

        return cached_alti(model, texts, **settings)
    from olacore.pipeline import cached_attention

    return cached_attention(model, texts, **settings)  # Extractions: the "attention" source records


def syntax_data(model: Any, splits: Mapping[str, Sequence[Any]], settings: SyntaxSettings, *, task: str = "dp",
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
    extra = {source: dict(zip(texts, _source_records(model, texts, source, **options)))
             for source in dict.fromkeys(sources) if source != "ola"}
    out = {}
    for name, split in splits.items():
        data = build_task_data(task, model, split, name, max_tokens=settings.max_tokens, grid=settings.grid,
                               records=[by_text[s.text] for s in split])
        data.sources = {source: [found[item.text] for item in data.items] for source, found in extra.items()}
        out[name] = data
    return out


def syntax_datasets(settings: SyntaxSettings, splits: Mapping[str, Sequence[Any]], *, workers: int | None = None,
                    device: str | None = None, progress: bool = False, store: TensorStore | None = None,
                    ) -> dict[str, dict[str, TaskData]]:
    """Every data set of ``settings.datasets()``: ``{name: {split: TaskData}}`` (maps cached).

    A data set's splits are :func:`subset_splits` of ``splits`` at its sizes; its model is the
    zoo model or, for a random-init data set, its twin (:func:`olacore.controls.random_init`, seed 0,
    extracted in this process). Texts shared between data sets are extracted once.

    Args:
        settings: the profile's settings.
        splits: the chapter's splits (:func:`syntax_splits`).
        workers: extraction processes (default one per core on a CPU).
        device, progress, store: as for :func:`syntax_data`.
    """
    from olacore.controls import random_init
    from olacore.loading import load_model

    workers = workers or cpu_workers(device)
    out = {}
    twins: dict[str, Any] = {}
    for name, dataset in settings.datasets().items():
        model: Any = dataset.model
        if dataset.random_init:
            model = twins.setdefault(dataset.model, random_init(load_model(dataset.model, device=device), seed=0))
        chosen = subset_splits(splits, dataset.num_train, dataset.num_dev, dataset.num_test)
        out[name] = syntax_data(model, chosen, settings, sources=dataset.sources, workers=workers, device=device,
                                progress=progress, store=store)
    return out
