"""Controls: models whose parameters carry no (or less) learned knowledge (paper section 4.1).

If OLAS comes from pre-training, it must vanish when the knowledge is removed. Three ways
to remove it, each returning a new :class:`olacore.loading.LoadedModel` with the same
tokenizer and architecture and its **own fingerprint** (so the attention cache never mixes
a control with the trained model):

- :func:`random_init`: fresh random weights from the same config (the official code's
  ``load_method="random_all"``: ``model_class(config)`` in ``OLAModel`` of the official
  ``models/ola_model.py``).
- :func:`shuffle_layers`: the trained layers in a random order (the official
  ``load_method="layer_disorder"``, same file: it shuffles the weights of the transformer
  layers); embeddings and final norm stay in place.
- :func:`perturb_weights`: Gaussian noise added to every parameter tensor, with standard deviation
  ``scale`` times that tensor's own standard deviation (the paper's "parameter
  perturbation"; ``scale = 0`` is the trained model, ``scale = 1`` drowns each tensor in
  noise as large as its own spread).

The trained model passed in is never modified.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import pandas as pd

import torch
import torch.nn as nn

from olacore.loading import LoadedModel
from olacore.maps import Maps

if TYPE_CHECKING:  # pragma: no cover
    from olacore.pipeline import TokenMaps
    from olacore.proxy import ProxyConfig

__all__ = [
    "random_init", "shuffle_layers", "perturb_weights", "layer_stack", "control_variants", "controls_retrieval",
    "controls_proxy", "control_pair", "control_hits_table", "control_hits_summary",
]


def _identity(name: str, fingerprint: str, tag: str) -> tuple[str, str]:
    return f"{name} [{tag}]", f"{fingerprint}|control:{tag}"


def _variant(model: LoadedModel, backbone: nn.Module, tag: str) -> LoadedModel:
    backbone.eval()
    backbone.requires_grad_(False)
    name, fingerprint = _identity(model.name, model.fingerprint, tag)
    return dataclasses.replace(model, name=name, backbone=backbone.to(model.device), fingerprint=fingerprint)


def random_init(model: LoadedModel, seed: int = 0) -> LoadedModel:
    """The same architecture with freshly initialised weights (Hugging Face's own initialiser).

    Args:
        model: the trained model (left unchanged).
        seed: seeds the initialisation.

    Returns:
        A new :class:`LoadedModel`; ``name`` gets ``" [random init seed=S]"``, the fingerprint
        ``"|control:random init seed=S"``.
    """
    config = copy.deepcopy(model.backbone.config)
    config._attn_implementation = "eager"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        fresh = type(model.backbone)(config).to(torch.float32).state_dict()
    # Keep the trained module's exact structure; overwrite every tensor with the fresh one.
    backbone = copy.deepcopy(model.backbone)
    state = backbone.state_dict()
    missing = [key for key in state if key not in fresh or fresh[key].shape != state[key].shape]
    if missing:
        raise ValueError(f"a fresh {type(model.backbone).__name__} lacks {missing[:5]}: cannot re-initialise")
    backbone.load_state_dict({key: fresh[key] for key in state})
    return _variant(model, backbone, f"random init seed={seed}")


def layer_stack(backbone: nn.Module, num_layers: int) -> tuple[str, nn.ModuleList]:
    """Find the ``nn.ModuleList`` of transformer layers: the one with ``num_layers`` entries and most parameters.

    Returns:
        ``(dotted name, module list)``.

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
    """The trained layers in a random order (never the identity when ``N >= 2``).

    Each layer moves with all its own weights and settings (its attention type, e.g.
    Gemma 3's sliding window, goes with it); position ``i`` of the new stack holds the old
    layer ``permutation[i]``.

    Args:
        model: the trained model (left unchanged).
        seed: seeds the permutation.

    Returns:
        ``(control model, permutation)``.
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

    A tensor whose entries are all equal (std 0) or that has a single entry is left as it is.

    Args:
        model: the trained model (left unchanged).
        scale: relative noise level, ``>= 0`` (``0`` gives an unchanged copy).
        seed: seeds the noise.

    Returns:
        A new :class:`LoadedModel` tagged ``"noise=scale seed=S"``.

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
    model: LoadedModel, noise_scales: Sequence[float] = (), seed: int = 0, structural: bool = True
) -> Iterator[tuple[str, float, LoadedModel]]:
    """The trained model and its controls, one at a time (so only one copy is in memory).

    Yields ``(control, scale, model)``: ``("trained", 0.0, model)``; with ``structural``,
    ``("random init", nan, ...)`` and ``("shuffled layers", nan, ...)``; then
    ``("noise", s, ...)`` for every ``s > 0`` in ``noise_scales``.
    """
    yield "trained", 0.0, model
    if structural:
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
    structural: bool = True,
    workers: int = 1,
    progress: bool = True,
) -> tuple[pd.DataFrame, dict[tuple[str, float], list["TokenMaps"]]]:
    """SSIM retrieval of a trained source's maps by the target model and by its controls.

    For every variant of ``target`` (:func:`control_variants`) the maps of ``texts`` are made
    exactly as ``source`` was made (same channels, alignment, sinks, size; the OLA is cached
    under the variant's own fingerprint) and every map queries the gallery ``source``.

    Args:
        target: the trained target model.
        source: :class:`olacore.maps.Maps` of a trained source model for ``texts``.
        texts: the texts of ``source`` (strings, or objects with ``.text`` and ``.spans``).
        noise_scales, seed, structural: which controls (:func:`control_variants`).
        workers, progress: extraction settings (:func:`olacore.pipeline.cached_attention`).

    Returns:
        ``(table, token_maps)``: a DataFrame with columns ``control, scale, channel, sinks,
        hits@1, hits@5, chance@1, chance@5`` and a dict ``(control, scale) ->`` the variant's
        :class:`olacore.pipeline.TokenMaps` of the texts (to make other maps of them, e.g. for
        the proxy, with :func:`olacore.maps.make_maps`).
    """
    from olacore.maps import make_maps
    from olacore.pipeline import token_maps
    from olacore.retrieval import retrieval_table

    strings = [t if isinstance(t, str) else t.text for t in texts]
    words = None if source.align == "resize" else list(texts)
    rows, all_tokens = [], {}
    for control, scale, variant in control_variants(target, noise_scales, seed, structural):
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

    One proxy per seed is trained on ``source`` alone (its checkpoint chosen on a fixed
    augmented view of the source maps, never on a target; cached) and evaluated, unchanged,
    on every map set of ``controls``.

    Args:
        source: resized :class:`olacore.maps.Maps` of the trained source (text ``i`` = class ``i``).
        controls: ``(control, scale) -> Maps`` of the target under each control, same texts,
            channels and size (e.g. from :func:`controls_retrieval` with maps at the proxy's size).
        config: :class:`olacore.proxy.ProxyConfig`.
        seeds: one proxy per seed.
        device, workers, progress: as :func:`olacore.proxy.proxy_experiment`.

    Returns:
        DataFrame ``control, scale, seed, accuracy`` (fraction), one row per control and seed.
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

    The trained source's maps (resize to ``size``, sinks cleaned: the paper-faithful setting)
    are the gallery; the trained target and each of its controls (:func:`controls_retrieval`)
    query it; a last row set, ``"both random init"``, has a random-init target query a
    random-init source (seed ``seed + 1``), so no learned knowledge is left on either side.

    Args:
        target_name, source_name: model names (zoo, folder or Hugging Face id).
        texts: the texts (strings, or objects with ``.text``).
        channels: channel names.
        noise_scales, seed: the controls (:func:`control_variants`).
        size: resize side.
        device, workers, progress: loading and extraction settings (``workers`` extract the
            trained source's missing texts in worker processes: :func:`olacore.pipeline.cached_attention`).

    Returns:
        ``(table, source_maps, token_maps)``: the retrieval table (``control, scale, channel,
        sinks, hits@k, chance@k``), the trained source's Maps, and the target variants' token
        maps by ``(control, scale)``.
    """
    from olacore.loading import load_model
    from olacore.maps import make_maps, model_maps
    from olacore.retrieval import retrieval_table

    source_maps = model_maps(source_name, texts, channels, align="resize", sinks="clean", size=size, device=device,
                             workers=workers, progress=progress)
    source = load_model(source_name, device=device)
    table, tokens = controls_retrieval(load_model(target_name, device=device), source_maps, texts,
                                       noise_scales=noise_scales, seed=seed, progress=progress)
    random_source = model_maps(random_init(source, seed + 1), texts, channels, align="resize", sinks="clean",
                               size=size, progress=progress)
    random_tokens = next(v for (control, _), v in tokens.items() if control == "random init")  # scale is NaN
    random_target = make_maps(random_tokens, align="resize", sinks="clean", size=size)
    both = retrieval_table({"source": random_source, "target": random_target}, pairs=[("source", "target")])
    both = both.drop(columns=["source", "target"])
    both.insert(0, "scale", float("nan"))
    both.insert(0, "control", "both random init")
    return pd.concat([table, both], ignore_index=True), source_maps, tokens


def control_hits_table(table: pd.DataFrame) -> pd.DataFrame:
    """Hits@1 (%) of a :func:`control_pair` table, one row per (control, noise scale), one column per channel.

    Args:
        table: :func:`control_pair`'s table (columns ``control``, ``scale``, ``channel``,
            ``hits@1`` as a fraction).

    Returns:
        The wide table in percent, rounded to 0.1, rows with no value dropped.

    Raises:
        KeyError: a column above is missing.
    """
    wide = table.assign(**{"hits@1": 100 * table["hits@1"]}).pivot_table(
        index=["control", "scale"], columns="channel", values="hits@1", dropna=False, sort=False)
    return wide.dropna(how="all").round(1)


def control_hits_summary(table: pd.DataFrame, target: str, source: str, num_texts: int) -> tuple[pd.DataFrame, str]:
    """One control pair's Hits@1 table (:func:`control_hits_table`) and the line that introduces it.

    Paper section 4.1 (the controls): the target, under each control, queries the trained
    source's gallery of ``num_texts`` maps.

    Args:
        table: :func:`control_pair`'s table for this pair (``control``, ``scale``, ``channel``,
            ``hits@1`` as a fraction).
        target, source: the pair's model names (the controlled target, the trained source).
        num_texts: the texts retrieved among (gallery size), for the chance level
            (:func:`olacore.similarity.chance_hits`).

    Returns:
        ``(hits, caption)``: the wide Hits@1 table in percent, and ``"target T vs trained
        source S: Hits@1 % (N texts; chance C %)"``.

    Raises:
        KeyError: ``table`` lacks a column above.
    """
    from olacore.similarity import chance_hits

    chance = 100 * chance_hits(num_texts, 1)
    caption = f"target {target} vs trained source {source}: Hits@1 % ({num_texts} texts; chance {chance:.1f} %)"
    return control_hits_table(table), caption
