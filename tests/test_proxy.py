"""The visual proxy (olacore.proxy): the network, the split, and a loop that learns."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torchvision

from olacore.augment import BatchAugmentation
from olacore.maps import Maps
from olacore.proxy import (
    ProxyConfig,
    ProxyJob,
    channel_set_label,
    leave_one_out,
    make_resnet18,
    split_sources,
    train_proxy,
)
from olacore.proxy import shuffled_batches
from olacore.store import TensorStore
from olacore.training import run_cached

from chapter_code.proxy import proxy_summary

NO_AUGMENT = BatchAugmentation(noise_p=0.0, sink_p=0.0)


def test_resnet18_is_cifar_style():
    net = make_resnet18(in_channels=3, num_classes=10, width=64)
    reference = torchvision.models.resnet18(weights=None, num_classes=10)
    assert net.conv1.kernel_size == (3, 3) and net.conv1.stride == (1, 1) and net.conv1.in_channels == 3
    assert isinstance(net.maxpool, torch.nn.Identity)
    # same parameter count as ResNet-18 apart from the smaller stem
    stem = lambda m: sum(p.numel() for p in m.conv1.parameters())  # noqa: E731
    assert sum(p.numel() for p in net.parameters()) - stem(net) == sum(p.numel() for p in reference.parameters()) - stem(reference)
    narrow = make_resnet18(in_channels=2, num_classes=7, width=8)
    assert narrow(torch.rand(4, 2, 24, 24)).shape == (4, 7)
    assert narrow.layer4[0].conv1.out_channels == 64


def test_split_never_uses_one_text_twice_from_one_source():
    sources = [torch.full((6, 1, 4, 4), float(s)) for s in range(3)]
    train_x, train_y, val_x, val_y, how = split_sources(sources)
    assert len(train_y) == 12 and len(val_y) == 6 and sorted(val_y.tolist()) == list(range(6))
    for label in range(6):  # text i is validated on source i mod 3 and trained on the others
        assert val_x[val_y == label].unique().tolist() == [float(label % 3)]
        assert float(label % 3) not in train_x[train_y == label].unique().tolist()
    _, _, _, _, how_single = split_sources(sources[:1])
    assert "augmented" in how_single


def _toy_maps(num_classes: int, copies: int, seed: int) -> list[torch.Tensor]:
    """Each class is a bright block at its own place; copies differ by noise."""
    gen = torch.Generator().manual_seed(seed)
    base = torch.full((num_classes, 1, 16, 16), 0.01)
    for c in range(num_classes):
        row, col = divmod(c, 4)
        base[c, 0, 4 * row : 4 * row + 4, 4 * col : 4 * col + 4] = 1.0
    return [base + 0.05 * torch.rand(base.shape, generator=gen) for _ in range(copies)]


def test_proxy_learns_a_separable_toy_set(one_thread):
    sources = _toy_maps(8, copies=2, seed=0)
    target = _toy_maps(8, copies=1, seed=1)[0]
    config = ProxyConfig(iterations=60, batch_size=8, lr=0.05, width=8, eval_every=20, augment=NO_AUGMENT)
    run = train_proxy(sources, target, config, seed=0, device="cpu", progress=False)
    assert run.test_acc is not None and run.test_acc > 0.9
    assert run.val_acc > 0.9
    assert [h["step"] for h in run.history] == [20, 40, 60]
    assert run.best_step in (20, 40, 60)


def test_the_held_out_protocol_also_evaluates_the_last_step(one_thread):
    config = ProxyConfig(iterations=5, batch_size=4, lr=0.05, width=4, eval_every=2, augment=NO_AUGMENT)
    run = train_proxy(_toy_maps(4, copies=2, seed=0), None, config, seed=0, device="cpu", progress=False)
    assert [h["step"] for h in run.history] == [2, 4, 5] and run.best_step in (2, 4, 5)


@pytest.mark.parametrize("drop_last", [True, False])
def test_batches_cover_each_epoch_once_and_drop_or_keep_its_short_last_batch(drop_last):
    batches = shuffled_batches(10, 4, torch.Generator().manual_seed(0), drop_last)
    per_epoch = [4, 4] if drop_last else [4, 4, 2]
    for _ in range(3):
        epoch = [next(batches) for _ in per_epoch]
        assert [len(b) for b in epoch] == per_epoch
        drawn = torch.cat(epoch).tolist()
        assert len(set(drawn)) == len(drawn) and set(drawn) <= set(range(10))
    assert len(set(drawn)) == (8 if drop_last else 10)


def test_proxy_rejects_mismatched_target():
    with pytest.raises(ValueError, match="do not match"):
        train_proxy(_toy_maps(4, 2, 0), torch.rand(4, 2, 16, 16), ProxyConfig(iterations=1), progress=False)


def cached_train_proxy(sources, target, config, *, seed, store):
    """One proxy run through the store, rebuilt with its network (as :func:`proxy_experiment` runs each)."""
    job = ProxyJob.of(sources, target, config, seed, "cpu")
    (stored,) = run_cached([job], store=store, progress=False)
    return job.rebuild(*stored)


def test_cached_run_is_read_back_with_its_network(tmp_path, one_thread):
    store = TensorStore(tmp_path)
    sources, target = _toy_maps(8, copies=2, seed=0), _toy_maps(8, copies=1, seed=1)[0]
    config = ProxyConfig(iterations=20, batch_size=8, lr=0.05, width=8, eval_every=10, augment=NO_AUGMENT)
    first = cached_train_proxy(sources, target, config, seed=0, store=store)
    assert len(list(tmp_path.rglob("*.safetensors"))) == 1
    again = cached_train_proxy(sources, target, config, seed=0, store=store)
    assert (again.test_acc, again.val_acc, again.best_step, again.history) == (first.test_acc, first.val_acc, first.best_step, first.history)
    assert again.evaluate(target) == first.evaluate(target)  # the stored weights, not a fresh network
    # anything that changes the result is in the key: the seed, the config, the maps
    cached_train_proxy(sources, target, config, seed=1, store=store)
    cached_train_proxy(sources, target, dataclasses.replace(config, lr=0.01), seed=0, store=store)
    cached_train_proxy(sources, target * 2, config, seed=0, store=store)
    assert len(list(tmp_path.rglob("*.safetensors"))) == 4


def _resized(name: str, maps: torch.Tensor) -> Maps:
    """Toy maps as resized Maps: channel order1 as made, order2 its transpose."""
    both = torch.cat([maps, maps.transpose(-1, -2)], 1)
    return Maps(tensors=tuple(both), channels=("order1", "order2"), causal=False, model=name, align="resize",
                sinks="clean", size=maps.shape[-1], texts=tuple(f"text {i}" for i in range(maps.shape[0])))


@pytest.mark.slow  # two spawned processes: ~20 s on a shared 2-core machine
def test_experiment_in_two_workers_matches_one(tmp_path):
    from olacore.proxy import proxy_experiment

    maps = {name: _resized(name, m) for name, m in zip("abc", _toy_maps(8, copies=3, seed=0))}
    config = ProxyConfig(iterations=10, batch_size=8, lr=0.05, width=4, eval_every=5, augment=BatchAugmentation())
    splits = [(["a", "b"], "c"), (["c"], "a")]
    kwargs = dict(splits=splits, channel_sets=[("order1",)], config=config, seeds=[0, 1], device="cpu", progress=False)
    parallel, parallel_hist = proxy_experiment(maps, workers=2, store=TensorStore(tmp_path / "two"), **kwargs)
    serial, serial_hist = proxy_experiment(maps, workers=1, store=TensorStore(tmp_path / "one"), **kwargs)
    assert len(serial) == 4 and serial["target"].tolist() == ["c", "c", "a", "a"]
    assert parallel.equals(serial) and parallel_hist == serial_hist
    with pytest.raises(ValueError, match="workers"):
        proxy_experiment(maps, workers=0, **kwargs)


def test_experiment_rows_follow_splits_channel_sets_and_seeds(tmp_path, one_thread):
    from olacore.proxy import proxy_experiment

    maps = {name: _resized(name, m) for name, m in zip("ab", _toy_maps(8, copies=2, seed=0))}
    config = ProxyConfig(iterations=4, batch_size=8, lr=0.05, width=4, eval_every=2, augment=NO_AUGMENT)
    store = TensorStore(tmp_path)
    runs, histories = proxy_experiment(maps, leave_one_out(["a", "b"]), [("order1",), ("order2", "order1")], config,
                                       [0], device="cpu", progress=False, store=store)
    assert runs[["channels", "sources", "target"]].values.tolist() == [
        ["order 1", "b", "a"], ["order 2 + order 1", "b", "a"], ["order 1", "a", "b"], ["order 2 + order 1", "a", "b"]]
    assert set(histories) == {(c, t, 0) for c in ("order 1", "order 2 + order 1") for t in "ab"}
    assert len(list(tmp_path.rglob("*.safetensors"))) == 4
    # the maps a run sees are its channel set, in order: a network with two input channels
    from olacore.proxy import ProxyJob

    job = ProxyJob.of([maps["b"].select("order2", "order1").stack()], maps["a"].select("order2", "order1").stack(),
                      config, 0, "cpu")
    assert job.key() in store and job.sources[0].shape[1] == 2
    with pytest.raises(ValueError, match="order3"):
        proxy_experiment(maps, leave_one_out(["a", "b"]), [("order3",)], config, [0], progress=False, store=store)


def test_leave_one_out_and_labels():
    assert leave_one_out(["a", "b", "c"]) == [(["b", "c"], "a"), (["a", "c"], "b"), (["a", "b"], "c")]
    assert channel_set_label(("order1", "order2")) == "order 1 + order 2"
    assert channel_set_label(["rollout"]) == "rollout"


def test_proxy_summary_means_over_seeds_and_groups():
    import pandas as pd

    runs = pd.DataFrame({
        "channels": ["order 1"] * 4 + ["rollout"] * 4,
        "target": ["x", "x", "y", "y"] * 2,
        "seed": [0, 1] * 4,
        "test_acc": [0.5, 0.7, 0.2, 0.2, 0.1, 0.1, 0.3, 0.5],
    })
    table = proxy_summary(runs, {"all": ["x", "y"], "only x": ["x"]}, order=["rollout", "order 1"])
    assert list(table.index) == ["rollout", "order 1"]
    assert table.loc["order 1", "x"] == "60.0 ± 14.1" and table.loc["order 1", "y"] == "20.0 ± 0.0"
    assert table.loc["order 1", "mean over all targets"] == 40.0
    assert table.loc["rollout", "mean over only x targets"] == 10.0
    one_seed = proxy_summary(runs[runs["seed"] == 0], {"all": ["x", "y"]})
    assert one_seed.loc["order 1", "x"] == "50.0"  # one seed: no spread to show


def test_config_is_checked():
    for bad in ({"eval_every": 0}, {"iterations": 0}, {"batch_size": -1}, {"width": 6}, {"lr": 0.0}):
        with pytest.raises(ValueError):
            ProxyConfig(**bad)
