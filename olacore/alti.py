"""ALTI: token-to-token contributions of each layer, read from one forward pass (the ALTI row of
the paper's visual-proxy table; Ferrando, Gallego and Costa-jussa, EMNLP 2022).

For layer ``l`` and query token ``i``, the attention block's output ``y_i`` is written as a sum
of one *transformed vector* per input token plus terms owned by no token:

    y_i = sum_j T_i(x_j) + bias_i,
    T_i(x_j) = N_i( sum_h A^h_ij v^h_j W_O^h + [i = j] x_j )

(``A^h`` head ``h``'s attention probabilities, ``v^h_j`` token ``j``'s value vector, ``W_O^h``
the head's slice of the output projection, ``x_j`` the residual, ``N_i`` the norm linearised at
token ``i``). Token ``j``'s contribution to ``y_i`` is ALTI's L1 proximity, normalised per row:

    c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1),     C_ij = c_ij / sum_k c_ik,

and ALTI aggregates layers by rollout, ``C^(N) ... C^(1)`` (no identity added: the residual
is already inside each layer's ``C``).

Per architecture (:mod:`olacore.alti_families`): post-norm encoders ``y = LN(x + attn)``,
Gemma 2/3 ``y = x + RMSNorm(attn)``, pre-norm Llama/Qwen ``y = x + attn``. A norm is linearised
as ALTI does: each vector is centred by its own mean (LayerNorm only), multiplied by the norm
weight and divided by the statistic (standard deviation, or RMS) of the *real* norm input of
token ``i``; with that statistic taken from the forward pass the decomposition is exact.

What follows the ALTI reference (mt-upc/transformer-contributions, ``src/contributions.py``,
``ModelWrapper.get_contributions``; the copy the OLAS authors ran: jinglin-liang/OLAS
``utils/contributions.py``, aggregated in ``models/ola_utils.py`` ``get_alti_attention``):
the transformed vectors (value bias inside each value vector, so it is spread over tokens by
the attention weights; the output-projection bias and the norm bias are attributed to no
token and appear only in ``y_i``); the residual added on the diagonal; the centring-and-weight
linearisation of LayerNorm scaled by the real pre-norm statistics; the L1 distance; the
``min_sum`` normalisation with the resultant's L1 norm and clipping at zero (OLAS
``utils/utils_contributions.py`` ``normalize_contributions``); the rollout as a plain product
(``compute_joint_attention`` there, last layer kept).

Where we differ, and why:

- The norm statistic: the reference files divide by ``(pre_ln_states + eps).std(-1,
  unbiased=False)`` (an earlier revision of mt-upc ``src/contributions.py`` used the unbiased
  std), adding epsilon to the states rather than to the variance, and accept the result with
  a loose ``assert torch.dist(...) < 1e-3 * numel``; we use the norm's own ``sqrt(var + eps)``
  (or ``sqrt(mean(z^2) + eps)`` for RMSNorm), so the vectors sum to the model's output within
  float32 rounding (``tests/test_alti.py`` checks 1e-4 relative error per zoo model).
- Gemma's post-attention RMSNorm: OLAS ``utils/config.yaml`` lists gemma2 as plain pre-norm
  (``pre_layer_norm: 'True'``), so ``utils/contributions.py`` leaves out the RMSNorm Gemma
  applies to the attention output before the residual sum; we linearise it (``1 + w`` weight).
- Grouped-query attention: the reference files reshape the value output into
  ``num_attention_heads`` heads of ``hidden / heads`` dims, which fits neither GQA (fewer value
  heads) nor Gemma's ``head_dim``; we read ``head_dim`` from ``W_O`` and repeat each value head
  for its query-head group, as transformers' ``repeat_kv`` does.
- One forward pass with hooks on named modules instead of hooks on every module plus
  ``output_hidden_states``; a layer's tensors are dropped once its contributions are computed.
- Memory and time: the reference materialises ``(B, H, T, T, d)`` per layer; we fuse the head
  sum, the residual and ``- y_i`` into one batched matrix product per block of key tokens and
  reduce it to L1 distances at once; for causal models the blocks skip keys after the query.
- ``y_i`` in the distance is the model's own block output (from a hook), which the reference
  recomputes from the decomposition (they agree within float32 rounding, tested).
- A row whose every ``c_ij`` is zero (not seen on 100 EWT texts with the five zoo models)
  becomes the identity row, with a warning, instead of a division by zero.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from olacore.alti_families import ALTIFamily, LayerRecorder, LayerWeights, family_of, layer_weights
from olacore.alti_math import alti_rollout, layer_contributions, layer_factors
from olacore.extraction import per_text, tokenize
from olacore.loading import LoadedModel
from olacore.pipeline import cached_per_text
from olacore.settings import fixed_threads
from olacore.store import TensorStore
from olacore.timing import progress as progress_bar

__all__ = [
    "ALTIResult",
    "LayerDecomposition",
    "alti",
    "cached_alti",
    "layer_decomposition",
    "ALTI_SETTINGS",
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
    "version": 1,
}


@dataclass
class ALTIResult:
    """ALTI of one text.

    Attributes:
        text: the input text.
        tokens, offsets: as :func:`olacore.extraction.tokenize` gives them (special tokens kept).
        is_causal: decoder-only model (contributions are lower-triangular).
        contributions: ``(N, T, T)`` float32 CPU, layer 1 first; ``contributions[l, i, j]`` is
            token ``j``'s share of layer ``l + 1``'s block output at token ``i``; rows sum to 1.
        rollout: ``(T, T)`` float32 CPU, ALTI's aggregation ``C^(N) ... C^(1)``; rows sum to 1.
    """

    text: str
    tokens: list[str]
    offsets: list[tuple[int, int]]
    is_causal: bool
    contributions: torch.Tensor
    rollout: torch.Tensor


@dataclass
class LayerDecomposition:
    """One layer's block output split into per-token transformed vectors (one text).

    Attributes:
        transformed: ``(T, T, d)`` float32 CPU; ``transformed[i, j]`` is ``T_i(x_j)``.
        bias: ``(T, d)`` float32 CPU, the part of ``y_i`` no token owns (output bias, norm bias).
        output: ``(T, d)`` float32 CPU, the block output ``y`` of the model's own forward pass.
            ``transformed.sum(1) + bias`` equals ``output`` within float32 rounding.
    """

    transformed: torch.Tensor
    bias: torch.Tensor
    output: torch.Tensor


# --------------------------------------------------------------------------------------------
# Running a model
# --------------------------------------------------------------------------------------------


def _forward_kwargs(backbone: torch.nn.Module, family: ALTIFamily) -> dict:
    parameters = inspect.signature(backbone.forward).parameters
    kwargs = {"return_dict": True}
    if "use_cache" in parameters:
        kwargs["use_cache"] = False
    if family.needs_output_attentions:
        kwargs["output_attentions"] = True
    return kwargs


def _run(
    model: LoadedModel,
    encoded: list,
    on_text_layer: Callable[[int, int, dict, LayerWeights], None],
    progress: bool,
) -> ALTIFamily:
    """One forward pass per text; ``on_text_layer(text, layer, record, weights)``.

    Texts do not share a pass (as in :func:`olacore.extraction.extract_attention`): padding, and
    for short texts even a batch of equal lengths, change the last bits of a text's numbers,
    which then depended on the other texts of the call (issue #13).
    """
    backbone = model.backbone
    family = family_of(backbone)
    weights = [layer_weights(backbone, family, layer) for layer in range(model.num_layers)]
    kwargs = _forward_kwargs(backbone, family)
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

    One forward pass per text (so a result is bit-identical whatever other texts are in the
    call); each
    layer's contributions are computed inside the pass, from hooks, and its tensors dropped.
    Runs under :func:`torch.inference_mode` on ``model.device``.

    Args:
        model: a :class:`~olacore.loading.LoadedModel` of a covered family
            (:func:`~olacore.alti_families.supported_model_types`), eager attention.
        texts: non-empty strings, each within ``model.max_length`` tokens.
        progress: tqdm bar over the texts.

    Returns:
        One :class:`ALTIResult` per text, in input order: ``contributions`` ``(N, T, T)`` and
        ``rollout`` ``(T, T)``, float32 on the CPU, rows summing to 1, lower-triangular for
        causal models.

    Raises:
        ValueError: uncovered architecture (lists the covered families); empty text; text
            longer than the context (both lengths given).
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


def layer_decomposition(model: LoadedModel, text: str) -> list[LayerDecomposition]:
    """Every layer's block output of one text, split into ALTI's transformed vectors.

    The check that ALTI reads the real model: ``transformed.sum(1) + bias`` must equal the
    block output ``y`` taken from the same forward pass (``tests/test_alti.py``). Memory is
    ``N * T^2 * d`` floats: meant for short texts.

    Args:
        model: as for :func:`alti`.
        text: one non-empty string within the context.

    Returns:
        One :class:`LayerDecomposition` per layer, layer 1 first.

    Raises:
        As :func:`alti`.
    """
    family = family_of(model.backbone)
    encoded = tokenize(model, [text])
    layers: list[LayerDecomposition | None] = [None] * model.num_layers

    def on_text_layer(index: int, layer: int, record: dict, weights: LayerWeights) -> None:
        left, right, bias = layer_factors(record, weights, family)
        transformed = torch.bmm(left, right).transpose(0, 1)  # (i, j, d)
        layers[layer] = LayerDecomposition(
            transformed=transformed.cpu().clone(), bias=bias.cpu().clone(), output=record["output"].float().cpu().clone()
        )

    with torch.inference_mode():
        _run(model, encoded, on_text_layer, False)
    return [LayerDecomposition(d.transformed.clone(), d.bias.clone(), d.output.clone()) for d in layers]


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
    """:func:`alti`, cached per (model fingerprint, text, :data:`ALTI_SETTINGS`) in a TensorStore.

    One entry per text (atomic, checksummed: :class:`~olacore.store.TensorStore`), so a larger
    text set reuses the entries of a smaller one; a corrupt entry is recomputed.

    Args:
        model: a model name (zoo, folder or Hugging Face id: loaded only if some text misses
            the cache) or a :class:`~olacore.loading.LoadedModel` (its ``fingerprint`` keys the
            cache, so a modified copy must carry its own).
        texts: non-empty strings.
        workers: processes computing the texts the cache lacks, as for
            :func:`olacore.pipeline.cached_attention`.
        progress: a tqdm bar on a miss.
        device: where to load the model on a miss; ignored for a ``LoadedModel``.
        store: the store; default ``TensorStore()`` under ``$OLACORE_CACHE/tensors``.

    Returns:
        One :class:`ALTIResult` per text, in order, identical whether read or computed.

    Raises:
        As :func:`alti`, and :func:`~olacore.loading.load_model` for a name.
    """
    return cached_per_text(
        model, texts, kind="alti", parts={"settings": ALTI_SETTINGS},
        compute=lambda missing: per_text(alti, model, missing, device=device, workers=workers, progress=progress),
        tensors_of=lambda r: {"contributions": r.contributions, "rollout": r.rollout},
        rebuild=lambda text, tensors, meta: ALTIResult(text, list(meta["tokens"]), [tuple(s) for s in meta["offsets"]],
                                                       bool(meta["is_causal"]), tensors["contributions"],
                                                       tensors["rollout"]),
        store=store)
