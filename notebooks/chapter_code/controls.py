"""Chapter 05's controls: models whose parameters carry no (or less) learned knowledge (paper section 4.1).

If OLAS comes from pre-training, it must vanish when the knowledge is removed. Each control is a new
:class:`olacore.loading.LoadedModel`, same tokenizer and architecture, with its **own fingerprint** (so the
attention cache never mixes it with the trained model); the trained model passed in is never modified.

- :func:`random_init`: fresh random weights from the same config (the official ``load_method="random_all"``:
  ``model_class(config)`` in ``OLAModel`` of ``models/ola_model.py``), initialised once per (model, seed) and kept in
  the cache (:mod:`olacore.loading`; loadable by name, :func:`olacore.loading.twin_name`).
- :func:`shuffle_layers`: the trained transformer layers in a random order (the official
  ``load_method="layer_disorder"``, same file); embeddings and final norm stay in place.
- :func:`perturb_weights`: Gaussian noise on every parameter tensor, std ``scale`` x the tensor's own std (the
  paper's "parameter perturbation").
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import pandas as pd

import torch
import torch.nn as nn

from olacore.loading import LoadedModel, random_init, twin_name, variant
from olacore.maps import Maps
from olacore.store import code_digest

if TYPE_CHECKING:  # pragma: no cover
    from olacore.pipeline import TokenMaps
    from olacore.proxy import ProxyConfig

__all__ = [
    "random_init", "shuffle_layers", "perturb_weights", "layer_stack", "control_variants", "controls_retrieval",
    "controls_proxy", "control_pair", "control_hits_table", "control_hits_summary",
]


def _variant(model: LoadedModel, backbone: nn.Module, tag: str) -> LoadedModel:
    """:func:`olacore.loading.variant`, its fingerprint also holding the digest of this module's code (and of the
    package code it imports), so an edit to how a control is built recomputes its cached maps."""
    made = variant(model, backbone, tag)
    return dataclasses.replace(made, fingerprint=f"{made.fingerprint}|code:{code_digest('chapter_code.controls')[:16]}")


def layer_stack(backbone: nn.Module, num_layers: int) -> tuple[str, nn.ModuleList]:
    """``(dotted name, nn.ModuleList)`` of the transformer layers: the list of ``num_layers`` with most parameters.

    Raises:
        ValueError: no module list of that length (the message names the architecture).
    """
    candidates = [
        (sum(p.numel() for p in module.parameters()), name, module)
        for name, module in backbone.named_modules()
        if isinstance(module, nn.ModuleList) and len(module) == num_layers
    ]
    if not candidates:
        raise ValueError(f"found no list of {num_layers} layers in {type(backbone).__name__}")
    _, name, module = max(candidates, key=lambda item: item[0])
    return name, module


def shuffle_layers(model: LoadedModel, seed: int = 0) -> tuple[LoadedModel, list[int]]:
    """The trained layers in a random order (never the identity when ``N >= 2``): ``(control, permutation)``.

    Each layer moves with all its weights and settings (its attention type, e.g. Gemma 3's sliding window);
    position ``i`` of the new stack holds the old layer ``permutation[i]``.
    """
    backbone = copy.deepcopy(model.backbone)
    name, layers = layer_stack(backbone, model.num_layers)
    gen = torch.Generator().manual_seed(seed)
    permutation = list(range(len(layers)))
    while len(layers) > 1 and permutation == sorted(permutation):
        permutation = torch.randperm(len(layers), generator=gen).tolist()
    old = list(layers)
    for position, source in enumerate(permutation):
        layers[position] = old[source]
    return _variant(model, backbone, f"shuffled layers seed={seed}"), permutation


def perturb_weights(model: LoadedModel, scale: float, seed: int = 0) -> LoadedModel:
    """Add Gaussian noise to every parameter, ``scale`` x that tensor's own standard deviation.

    A tensor whose entries are all equal (std 0) or that has a single entry is left as it is; ``scale = 0`` gives
    an unchanged copy. The result is tagged ``"noise=scale seed=S"``.

    Raises:
        ValueError: negative ``scale``.
    """
    if scale < 0:
        raise ValueError(f"noise scale must be >= 0; got {scale}")
    backbone = copy.deepcopy(model.backbone)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    with torch.no_grad():
        for parameter in backbone.parameters():
            if scale == 0 or parameter.numel() < 2 or not parameter.is_floating_point():
                continue
            std = parameter.float().std()
            noise = torch.randn(parameter.shape, generator=gen, dtype=torch.float32)
            parameter.add_((scale * std.cpu() * noise).to(parameter.device, parameter.dtype))
    return _variant(model, backbone, f"noise={scale:g} seed={seed}")


def control_variants(
    model: LoadedModel, noise_scales: Sequence[float] = (), seed: int = 0
) -> Iterator[tuple[str, float, LoadedModel]]:
    """The trained model and its controls, one at a time (so only one copy is in memory).

    Yields ``(control, scale, model)``: ``("trained", 0.0, model)``, ``("random init", nan, ...)`` and
    ``("shuffled layers", nan, ...)``; then ``("noise", s, ...)`` for every ``s > 0`` in ``noise_scales``.
    """
    yield "trained", 0.0, model
    yield "random init", float("nan"), random_init(model, seed)
    yield "shuffled layers", float("nan"), shuffle_layers(model, seed)[0]
    for scale in noise_scales:
        if scale > 0:
            yield "noise", float(scale), perturb_weights(model, scale, seed)


def controls_retrieval(
    target: LoadedModel,
    source: Maps,
    texts: Sequence[Any],
    *,
    noise_scales: Sequence[float] = (),
    seed: int = 0,
    workers: int = 1,
    progress: bool = True,
) -> tuple[pd.DataFrame, dict[tuple[str, float], list["TokenMaps"]]]:
    """SSIM retrieval of a trained source's maps by the target model and by its controls.

    For every variant of ``target`` (:func:`control_variants`: ``noise_scales``, ``seed``) the maps of ``texts``
    (strings, or objects with ``.text`` and ``.spans``) are made exactly as ``source`` was (the OLA cached under the
    variant's own fingerprint) and query the gallery ``source``.

    Returns:
        ``(table, token_maps)``: columns ``control, scale, channel, sinks, hits@1, hits@5, chance@1, chance@5``, and
        ``(control, scale) ->`` the variant's :class:`olacore.pipeline.TokenMaps` (for other maps of the texts).
    """
    from olacore.maps import make_maps
    from olacore.pipeline import token_maps
    from olacore.similarity import retrieval_table

    strings = [t if isinstance(t, str) else t.text for t in texts]
    words = None if source.align == "resize" else list(texts)
    rows, all_tokens = [], {}
    for control, scale, variant in control_variants(target, noise_scales, seed):
        tokens = token_maps(variant, strings, source.channels, workers=workers, progress=progress)
        all_tokens[(control, scale)] = tokens
        maps = make_maps(tokens, align=source.align, sinks=source.sinks, size=source.size or 50, words=words)
        table = retrieval_table({"source": source, "target": maps}, pairs=[("source", "target")])
        table = table.drop(columns=["source", "target"])
        table.insert(0, "scale", scale)
        table.insert(0, "control", control)
        rows.append(table)
        del variant
    return pd.concat(rows, ignore_index=True), all_tokens


def controls_proxy(
    source: Maps,
    controls: Mapping[tuple[str, float], Maps],
    config: "ProxyConfig",
    seeds: Sequence[int],
    *,
    device: str | torch.device | None = None,
    workers: int = 1,
    progress: bool = True,
) -> pd.DataFrame:
    """The visual proxy trained on a trained source's maps, tested on the target under each control.

    One proxy per seed is trained on ``source`` alone (resized maps, text ``i`` = class ``i``; checkpoint chosen on
    a fixed augmented view of the source maps, never on a target; cached) and evaluated, unchanged, on every map set
    of ``controls`` (``(control, scale) -> Maps``: same texts, channels and size). Returns ``control, scale, seed,
    accuracy`` (fraction), one row per control and seed.
    """
    from olacore.proxy import ProxyJob
    from olacore.training import run_cached

    jobs = [ProxyJob.of([source.stack()], None, config, seed, device) for seed in seeds]
    stored = run_cached(jobs, workers=workers, progress=progress, desc="proxy runs")
    rows = []
    for job, result in zip(jobs, stored):
        run = job.rebuild(*result)
        for (control, scale), maps in controls.items():
            rows.append({"control": control, "scale": scale, "seed": job.seed, "accuracy": run.evaluate(maps.stack())})
    return pd.DataFrame(rows)


def control_pair(
    target_name: str,
    source_name: str,
    texts: Sequence[Any],
    channels: Sequence[str],
    *,
    noise_scales: Sequence[float] = (),
    seed: int = 0,
    size: int = 50,
    device: str | torch.device | None = None,
    workers: int = 1,
    progress: bool = True,
) -> tuple[pd.DataFrame, Maps, dict[tuple[str, float], list["TokenMaps"]]]:
    """Retrieval under every control for one (target, source) pair, and with both models random.

    The trained source's maps (resized to ``size``, sinks cleaned: the paper-faithful setting) are the gallery; the
    trained target and each of its controls (:func:`controls_retrieval`) query it; a last row set, ``"both random
    init"``, has a random-init target query a random-init source (seed ``seed + 1``; by its twin's name, so its maps
    are extracted on ``workers`` processes, and the twin is loaded only where they are missing).

    Returns:
        ``(table, source_maps, token_maps)``: the retrieval table (``control, scale, channel, sinks, hits@k,
        chance@k``), the trained source's Maps, and the target variants' token maps by ``(control, scale)``.
    """
    from olacore.loading import load_model
    from olacore.maps import make_maps, model_maps
    from olacore.similarity import retrieval_table

    source_maps = model_maps(source_name, texts, channels, align="resize", sinks="clean", size=size, device=device,
                             workers=workers, progress=progress)
    table, tokens = controls_retrieval(load_model(target_name, device=device), source_maps, texts,
                                       noise_scales=noise_scales, seed=seed, progress=progress)
    random_source = model_maps(twin_name(source_name, seed + 1), texts, channels, align="resize", sinks="clean",
                               size=size, device=device, workers=workers, progress=progress)
    random_tokens = next(v for (control, _), v in tokens.items() if control == "random init")  # scale is NaN
    random_target = make_maps(random_tokens, align="resize", sinks="clean", size=size)
    both = retrieval_table({"source": random_source, "target": random_target}, pairs=[("source", "target")])
    both = both.drop(columns=["source", "target"])
    both.insert(0, "scale", float("nan"))
    both.insert(0, "control", "both random init")
    return pd.concat([table, both], ignore_index=True), source_maps, tokens


def control_hits_table(table: pd.DataFrame) -> pd.DataFrame:
    """Hits@1 (%) of a :func:`control_pair` table, one row per (control, noise scale), one column per channel.

    Rounded to 0.1; rows with no value dropped.

    Raises:
        KeyError: ``table`` lacks ``control``, ``scale``, ``channel`` or ``hits@1`` (a fraction).
    """
    wide = table.assign(**{"hits@1": 100 * table["hits@1"]}).pivot_table(
        index=["control", "scale"], columns="channel", values="hits@1", dropna=False, sort=False)
    return wide.dropna(how="all").round(1)


def control_hits_summary(table: pd.DataFrame, target: str, source: str, num_texts: int) -> tuple[pd.DataFrame, str]:
    """One control pair's Hits@1 table (:func:`control_hits_table`) and the caption that introduces it.

    Paper section 4.1 (the controls): the target, under each control, queries the trained source's gallery of
    ``num_texts`` maps. Caption: ``"target T vs trained source S: Hits@1 % (N texts; chance C %)"``.

    Raises:
        KeyError: ``table`` lacks a column :func:`control_hits_table` needs.
    """
    from olacore.similarity import chance_hits

    chance = 100 * chance_hits(num_texts, 1)
    caption = f"target {target} vs trained source {source}: Hits@1 % ({num_texts} texts; chance {chance:.1f} %)"
    return control_hits_table(table), caption
