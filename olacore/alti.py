"""ALTI: token-to-token contributions of each layer, read from one forward pass (the ALTI row of
the paper's visual-proxy table; Ferrando, Gallego and Costa-jussa, EMNLP 2022).

The attention block's output at query token ``i`` is a sum of one *transformed vector* per input token plus terms
no token owns; token ``j``'s contribution is its L1 proximity, normalised per row, and layers are aggregated by
rollout (no identity added: the residual is inside each ``C``):

    y_i = sum_j T_i(x_j) + bias_i,      T_i(x_j) = N_i( sum_h A^h_ij v^h_j W_O^h + [i = j] x_j ),
    c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1),     C_ij = c_ij / sum_k c_ik,     C^(N) ... C^(1)

(``A^h`` head ``h``'s attention probabilities, ``v^h_j`` token ``j``'s value vector, ``W_O^h`` the head's slice of
the output projection, ``x_j`` the residual, ``N_i`` the norm linearised at token ``i``: centred by each vector's
own mean for LayerNorm, times the weight, over the statistic of token ``i``'s *real* norm input, so the
decomposition is exact). Block forms per architecture: :mod:`olacore.alti_families`.

As the ALTI reference (mt-upc/transformer-contributions ``src/contributions.py``, ``ModelWrapper.get_contributions``;
the copy the OLAS authors ran: jinglin-liang/OLAS ``utils/contributions.py``, aggregated in ``models/ola_utils.py``
``get_alti_attention``): value bias inside each value vector, output-projection and norm biases owned by no token;
the residual on the diagonal; LayerNorm linearised at the real pre-norm statistics; the L1 distance; ``min_sum``
normalisation clipped at zero (OLAS ``utils/utils_contributions.py`` ``normalize_contributions``); the rollout as a
plain product (``compute_joint_attention`` there, last layer kept). Where we differ:

- Norm statistic: the norm's own ``sqrt(var + eps)`` (RMSNorm: ``sqrt(mean(z^2) + eps)``), not the reference's
  ``(pre_ln_states + eps).std(-1, unbiased=False)`` (checked there by a loose ``torch.dist(...) < 1e-3 * numel``),
  so the vectors sum to the model's output within float32 rounding (``tests/test_alti.py``: 1e-4 relative error).
- Gemma's post-attention RMSNorm, left out by OLAS ``utils/contributions.py`` (``utils/config.yaml`` lists gemma2 as
  ``pre_layer_norm: 'True'``), is linearised (``1 + w`` weight).
- Grouped-query attention: ``head_dim`` is read from ``W_O`` and each value head repeated for its query-head group
  (as transformers' ``repeat_kv``); the reference's ``hidden / heads`` split fits neither GQA nor Gemma.
- Hooks on named modules in one pass; one batched product per block of key tokens (causal: later keys skipped),
  reduced to L1 distances at once, instead of ``(B, H, T, T, d)`` per layer; ``y_i`` is the model's own block
  output, which the reference recomputes from the decomposition.
- A row whose every ``c_ij`` is zero becomes the identity row, with a warning, instead of a division by zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from olacore.alti_families import ALTIFamily, LayerRecorder, LayerWeights, family_of, layer_weights
from olacore.alti_math import alti_rollout, layer_contributions, layer_factors
from olacore.extraction import _forward_kwargs, tokenize
from olacore.loading import LoadedModel
from olacore.pipeline import Product, cached_per_text
from olacore.settings import fixed_threads
from olacore.store import TensorStore
from olacore.timing import progress as progress_bar
from olacore.workers import per_text

__all__ = [
    "ALTIResult",
    "alti",
    "cached_alti",
    "ALTI_SETTINGS",
    "ALTI",
]

# What the contributions depend on besides model and text (a cache-key part).
ALTI_SETTINGS = {
    "method": "ALTI (Ferrando et al. 2022)",
    "distance": "L1",
    "contribution": "max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), rows normalised",
    "residual": "included (diagonal)",
    "norm": "linearised at the real statistics (sqrt(var + eps) / sqrt(mean sq + eps))",
    "rollout": "C^(N) ... C^(1), float64",
    "dtype": "float32",
    "batches": "one text per forward pass",
    "threads": "olacore.settings.COMPUTE_THREADS = 1",
}
#: The cached product: keyed by :data:`ALTI_SETTINGS` and the code of this module and what it imports.
ALTI = Product("alti", {"settings": ALTI_SETTINGS}, ("olacore.alti",))


@dataclass
class ALTIResult:
    """ALTI of one text.

    Attributes:
        tokens, offsets: as :func:`olacore.extraction.tokenize` gives them (special tokens kept).
        is_causal: decoder-only model (contributions are lower-triangular).
        contributions: ``(N, T, T)`` float32 CPU, layer 1 first; ``contributions[l, i, j]`` is token ``j``'s share of
            layer ``l + 1``'s block output at token ``i``; rows sum to 1.
        rollout: ``(T, T)`` float32 CPU, ALTI's aggregation ``C^(N) ... C^(1)``; rows sum to 1.
    """

    text: str
    tokens: list[str]
    offsets: list[tuple[int, int]]
    is_causal: bool
    contributions: torch.Tensor
    rollout: torch.Tensor


# --------------------------------------------------------------------------------------------
# Running a model
# --------------------------------------------------------------------------------------------


def _run(
    model: LoadedModel,
    encoded: list,
    on_text_layer: Callable[[int, int, dict, LayerWeights], None],
    progress: bool,
) -> ALTIFamily:
    """One forward pass per text, never shared (bits independent of the other texts); calls
    ``on_text_layer(text, layer, record, weights)``.
    """
    backbone = model.backbone
    family = family_of(backbone)
    weights = [layer_weights(backbone, family, layer) for layer in range(model.num_layers)]
    kwargs = {"return_dict": True, **_forward_kwargs(backbone)}
    if family.needs_output_attentions:
        kwargs["output_attentions"] = True
    for index, (ids, _, _) in enumerate(
            progress_bar(encoded, enabled=progress and bool(encoded), desc=f"ALTI {model.name}", leave=False)):
        input_ids = torch.tensor([ids], dtype=torch.long, device=model.device)
        seen: list[int] = []

        def on_layer(layer: int, record: dict) -> None:
            seen.append(layer)
            on_text_layer(index, layer, {key: tensor[0] for key, tensor in record.items()}, weights[layer])

        with LayerRecorder(backbone, family, on_layer):
            backbone(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)
        if sorted(seen) != list(range(model.num_layers)):
            raise RuntimeError(
                f"{model.name}: the forward pass reported layers {sorted(seen)}, expected 0..{model.num_layers - 1}"
            )
    return family


def alti(model: LoadedModel, texts: Sequence[str], *, progress: bool = True) -> list[ALTIResult]:
    """ALTI contributions of every layer and their rollout, for each text (module docstring).

    One :class:`ALTIResult` per text, in order. One forward pass per text (bit-identical whatever other texts are in
    the call) under :func:`torch.inference_mode` on ``model.device``, contributions computed from hooks inside it.
    ``model``: a covered family (:data:`~olacore.alti_families.FAMILIES`) with eager attention; texts
    within ``model.max_length`` tokens.

    Raises:
        ValueError: uncovered architecture (lists the covered families); empty text; text longer than the context.
        RuntimeError: the model does not run eager attention (says how to load it).
    """
    family = family_of(model.backbone)  # fails before tokenizing
    encoded = tokenize(model, texts)
    layers: list[list[torch.Tensor | None]] = [[None] * model.num_layers for _ in encoded]

    def on_text_layer(index: int, layer: int, record: dict, weights: LayerWeights) -> None:
        left, right, _ = layer_factors(record, weights, family)
        layers[index][layer] = layer_contributions(left, right, record["output"], model.is_causal).cpu()

    with torch.inference_mode(), fixed_threads():  # cached numbers must not depend on the thread count
        _run(model, encoded, on_text_layer, progress)
    results = []
    for index, (ids, tokens, offsets) in enumerate(encoded):
        contributions = torch.stack(layers[index])
        results.append(
            ALTIResult(
                text=texts[index],
                tokens=tokens,
                offsets=offsets,
                is_causal=model.is_causal,
                contributions=contributions.float().clone(),  # outside inference mode: editable
                rollout=alti_rollout(contributions).float().clone(),
            )
        )
    return results


# --------------------------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------------------------


def cached_alti(
    model: str | LoadedModel,
    texts: Sequence[str],
    *,
    workers: int = 1,
    device: str | torch.device | None = None,
    progress: bool = True,
    store: TensorStore | None = None,
) -> list[ALTIResult]:
    """:func:`alti`, cached per (model fingerprint, text, device type, :data:`ALTI_SETTINGS`, code) in a TensorStore.

    One entry per text, read back identical; a corrupt entry is recomputed. Arguments as for
    :func:`olacore.pipeline.cached_attention`.

    Raises:
        As :func:`alti`, and :func:`~olacore.loading.load_model` for a name.
    """
    return cached_per_text(
        model, texts, product=ALTI, device=device,
        compute=lambda missing: per_text(alti, model, missing, device=device, workers=workers, progress=progress),
        tensors_of=lambda r: {"contributions": r.contributions, "rollout": r.rollout},
        rebuild=lambda text, tensors, meta: ALTIResult(text, list(meta["tokens"]), [tuple(s) for s in meta["offsets"]],
                                                       bool(meta["is_causal"]), tensors["contributions"],
                                                       tensors["rollout"]),
        store=store)
