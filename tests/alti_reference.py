"""ALTI's verification oracle, for the tests: the explicit transformed vectors and the measure computed from them.

:func:`layer_decomposition` splits every layer's block output into the vectors ``T_i(x_j)`` through the same forward
pass as :func:`olacore.alti.alti` (the same hooks); ``transformed.sum(1) + bias`` must equal the block output.
:func:`contributions_from_vectors` is the ALTI paper's measure on those vectors, which the fused
:func:`olacore.alti.layer_contributions` must equal.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from olacore import alti
from olacore.alti import _normalise, layer_factors
from olacore.extraction import FAMILIES, tokenize
from olacore.loading import LoadedModel


@dataclass
class LayerDecomposition:
    """One layer's block output split into per-token transformed vectors (one text).

    Attributes:
        transformed: ``(T, T, d)`` float32 CPU; ``transformed[i, j]`` is ``T_i(x_j)``.
        bias: ``(T, d)`` float32 CPU, the part of ``y_i`` no token owns (output bias, norm bias).
        output: ``(T, d)`` float32 CPU, the block output ``y`` of the model's own forward pass;
            ``transformed.sum(1) + bias`` equals it within float32 rounding.
    """

    transformed: torch.Tensor
    bias: torch.Tensor
    output: torch.Tensor


def supported_model_types() -> list[str]:
    """Every ``config.model_type`` ALTI covers, sorted."""
    return sorted(t for family in FAMILIES for t in family.model_types)


def contributions_from_vectors(transformed: torch.Tensor, output: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """ALTI contributions from explicit transformed vectors (the ALTI paper's layer-wise measure).

    ``transformed[i, j] = T_i(x_j)`` ``(T, T, d)`` and block outputs ``y_i`` ``(T, d)`` -> ``(T, T)``:
    ``C_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1)`` normalised per row (an all-zero row becomes the identity row,
    with a warning); ``causal`` zeroes the entries above the diagonal.
    """
    distance = (transformed - output[:, None, :]).abs().sum(-1)
    return _normalise(output.abs().sum(-1)[:, None] - distance, causal)


def layer_decomposition(model: LoadedModel, text: str) -> list[LayerDecomposition]:
    """Every layer's block output of one text, split into ALTI's transformed vectors (layer 1 first).

    Memory is ``N * T^2 * d`` floats: meant for short texts. Raises as :func:`olacore.alti.alti`.
    """
    family = alti.family_of(model.backbone)  # looked up in olacore.alti, where the tests patch them
    ((ids, _, _),) = tokenize(model, [text])
    weights = [alti.layer_weights(model.backbone, family, layer) for layer in range(model.num_layers)]
    layers: list[LayerDecomposition | None] = [None] * model.num_layers

    def on_layer(layer: int, batch_record: dict) -> None:
        record = {key: tensor[0] for key, tensor in batch_record.items()}
        left, right, bias = layer_factors(record, weights[layer], family)
        transformed = torch.bmm(left, right).transpose(0, 1)  # (i, j, d)
        layers[layer] = LayerDecomposition(transformed=transformed.cpu().clone(), bias=bias.cpu().clone(),
                                           output=record["output"].float().cpu().clone())

    with torch.inference_mode(), alti.record_layers(model.backbone, family, on_layer):
        alti._forward(model, [ids], output_attentions=family.needs_output_attentions)
    assert all(layer is not None for layer in layers), "the forward pass skipped a layer"
    return [LayerDecomposition(d.transformed.clone(), d.bias.clone(), d.output.clone()) for d in layers]
