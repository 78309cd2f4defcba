"""Official-protocol proxy runs kept in the store and spread over worker processes (chapter 03's tables)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from olacore.augment import VISUAL_PROXY, Augmentation
from olacore.proxy.experiment import channel_set_label
from olacore.proxy.official import (
    OfficialQuirks,
    OfficialRun,
    family_splits,
    reported_accuracy,
    train_official,
)
from olacore.proxy.train import ProxyConfig
from olacore.settings import resolve_device
from olacore.store import TensorStore, tensor_digest
from olacore.training import by_value, run_cached

if TYPE_CHECKING:  # pragma: no cover
    from olacore.pipeline import TokenMaps

__all__ = ["OfficialProxyJob", "official_proxy_experiment", "OFFICIAL_VERSION"]

# Bump when train_official gives other results for the same inputs: every cached run is then ignored.
OFFICIAL_VERSION = 2


@dataclass
class OfficialProxyJob:
    """One official-protocol run (a :class:`olacore.training.TrainingJob`); maps travel as numpy arrays.

    Attributes:
        sources, targets: per model, one raw token-level ``(C, T_i, T_i)`` array per text.
        causal: the maps come from causal models.
        config, quirks, size, augment, seed: as :func:`olacore.proxy.official.train_official`
            (the key holds only the quirks that change training,
            :meth:`olacore.proxy.official.OfficialQuirks.for_training`, less ``family_split``,
            which acts through the sources and targets the key holds already).
        device: device type to train on.
    """

    sources: list[list[np.ndarray]]
    targets: list[list[np.ndarray]]
    causal: bool
    config: ProxyConfig
    quirks: OfficialQuirks
    size: int
    augment: Augmentation
    seed: int
    device: str

    def key(self) -> str:
        digests = lambda models: [[tensor_digest(m) for m in model] for model in models]  # noqa: E731
        return TensorStore.key(
            kind="official-proxy-run", official_version=OFFICIAL_VERSION, sources=digests(self.sources),
            targets=digests(self.targets), causal=self.causal, config=dataclasses.asdict(self.config),
            quirks=dataclasses.asdict(dataclasses.replace(self.quirks.for_training(), family_split=True)),
            size=self.size, augment=dataclasses.asdict(self.augment),
            seed=self.seed, device=self.device,
        )

    def train(self):
        tensors = lambda models: [[torch.as_tensor(m) for m in model] for model in models]  # noqa: E731
        run = train_official(tensors(self.sources), tensors(self.targets), self.causal, self.config,
                             self.quirks.for_training(), size=self.size, augment=self.augment, seed=self.seed,
                             device=self.device, progress=False)
        record = {"seed": run.seed, "history": run.history}
        return {"test_acc": torch.tensor([h["test_acc"] for h in run.history])}, record

    def rebuild(self, record: dict[str, Any]) -> OfficialRun:
        """The :class:`OfficialRun` of a stored record, read out by this job's quirks."""
        reported, step = reported_accuracy(record["history"], self.quirks)
        return OfficialRun(seed=record["seed"], history=record["history"], reported=reported, best_step=step,
                           quirks=self.quirks)


def _arrays(items: Sequence["TokenMaps"], channels: Sequence[str]) -> list[np.ndarray]:
    picks = [items[0].channels.index(c) for c in channels]
    return by_value([item.maps[picks].float() for item in items])


def official_proxy_experiment(
    token_maps: Mapping[str, Sequence["TokenMaps"]],
    channels: Sequence[str],
    config: ProxyConfig,
    seeds: Sequence[int],
    variants: Mapping[str, OfficialQuirks],
    *,
    size: int = 50,
    families: Mapping[str, str] | None = None,
    augment: Augmentation = VISUAL_PROXY,
    device: str | torch.device | None = None,
    workers: int = 1,
    progress: bool = True,
    store: TensorStore | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Every variant, split and seed of the official proxy protocol, cached (chapter 03).

    Args:
        token_maps: model name -> its token-level maps (:func:`olacore.pipeline.token_maps`) of the
            same texts (text ``i`` is class ``i``), all causal or all bidirectional.
        channels: the channels the network sees (e.g. ``("order1",)``).
        config: :class:`olacore.proxy.ProxyConfig` (its ``augment`` is not used).
        seeds: one run per seed, split and variant.
        variants: label -> :class:`OfficialQuirks` (e.g. ``{"official": OfficialQuirks(), ...}``).
        size: side of the resized maps.
        families: model name -> family for the official split (default: each model its own).
        augment: the official augmentation (:data:`olacore.augment.VISUAL_PROXY`).
        device: training device.
        workers: processes training at once.
        progress: a tqdm bar over the runs being trained.
        store: where runs are kept (default: ``$OLACORE_CACHE/tensors``).

    Returns:
        ``(runs, histories)``: one row per run (``variant, channels, sources, target, seed,
        reported, best_step, last_acc, mean_acc, train_acc, evaluations``; accuracies as
        fractions, read from the evaluations the variant's quirks pick; ``train_acc``: on the
        clean source maps at the last evaluation) and a dict ``(variant, target, seed) ->
        history`` (``target``: the target models joined by " + "). Variants that differ only in
        read-out quirks share their training runs.

    Raises:
        ValueError: models of both kinds, a channel the maps lack, or as
            :func:`olacore.proxy.official.train_official`.
    """
    names = list(token_maps)
    kinds = {items[0].causal for items in token_maps.values()}
    if len(kinds) != 1:
        raise ValueError("the official protocol never mixes causal models and encoders; give one kind")
    missing = [c for c in channels if c not in token_maps[names[0]][0].channels]
    if missing:
        raise ValueError(f"the token maps lack channels {missing}; they hold {token_maps[names[0]][0].channels}")
    causal = kinds.pop()
    arrays = {name: _arrays(items, channels) for name, items in token_maps.items()}
    device_type = resolve_device(device).type
    labels, jobs = [], []
    for variant, quirks in variants.items():
        for sources, targets in family_splits(names, families, by_family=quirks.family_split):
            for seed in seeds:
                labels.append((variant, sources, targets, seed))
                jobs.append(OfficialProxyJob([arrays[s] for s in sources], [arrays[t] for t in targets], causal,
                                             config, quirks, size, augment, seed, device_type))
    results = run_cached(jobs, workers=workers, store=store, progress=progress, desc="official proxy runs")
    rows, histories = [], {}
    for job, (variant, sources, targets, seed), (_, record) in zip(jobs, labels, results):
        run = job.rebuild(record)
        accs = [h["test_acc" if job.quirks.reaugment_targets else "test_acc_clean"] for h in record["history"]]
        target = " + ".join(targets)
        rows.append({"variant": variant, "channels": channel_set_label(channels), "sources": " + ".join(sources),
                     "target": target, "seed": seed, "reported": run.reported, "best_step": run.best_step,
                     "last_acc": accs[-1], "mean_acc": float(np.mean(accs)),
                     "train_acc": record["history"][-1]["train_acc"], "evaluations": len(accs)})
        histories[(variant, target, seed)] = record["history"]
    return pd.DataFrame(rows), histories
