"""Proxy runs kept in the store and spread over worker processes: the chapters' experiments."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from olacore import channels as vocabulary
from olacore.maps import Maps
from olacore.proxy.network import make_resnet18
from olacore.proxy.train import ProxyConfig, ProxyRun, train_proxy
from olacore.settings import resolve_device
from olacore.store import TensorStore, code_digest, tensor_digest
from olacore.training import by_value, run_cached

__all__ = [
    "ProxyJob", "leave_one_out", "channel_set_label", "proxy_experiment", "proxy_summary",
]


@dataclass
class ProxyJob:
    """One proxy run (a :class:`olacore.training.TrainingJob`): ``(N, C, S, S)`` maps travel as numpy arrays."""

    sources: list[np.ndarray]
    target: np.ndarray | None
    config: ProxyConfig
    seed: int
    device: str

    @classmethod
    def of(cls, sources: Sequence[torch.Tensor], target: torch.Tensor | None, config: ProxyConfig, seed: int,
           device: str | torch.device | None = None) -> "ProxyJob":
        """A job from tensors (copied to numpy, by value)."""
        return cls(by_value(sources), None if target is None else by_value([target])[0], config, seed,
                   resolve_device(device).type)

    def key(self) -> str:
        """The store key: the maps' digests, config, seed, device type and the code digest of this module and what
        it imports (network, training loop, augmentation)."""
        return TensorStore.key(
            kind="proxy-run", code=code_digest(__name__), sources=[tensor_digest(m) for m in self.sources],
            target=None if self.target is None else tensor_digest(self.target),
            config=dataclasses.asdict(self.config), seed=self.seed, device=self.device,
        )

    def train(self):
        run = train_proxy([torch.as_tensor(m) for m in self.sources],
                          None if self.target is None else torch.as_tensor(self.target),
                          self.config, seed=self.seed, device=self.device, progress=False)
        weights = {f"model.{name}": t for name, t in run.model.state_dict().items()}
        record = {"seed": run.seed, "history": run.history, "best_step": run.best_step, "val_acc": run.val_acc,
                  "test_acc": run.test_acc, "validation": run.validation}
        return {**weights, "mean": run.mean, "std": run.std}, record

    def rebuild(self, tensors: dict[str, torch.Tensor], record: dict[str, Any]) -> "ProxyRun":
        """The :class:`ProxyRun` of a stored result (network in eval mode on the job's device)."""
        channels, classes = self.sources[0].shape[1], self.sources[0].shape[0]
        model = make_resnet18(channels, classes, self.config.width)
        model.load_state_dict({name[len("model."):]: t for name, t in tensors.items() if name.startswith("model.")})
        return ProxyRun(model=model.to(self.device).eval(), mean=tensors["mean"], std=tensors["std"], **record)


def leave_one_out(names: Sequence[str]) -> list[tuple[list[str], str]]:
    """``(sources, target)`` splits: each model in turn is the target, the others the sources."""
    return [([n for n in names if n != target], target) for target in names]


def channel_set_label(names: Sequence[str]) -> str:
    """Row label of a set of channels: ``("order1", "order2") -> "order 1 + order 2"``."""
    return " + ".join(vocabulary.label(n) for n in names)


def proxy_experiment(
    maps: Mapping[str, Maps],
    splits: Sequence[tuple[Sequence[str], str]],
    channel_sets: Sequence[Sequence[str]],
    config: ProxyConfig,
    seeds: Sequence[int],
    *,
    device: str | torch.device | None = None,
    workers: int = 1,
    progress: bool = True,
    store: TensorStore | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Every split, channel set and seed of the visual proxy (paper section 4.1, Table 1), cached.

    Missing runs train in ``workers`` processes (each run is seeded: its result does not depend on the worker).

    Args:
        maps: model name -> resized :class:`olacore.maps.Maps` holding every channel any set uses.
        splits: ``(source names, target name)`` pairs, e.g. from :func:`leave_one_out`.
        channel_sets: channel names per run, e.g. ``[("order1",), ("order1", "order2")]``.

    Returns:
        ``(runs, histories)``: one row per run (``channels`` (label), ``sources, target, seed, best_step, val_acc,
        test_acc, validation``) and ``(channels label, target, seed) -> history``.

    Raises:
        ValueError: ``workers < 1``, a channel the maps lack, or as :func:`train_proxy`.
    """
    used = {name for sources, target in splits for name in (*sources, target)}
    stacked = {(name, tuple(chans)): maps[name].select(*chans).stack() for name in used for chans in channel_sets}
    labels = [(tuple(chans), sources, target, seed) for sources, target in splits for chans in channel_sets
              for seed in seeds]
    jobs = [ProxyJob.of([stacked[(s, chans)] for s in sources], stacked[(target, chans)], config, seed, device)
            for chans, sources, target, seed in labels]
    results = run_cached(jobs, workers=workers, store=store, progress=progress, desc="proxy runs")
    rows, histories = [], {}
    for (chans, sources, target, seed), (_, record) in zip(labels, results):
        label = channel_set_label(chans)
        rows.append({"channels": label, "sources": " + ".join(sources), "target": target, "seed": seed,
                     "best_step": record["best_step"], "val_acc": record["val_acc"], "test_acc": record["test_acc"],
                     "validation": record["validation"]})
        histories[(label, target, seed)] = record["history"]
    return pd.DataFrame(rows), histories


def mean_std_text(runs: pd.DataFrame, rows: str, value: str, *, sort: bool = True) -> pd.DataFrame:
    """``"mean ± std"`` text of ``value`` over seeds, one row per ``rows`` value and one column per target (the mean
    alone for one seed); ``sort=False`` keeps the targets in the order they appear."""
    stats = runs.groupby([rows, "target"], sort=sort)[value].agg(["mean", "std"])
    text = stats.apply(lambda r: f"{r['mean']:.1f}" if np.isnan(r["std"]) else f"{r['mean']:.1f} ± {r['std']:.1f}",
                       axis=1)
    return text.unstack("target")


def proxy_summary(runs: pd.DataFrame, groups: Mapping[str, Sequence[str]], order: Sequence[str] | None = None) -> pd.DataFrame:
    """Target accuracy (%) per channel set: mean ± std over seeds per target, and the mean per group.

    Per-target columns are ``"mean ± std"`` text (the mean alone for one seed); group means are numbers.

    Args:
        runs: the first result of :func:`proxy_experiment`.
        groups: group label -> target names; one ``"mean over <group> targets"`` column each.
        order: row order (channel-set labels); default as they appear in ``runs``.
    """
    order = list(order) if order is not None else list(dict.fromkeys(runs["channels"]))
    acc = runs.assign(test_acc=100 * runs["test_acc"])
    table = mean_std_text(acc, "channels", "test_acc").reindex(order)
    for group, targets in groups.items():
        chosen = acc[acc["target"].isin(targets)]
        table[f"mean over {group} targets"] = chosen.groupby("channels")["test_acc"].mean().reindex(order).round(1)
    return table
