"""Where ALTI reads each architecture's attention block: per-family data and the forward hooks.

Per layer, ALTI (:mod:`olacore.alti`) needs five tensors of the model's own forward pass: the layer input (the
residual), the value projection's output, the attention probabilities, the input of the norm it linearises, and the
block output. Families differ only in module names and norm placement, so each is one :class:`ALTIFamily` record
(as the per-model entries of the ALTI reference's ``src/config.yaml`` in mt-upc/transformer-contributions and of
the OLAS ``utils/config.yaml``), and one :class:`LayerRecorder` hooks any of them. Placements (block output ``y``):

- ``"sum"`` (post-norm encoders: BERT, RoBERTa, ELECTRA, MPNet): ``y = LN(x + Attn(x))``.
- ``"attention"`` (Gemma 2/3 sandwich norm): ``y = x + RMSNorm(Attn(RMSNorm(x)))``.
- ``None`` (pre-norm Llama, Mistral, Qwen2/3, Gemma 1): ``y = x + Attn(RMSNorm(x))``; the input norm acts on each
  token alone, so it sits inside each token's value vector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import torch

__all__ = ["ALTIFamily", "FAMILIES", "family_of", "LayerRecorder"]


@dataclass(frozen=True)
class ALTIFamily:
    """Where one architecture family keeps the parts of its attention block (module paths).

    Attributes:
        model_types: the ``config.model_type`` values it covers.
        layers: dotted path from the backbone to the ``ModuleList`` of layers.
        attention: path inside a layer to the module returning ``(output, probabilities, ...)``.
        value, output: paths inside a layer to the value projection and to ``W_O`` (``nn.Linear``, bias included).
        norm: path inside a layer to the norm ALTI linearises, ``None`` for plain pre-norm.
        placement: ``"sum"``, ``"attention"`` or ``None`` (module docstring).
        norm_kind: ``"layer"`` (centre, then scale by the std) or ``"rms"`` (scale by the RMS, no centring).
        norm_weight_offset: added to the norm weight (Gemma's RMSNorm multiplies by ``1 + w``).
        block_output: ``(path inside a layer, "input" | "output")``: the module whose input or output is ``y``.
        needs_output_attentions: probabilities are returned only with ``output_attentions=True`` (MPNet).
        eager_only: the attention is always eager (MPNet), so the ``attn_implementation`` check is skipped.
    """

    name: str
    model_types: tuple[str, ...]
    layers: str
    attention: str
    value: str
    output: str
    norm: str | None
    placement: Literal["sum", "attention"] | None
    norm_kind: Literal["layer", "rms"]
    block_output: tuple[str, Literal["input", "output"]]
    norm_weight_offset: float = 0.0
    needs_output_attentions: bool = False
    eager_only: bool = False


_PRE_NORM = dict(
    layers="layers",
    attention="self_attn",
    value="self_attn.v_proj",
    output="self_attn.o_proj",
    norm=None,
    placement=None,
    norm_kind="rms",
    block_output=("post_attention_layernorm", "input"),
)
_BERT = dict(
    layers="encoder.layer",
    attention="attention.self",
    value="attention.self.value",
    output="attention.output.dense",
    norm="attention.output.LayerNorm",
    placement="sum",
    norm_kind="layer",
    block_output=("attention.output.LayerNorm", "output"),
)

FAMILIES: tuple[ALTIFamily, ...] = (
    ALTIFamily(name="llama", model_types=("llama", "mistral"), **_PRE_NORM),
    ALTIFamily(name="qwen2", model_types=("qwen2", "qwen3"), **_PRE_NORM),
    ALTIFamily(name="gemma", model_types=("gemma",), **_PRE_NORM),
    ALTIFamily(
        name="gemma3",
        model_types=("gemma2", "gemma3_text"),
        layers="layers",
        attention="self_attn",
        value="self_attn.v_proj",
        output="self_attn.o_proj",
        norm="post_attention_layernorm",
        placement="attention",
        norm_kind="rms",
        norm_weight_offset=1.0,
        block_output=("pre_feedforward_layernorm", "input"),
    ),
    ALTIFamily(name="bert", model_types=("bert", "roberta", "xlm-roberta", "electra", "camembert"), **_BERT),
    ALTIFamily(
        name="mpnet",
        model_types=("mpnet",),
        layers="encoder.layer",
        attention="attention.attn",
        value="attention.attn.v",
        output="attention.attn.o",
        norm="attention.LayerNorm",
        placement="sum",
        norm_kind="layer",
        block_output=("attention.LayerNorm", "output"),
        needs_output_attentions=True,
        eager_only=True,
    ),
)


def family_of(backbone: torch.nn.Module) -> ALTIFamily:
    """The :class:`ALTIFamily` of a Hugging Face base model, checked to be usable.

    Raises:
        ValueError: the architecture is not covered (lists the covered families), or its modules are not where the
            family expects them.
        RuntimeError: the model does not run eager attention (says how to load it).
    """
    config = getattr(backbone, "config", None)
    model_type = getattr(config, "model_type", None)
    family = next((f for f in FAMILIES if model_type in f.model_types), None)
    if family is None:
        covered = "; ".join(f"{f.name} ({', '.join(f.model_types)})" for f in FAMILIES)
        raise ValueError(
            f"ALTI does not cover the architecture {model_type!r} ({type(backbone).__name__}). "
            f"Covered families (config.model_type): {covered}. Pass the base model of one of them "
            f"(AutoModel, not a task head), or add an ALTIFamily record for this architecture."
        )
    implementation = getattr(config, "_attn_implementation", None)
    if not family.eager_only and implementation != "eager":
        raise RuntimeError(
            f"ALTI needs the attention probabilities of every head, but this {type(backbone).__name__} "
            f"runs {implementation!r} attention, which does not compute them. Load it with "
            f"attn_implementation='eager' (olacore.loading.load_model does), or switch it with "
            f"backbone.set_attn_implementation('eager')."
        )
    try:
        layer = _layers(backbone, family)[0]
        for path in (family.attention, family.value, family.output, family.block_output[0]) + (
            (family.norm,) if family.norm else ()
        ):
            layer.get_submodule(path)
    except (AttributeError, IndexError) as error:
        raise ValueError(
            f"{type(backbone).__name__} has config.model_type {model_type!r} but not the module layout "
            f"of the ALTI family {family.name!r} ({error}); pass the base model (AutoModel), not a "
            f"task head or a wrapped model"
        ) from None
    return family


def _layers(backbone: torch.nn.Module, family: ALTIFamily) -> torch.nn.ModuleList:
    return backbone.get_submodule(family.layers)


@dataclass
class LayerWeights:
    """The constants of one layer's attention block that ALTI needs (float32, model device).

    Attributes:
        w_o, b_o: ``(d, H * d_head)`` output projection weight; ``(d,)`` bias or ``None``.
        gamma, beta: ``(d,)`` effective norm weight (offset included) and norm bias; ``None`` without them.
        num_heads, head_dim, num_kv_heads: query heads and their size; value heads (GQA).
    """

    w_o: torch.Tensor
    b_o: torch.Tensor | None
    gamma: torch.Tensor | None
    beta: torch.Tensor | None
    eps: float
    num_heads: int
    num_kv_heads: int
    head_dim: int


def layer_weights(backbone: torch.nn.Module, family: ALTIFamily, layer: int) -> LayerWeights:
    """Read :class:`LayerWeights` of layer ``layer`` (0-based) from the modules."""
    module = _layers(backbone, family)[layer]
    config = backbone.config
    num_heads = int(config.num_attention_heads)
    output = module.get_submodule(family.output)
    value = module.get_submodule(family.value)
    w_o = output.weight.detach().float()
    head_dim = w_o.shape[1] // num_heads
    num_kv_heads = value.weight.shape[0] // head_dim
    gamma = beta = None
    eps = 0.0
    if family.norm is not None:
        norm = module.get_submodule(family.norm)
        gamma = norm.weight.detach().float() + family.norm_weight_offset
        beta = norm.bias.detach().float() if getattr(norm, "bias", None) is not None else None
        eps = float(getattr(norm, "eps", getattr(norm, "variance_epsilon", 0.0)))
    b_o = output.bias.detach().float() if output.bias is not None else None
    return LayerWeights(w_o, b_o, gamma, beta, eps, num_heads, num_kv_heads, head_dim)


class LayerRecorder:
    """Forward hooks that hand each layer's ALTI inputs to ``on_layer`` during ONE forward pass.

    At layer ``l``'s block output, ``on_layer(l, record)`` gets ``residual`` ``(B, T, d)``, ``values``
    ``(B, T, H_kv * d_head)``, ``probs`` ``(B, H, T, T)``, ``norm_input`` ``(B, T, d)`` (with a norm) and ``output``
    ``(B, T, d)``; the record is then dropped. A context manager: hooks removed on exit, also after an error.

    Raises (from inside the forward pass):
        RuntimeError: a layer's attention module returned no probabilities.
    """

    def __init__(self, backbone: torch.nn.Module, family: ALTIFamily, on_layer: Callable[[int, dict], None]):
        self.backbone = backbone
        self.family = family
        self.on_layer = on_layer
        self._handles: list = []
        self._records: dict[int, dict] = {}

    def __enter__(self) -> "LayerRecorder":
        family = self.family
        try:
            for index, layer in enumerate(_layers(self.backbone, family)):
                self._hook_layer(index, layer, family)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._records.clear()

    def _store(self, index: int, key: str, tensor: torch.Tensor) -> None:
        self._records.setdefault(index, {})[key] = tensor.detach()

    def _hook_layer(self, index: int, layer: torch.nn.Module, family: ALTIFamily) -> None:
        def layer_input(module, args, kwargs):
            hidden = args[0] if args else kwargs["hidden_states"]
            self._store(index, "residual", hidden)

        def values(module, args, output):
            self._store(index, "values", output)

        def probs(module, args, output):
            weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
            if weights is None:
                raise RuntimeError(
                    f"layer {index}: the attention module {type(module).__name__} returned no attention "
                    f"probabilities; ALTI needs eager attention: load the model with "
                    f"attn_implementation='eager' (olacore.loading.load_model does)"
                )
            self._store(index, "probs", weights)

        def norm_input(module, args):
            self._store(index, "norm_input", args[0])

        def block_output(module, args, output=None):
            where = family.block_output[1]
            self._store(index, "output", args[0] if where == "input" else output)
            record = self._records.pop(index)
            self.on_layer(index, record)

        self._handles.append(layer.register_forward_pre_hook(layer_input, with_kwargs=True))
        self._handles.append(layer.get_submodule(family.value).register_forward_hook(values))
        self._handles.append(layer.get_submodule(family.attention).register_forward_hook(probs))
        if family.norm is not None:
            self._handles.append(layer.get_submodule(family.norm).register_forward_pre_hook(norm_input))
        target = layer.get_submodule(family.block_output[0])
        if family.block_output[1] == "input":
            self._handles.append(target.register_forward_pre_hook(block_output))
        else:
            self._handles.append(target.register_forward_hook(block_output))
