"""Attention extraction: the head-averaged attention of every layer, per text (paper section 3.1), and the hooks by
which ALTI (:mod:`olacore.alti`) reads each architecture's attention block in the same forward pass.

Special tokens are kept as each tokenizer adds them (official ``OLAModel``, ``models/ola_model.py``). A text's
attention has the bits of a forward pass of its own (:func:`run_batched`).

ALTI reads five tensors per layer (residual, values, probabilities, norm input, block output); each architecture
family is one :class:`ALTIFamily` record of :data:`FAMILIES` (as mt-upc/transformer-contributions
``src/config.yaml`` and OLAS ``utils/config.yaml``). Placements (block output ``y``):

- ``"sum"`` (post-norm encoders: BERT, RoBERTa, ELECTRA, MPNet): ``y = LN(x + Attn(x))``.
- ``"attention"`` (Gemma 2/3 sandwich norm): ``y = x + RMSNorm(Attn(RMSNorm(x)))``.
- ``None`` (pre-norm Llama, Mistral, Qwen2/3, Gemma 1): ``y = x + Attn(RMSNorm(x))``; the input norm acts on each
  token alone, so it sits inside each token's value vector.
"""

from __future__ import annotations

import contextlib
import inspect
import unicodedata
import warnings
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

import torch

from olacore.loading import LoadedModel
from olacore.settings import env_positive_number, fixed_threads
from olacore.results import progress as progress_bar

__all__ = ["Extraction", "check_texts", "tokenize", "extract_attention", "run_batched", "ATTENTION_BUDGET_ENV",
           "BATCH_SIZE", "MIN_BATCH_TOKENS", "SELF_TEST_MIN_TEXTS", "ALTIFamily", "FAMILIES", "family_of",
           "record_layers"]


@dataclass
class Extraction:
    """Attention of one text (paper section 3.1).

    Attributes:
        tokens: the ``T`` tokens, special tokens kept.
        offsets: ``T`` whitespace-trimmed character spans into ``text``; ``(0, 0)`` for special tokens.
        attentions: ``(N, T, T)`` float32 CPU, head-averaged, layer 1 first; rows sum to 1; lower-triangular when
            ``is_causal`` (a decoder-only model).
    """

    text: str
    tokens: list[str]
    offsets: list[tuple[int, int]]
    is_causal: bool
    attentions: torch.Tensor


# Characters that show nothing: besides spaces and control or format characters (zero-width space U+200B, BOM U+FEFF,
# word joiner, bidi marks, tags), the blank letters and symbols of Unicode (Hangul fillers, Braille blank, Khmer
# inherent vowels, combining grapheme joiner, variation selectors), which Python counts as printable.
_BLANK_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})
_BLANK_CHARACTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u17b4\u17b5\u034f\u180e")


def _invisible(character: str) -> bool:
    return (character.isspace() or unicodedata.category(character) in _BLANK_CATEGORIES
            or character in _BLANK_CHARACTERS or "\ufe00" <= character <= "\ufe0f"
            or "\U000e0100" <= character <= "\U000e01ef")


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, checked: a sequence of strings, each with a visible character.

    Raises:
        TypeError: ``texts`` is a single string, or holds a non-string.
        ValueError: a text is empty, whitespace only, invisible or not valid Unicode (names its index).
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not a single string; wrap it in a list")
    texts = list(texts)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{index}] is a {type(text).__name__}, not a str")
        if not text.strip():
            raise ValueError(f"texts[{index}] is empty or whitespace only; remove it or give it some words")
        if all(_invisible(c) for c in text):
            shown = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in dict.fromkeys(text) if
                              not c.isspace())
            raise ValueError(f"texts[{index}] shows nothing: it holds only invisible characters ({shown}); remove "
                             "it or give it some words")
        bad = next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
        if bad is not None:  # an undecodable byte read with errors="surrogateescape", or a broken pair
            raise ValueError(f"texts[{index}] is not valid Unicode: character {bad} is a lone surrogate "
                             f"{text[bad]!r}; decode the text with its real encoding (e.g. latin-1) first")
    return texts


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end)


def tokenize(model: LoadedModel, texts: Sequence[str]) -> list[tuple[list[int], list[str], list[tuple[int, int]]]]:
    """``(ids, tokens, offsets)`` of each text (offsets as in :class:`Extraction`); a special token's spelling inside
    a text is read as text.

    Raises:
        TypeError / ValueError: as :func:`check_texts`; a text the tokenizer drops entirely; a text longer than the
            model's context.
    """
    result = []
    for index, text in enumerate(check_texts(texts)):
        # split_special_tokens: the text's own "[SEP]", "<bos>", "<|endoftext|>" are characters, not control tokens;
        # the tokenizer's own special tokens (BOS, CLS/SEP) are added as before.
        encoding = model.tokenizer(text, add_special_tokens=True, return_offsets_mapping=True,
                                   return_special_tokens_mask=True, return_attention_mask=False, truncation=False,
                                   verbose=False, split_special_tokens=True)
        ids = list(encoding["input_ids"])
        if len(ids) > model.max_length:
            raise ValueError(f"texts[{index}] has {len(ids)} tokens, longer than the context of {model.name!r} "
                             f"({model.max_length} tokens, special tokens included); split or shorten it")
        special = encoding["special_tokens_mask"]
        if all(special):
            raise ValueError(f"texts[{index}] gives no token in {model.name!r} (its tokenizer drops every character "
                             f"of {text[:40]!r}); give it some words")
        offsets = [
            (0, 0) if is_special else _trim(text, int(start), int(end))
            for (start, end), is_special in zip(encoding["offset_mapping"], special)
        ]
        tokens = model.tokenizer.convert_ids_to_tokens(ids)
        result.append((ids, tokens, offsets))
    return result


ATTENTION_BUDGET_ENV = "OLACORE_ATTENTION_GB"


def _attention_bytes(model: LoadedModel, length: int) -> int:
    """Bytes of one text's attention over all layers and heads: ``N * H * T^2 * 4``."""
    return model.num_layers * model.num_heads * 4 * length**2


def _attention_budget() -> float:
    return env_positive_number(ATTENTION_BUDGET_ENV, 4.0) * 2**30


def _check_memory(model: LoadedModel, length: int, index: int) -> None:
    """Refuse ``texts[index]`` when its attention (``N * H * T^2 * 4`` bytes) exceeds ``$OLACORE_ATTENTION_GB`` GB (default 4).

    Raises:
        MemoryError: names the text, its length and what it would need.
        ValueError: ``$OLACORE_ATTENTION_GB`` is not a positive number.
    """
    budget = _attention_budget()
    needed = _attention_bytes(model, length)
    if needed > budget:
        raise MemoryError(
            f"texts[{index}] ({length} tokens) needs {needed / 2**30:.2f} GB of attention "
            f"in {model.name} ({model.num_layers} layers x {model.num_heads} heads x T^2 x 4 bytes), "
            f"more than the {budget / 2**30:.2f} GB budget; shorten the text or raise ${ATTENTION_BUDGET_ENV}")



#: Most texts of one token length in a forward pass (measured on CPU: the gain stops at 8).
BATCH_SIZE = 8
#: Shorter texts always run alone (BLAS takes another path for ``T < 4`` rows, so the bits would differ).
MIN_BATCH_TOKENS = 4
#: A length is self-tested only when a call holds at least this many texts of it.
SELF_TEST_MIN_TEXTS = 4


@dataclass
class _Batching:
    """What this process's self-tests found for one model on one device."""

    verdicts: dict = field(default_factory=dict)  # batch shape (see run_batched) -> batches give single-pass bits
    warned: bool = False


_BATCHING: dict[tuple[str, str], _Batching] = {}  # (model fingerprint, device) -> what the self-tests found


def _same(single: Sequence, batched: Sequence) -> bool:
    """Every tensor of every text equal bit for bit (a ``None``, ALTI's attention over the budget, in both)."""
    def flat(results):
        return [t for result in results for t in (result if isinstance(result, tuple) else (result,))]

    return all(x is None or torch.equal(x, y) for x, y in zip(flat(single), flat(batched)))


def run_batched(model: LoadedModel, ids: Sequence[list[int]], forward: Callable[[list[list[int]]], list], *,
                kind: str, covers: str | None = None, progress: bool = True) -> list:
    """``forward`` over the token ids of many texts, in batches of equal length, with the results of one text a pass.

    ``forward(batch)`` runs one pass over equal-length ``batch`` (no padding) and returns one result per text;
    results come back in the order of ``ids``. ``kind`` names what it computes (``"attention"``, ``"alti"``);
    ``covers``: a kind whose results are part of this one's, so the two share self-tests. Texts are grouped by
    length (input order inside a group), each group cut into batches of at most :data:`BATCH_SIZE` texts, and no
    more than the attention budget has room for.

    A batch is used only where a self-test, once per (model, device, ``kind``, length) on a CPU (per batch shape
    elsewhere), shows it gives exactly the bits of single passes; otherwise texts run one a pass, with one
    ``RuntimeWarning``.
    """
    groups: dict[int, list[int]] = {}  # token length -> indices of its texts, in input order
    for index, row in enumerate(ids):
        groups.setdefault(len(row), []).append(index)
    budget = _attention_budget()
    state = _BATCHING.setdefault((model.fingerprint, str(model.device)), _Batching())
    results: list = [None] * len(ids)
    with progress_bar(None, enabled=progress and bool(ids), total=len(ids), desc=f"{kind} {model.name}",
                      leave=False) as bar:
        for length, members in groups.items():
            fits = int(budget // _attention_bytes(model, length))  # texts whose attention the budget holds at once
            size = 1 if length < MIN_BATCH_TOKENS else max(1, min(BATCH_SIZE, fits))
            for batch in [members[start:start + size] for start in range(0, len(members), size)]:
                rows = [list(ids[i]) for i in batch]
                shape = (kind, length) if model.device.type == "cpu" else (kind, len(rows), length)
                covered = (covers, *shape[1:]) if covers else None
                verdict = False if covered and state.verdicts.get(covered) is False else state.verdicts.get(shape)
                if len(rows) == 1 or verdict is False or (verdict is None and len(members) < SELF_TEST_MIN_TEXTS):
                    done = [forward([row])[0] for row in rows]
                elif verdict:
                    done = forward(rows)
                else:  # the self-test: single passes give the results, one batched pass is compared with them
                    tested = 2 if model.device.type == "cpu" else len(rows)  # on a CPU a pair stands for any size
                    done = [forward([row])[0] for row in rows[:tested]]
                    state.verdicts[shape] = _same(done, forward(rows[:tested]))
                    rest = rows[tested:]
                    if len(rest) > 1 and state.verdicts[shape]:
                        done += forward(rest)
                    else:
                        done += [forward([row])[0] for row in rest]
                    if covered and state.verdicts[shape]:
                        state.verdicts[covered] = True
                    if not state.verdicts[shape] and not state.warned:
                        state.warned = True
                        warnings.warn(
                            f"{model.name} on {model.device}: {tested} texts of {length} tokens in one forward pass "
                            f"({kind}) gave other bits than one text a pass; texts of that length (and of any other "
                            "length whose self-test fails) run one a pass (same numbers, slower)", RuntimeWarning,
                            stacklevel=3)
                for index, result in zip(batch, done):
                    results[index] = result
                bar.update(len(batch))
    return results


def _forward(model: LoadedModel, batch: list[list[int]], **kwargs):
    """One forward pass of the backbone over equal-length ``batch`` (no padding); ``kwargs`` added."""
    input_ids = torch.tensor(batch, dtype=torch.long, device=model.device)
    if "use_cache" in inspect.signature(model.backbone.forward).parameters:
        kwargs["use_cache"] = False
    return model.backbone(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), return_dict=True, **kwargs)


def _head_means(model: LoadedModel, outputs) -> list[torch.Tensor]:
    """Per text of the batch, the ``(N, T, T)`` float32 CPU head-averaged attention.

    Raises:
        RuntimeError: the backbone returned no attention (not loaded with eager attention).
    """
    attentions = getattr(outputs, "attentions", None)
    if not attentions or any(a is None for a in attentions):
        raise RuntimeError(f"{model.name}: the backbone returned no attention weights; load it with "
                           f"attn_implementation='eager' (load_model does)")
    # (N, B, H, T, T) -> per text, mean over heads -> (N, T, T)
    return [torch.stack([layer[row].float().mean(dim=0) for layer in attentions]).to("cpu")
            for row in range(attentions[0].shape[0])]


def extract_attention(model: LoadedModel, texts: Sequence[str], progress: bool = True) -> list[Extraction]:
    """Head-averaged attention of every layer for each text (paper section 3.1).

    One :class:`Extraction` per text, in order, bit-identical whatever other texts are in the call
    (:func:`run_batched`); on :data:`olacore.settings.COMPUTE_THREADS` thread(s).

    Raises:
        TypeError / ValueError: as :func:`tokenize` (empty text, text longer than the context).
        MemoryError: a text whose attention exceeds ``$OLACORE_ATTENTION_GB`` (names it by its index).
        RuntimeError: the backbone returned no attention (not loaded with eager attention).
    """
    encoded = tokenize(model, texts)
    for index, (ids, _, _) in enumerate(encoded):
        _check_memory(model, len(ids), index)

    def forward(batch: list[list[int]]) -> list[torch.Tensor]:
        return _head_means(model, _forward(model, batch, output_attentions=True))

    with torch.inference_mode(), fixed_threads():
        maps = run_batched(model, [ids for ids, _, _ in encoded], forward, kind="attention", progress=progress)
    # clone outside inference mode: callers get ordinary tensors they may edit in place
    return [Extraction(text=text, tokens=tokens, offsets=offsets, is_causal=model.is_causal, attentions=m.clone())
            for text, (_, tokens, offsets), m in zip(texts, encoded, maps)]


# ALTI's architecture table and the hooks that record its tensors in the forward pass


@dataclass(frozen=True)
class ALTIFamily:
    """Where one architecture family keeps the parts of its attention block (module paths inside a layer).

    Attributes:
        model_types: the ``config.model_type`` values it covers.
        layers: dotted path from the backbone to the ``ModuleList`` of layers.
        attention, value, output: the module returning ``(output, probabilities, ...)``, the value projection and
            ``W_O`` (``nn.Linear``, bias included).
        norm: the norm ALTI linearises, ``None`` for plain pre-norm; placement: as the module docstring.
        norm_kind: ``"layer"`` (centred, scaled by the std) or ``"rms"`` (scaled by the RMS).
        norm_weight_offset: added to the norm weight (Gemma's RMSNorm multiplies by ``1 + w``).
        block_output: ``(path, "input" | "output")``: the module whose input or output is ``y``.
        needs_output_attentions, eager_only: MPNet's attention (always eager, probabilities only when asked).
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
    # Gemma 2/3: the pre-norm layout with a norm after attention (its weight offset by 1), read before the MLP's norm
    ALTIFamily(name="gemma3", model_types=("gemma2", "gemma3_text"), **_PRE_NORM | dict(
        norm="post_attention_layernorm", placement="attention", norm_weight_offset=1.0,
        block_output=("pre_feedforward_layernorm", "input"))),
    ALTIFamily(name="bert", model_types=("bert", "roberta", "xlm-roberta", "electra", "camembert"), **_BERT),
    # MPNet: the BERT layout under other module names; its attention probabilities come only from output_attentions
    ALTIFamily(name="mpnet", model_types=("mpnet",), **_BERT | dict(
        attention="attention.attn", value="attention.attn.v", output="attention.attn.o", norm="attention.LayerNorm",
        block_output=("attention.LayerNorm", "output"), needs_output_attentions=True, eager_only=True)),
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
        raise ValueError(f"ALTI does not cover the architecture {model_type!r} ({type(backbone).__name__}). "
                         f"Covered families (config.model_type): {covered}. Pass the base model of one of them "
                         f"(AutoModel, not a task head), or add an ALTIFamily record for this architecture.")
    implementation = getattr(config, "_attn_implementation", None)
    if not family.eager_only and implementation != "eager":
        raise RuntimeError(f"ALTI needs the attention probabilities of every head, but this {type(backbone).__name__} "
                           f"runs {implementation!r} attention, which does not compute them. Load it with "
                           f"attn_implementation='eager' (olacore.loading.load_model does), or switch it with "
                           f"backbone.set_attn_implementation('eager').")
    try:
        layer = backbone.get_submodule(family.layers)[0]
        for path in (family.attention, family.value, family.output, family.block_output[0]) + (
            (family.norm,) if family.norm else ()
        ):
            layer.get_submodule(path)
    except (AttributeError, IndexError) as error:
        raise ValueError(f"{type(backbone).__name__} has config.model_type {model_type!r} but not the module layout "
                         f"of the ALTI family {family.name!r} ({error}); pass the base model (AutoModel), not a "
                         f"task head or a wrapped model") from None
    return family


@dataclass
class LayerWeights:
    """The constants of one layer's attention block that ALTI needs (float32, model device).

    Attributes:
        w_o, b_o: ``(d, H * d_head)`` output projection weight; ``(d,)`` bias or ``None``.
        gamma, beta: ``(d,)`` effective norm weight (offset included) and norm bias; ``None`` without them.
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
    module = backbone.get_submodule(family.layers)[layer]
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


@contextlib.contextmanager
def record_layers(backbone: torch.nn.Module, family: ALTIFamily, on_layer: Callable[[int, dict], None]):
    """Forward hooks (a context manager) that hand each layer's ALTI inputs to ``on_layer(l, record)`` during one pass.

    ``record``: ``residual`` ``(B, T, d)``, ``values`` ``(B, T, H_kv * d_head)``, ``probs`` ``(B, H, T, T)``,
    ``norm_input`` ``(B, T, d)`` (with a norm) and ``output`` ``(B, T, d)``.

    Raises (inside the forward pass):
        RuntimeError: a layer's attention module returned no probabilities (not eager attention).
    """
    handles: list = []
    try:
        for index, layer in enumerate(backbone.get_submodule(family.layers)):
            handles += _hook_layer(index, layer, family, on_layer)
        yield
    finally:
        for handle in handles:
            handle.remove()


def _hook_layer(index: int, layer: torch.nn.Module, family: ALTIFamily, on_layer: Callable[[int, dict], None]) -> list:
    """The hooks of one layer (see :func:`record_layers`)."""
    record: dict[str, torch.Tensor] = {}

    def store(key: str, tensor: torch.Tensor) -> None:
        record[key] = tensor.detach()

    def probs(module, args, output):
        weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
        if weights is None:
            raise RuntimeError(f"layer {index}: the attention module {type(module).__name__} returned no attention "
                               f"probabilities; ALTI needs eager attention: load the model with "
                               f"attn_implementation='eager' (olacore.loading.load_model does)")
        store("probs", weights)

    def block_output(module, args, output=None):
        store("output", args[0] if family.block_output[1] == "input" else output)
        on_layer(index, dict(record))
        record.clear()

    handles = [
        layer.register_forward_pre_hook(
            lambda module, args, kwargs: store("residual", args[0] if args else kwargs["hidden_states"]),
            with_kwargs=True),
        layer.get_submodule(family.value).register_forward_hook(lambda module, args, output: store("values", output)),
        layer.get_submodule(family.attention).register_forward_hook(probs),
    ]
    if family.norm is not None:
        norm = layer.get_submodule(family.norm)
        handles.append(norm.register_forward_pre_hook(lambda module, args: store("norm_input", args[0])))
    target = layer.get_submodule(family.block_output[0])
    if family.block_output[1] == "input":
        handles.append(target.register_forward_pre_hook(block_output))
    else:
        handles.append(target.register_forward_hook(block_output))
    return handles
