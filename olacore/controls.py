"""Controls: models whose parameters carry no (or less) learned knowledge (paper section 4.1).

If OLAS comes from pre-training, it must vanish when the knowledge is removed. Three ways
to remove it, each returning a new :class:`olacore.models.LoadedModel` with the same
tokenizer and architecture and its **own fingerprint** (so the attention cache never mixes
a control with the trained model):

- :func:`random_init`: fresh random weights from the same config (the official code's
  "random initialisation" control).
- :func:`shuffle_layers`: the trained layers in a random order (the official code's
  "shuffled layers" control); embeddings and final norm stay in place.
- :func:`add_noise`: Gaussian noise added to every parameter tensor, with standard deviation
  ``scale`` times that tensor's own standard deviation (the paper's "parameter
  perturbation"; ``scale = 0`` is the trained model, ``scale = 1`` drowns each tensor in
  noise as large as its own spread).

The trained model passed in is never modified.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Iterator, Sequence

import torch
import torch.nn as nn

from olacore.models import LoadedModel

__all__ = ["random_init", "shuffle_layers", "add_noise", "layer_stack", "control_variants", "controls_retrieval"]


def _variant(model: LoadedModel, backbone: nn.Module, tag: str) -> LoadedModel:
    backbone.eval()
    backbone.requires_grad_(False)
    return dataclasses.replace(
        model, name=f"{model.name} [{tag}]", backbone=backbone.to(model.device), fingerprint=f"{model.fingerprint}|control:{tag}"
    )


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


def add_noise(model: LoadedModel, scale: float, seed: int = 0) -> LoadedModel:
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
            yield "noise", float(scale), add_noise(model, scale, seed)


def controls_retrieval(
    target: LoadedModel,
    source_maps,
    texts,
    channels,
    *,
    max_order: int,
    noise_scales: Sequence[float] = (),
    seed: int = 0,
    structural: bool = True,
    batch_size: int = 8,
    align: str = "resize",
    sinks: str = "clean",
    size: int = 50,
    progress: bool = True,
):
    """SSIM retrieval of a trained source's maps by the target model and by its controls.

    For every variant of ``target`` (:func:`control_variants`), the OLA of ``texts`` is
    extracted (cached under the variant's own fingerprint), made comparable
    (:func:`olacore.similarity.comparable_maps`) and every map queries the gallery
    ``source_maps``.

    Args:
        target: the trained target model.
        source_maps: ``(N, C, S, S)`` maps of a trained source model for the same texts and
            ``channels``, aligned the same way.
        texts: the :class:`olacore.data.WordText` items.
        channels: the ``C`` channels (orders and/or ``"rollout"``).
        max_order: highest OLA order to extract.
        noise_scales, seed, structural: which controls (:func:`control_variants`).
        batch_size: extraction batch size.
        align, sinks, size: as :func:`olacore.similarity.comparable_maps`.
        progress: extraction progress bars.

    Returns:
        ``(table, maps)``: a DataFrame with columns ``control, scale, channel, hits@1,
        hits@5, chance@1, chance@5`` and a dict ``(control, scale) -> (N, C, S, S)`` maps.
    """
    import pandas as pd

    from olacore.cache import cached_ola
    from olacore.similarity import comparable_maps, retrieval_table

    rows, all_maps = [], {}
    strings = [t.text for t in texts]
    for control, scale, variant in control_variants(target, noise_scales, seed, structural):
        results = cached_ola(variant, strings, max_order, batch_size=batch_size, progress=progress)
        maps = comparable_maps(results, channels, align=align, sinks=sinks, size=size, texts=texts)
        all_maps[(control, scale)] = maps
        table = retrieval_table({"source": source_maps, "target": maps}, channels, pairs=[("source", "target")])
        table = table.drop(columns=["source", "target"])
        table.insert(0, "scale", scale)
        table.insert(0, "control", control)
        rows.append(table)
        del variant
    return pd.concat(rows, ignore_index=True), all_maps
