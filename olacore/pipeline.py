"""The cached pipeline: texts -> attention -> OLA, and ALTI -> token-level maps of any channel.

Each per-text product is cached in a :class:`olacore.store.TensorStore`, one entry per (model fingerprint, text,
settings, device type, code digest: :class:`Product`), so a larger text set reuses a smaller one's entries and a warm
run never loads a model. :func:`cached_attention` gives the ``(N, T, T)`` head-averaged attention, :func:`cached_ola`
OLA orders ``0..K`` and the rollout (computed in float64, stored in float32), :func:`cached_alti` ALTI's ``(N, T, T)``
contributions and rollout (storing the attention of the same forward pass), and :func:`token_maps` the ``(C, T, T)``
maps of named channels (:mod:`olacore.channels`), each from its source's cached record.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import torch

from olacore import channels as vocabulary
from olacore.extraction import Extraction, check_texts, extract_attention
from olacore.loading import LoadedModel, model_fingerprint
from olacore.ola import attention_rollout, order_level_attention
from olacore.settings import check_compute_options, fixed_threads, resolve_device
from olacore.store import TensorStore, code_digest
from olacore.workers import per_text

if TYPE_CHECKING:
    from olacore.alti import ALTIResult

__all__ = [
    "Product",
    "ATTENTION",
    "OLA",
    "device_type",
    "cached_per_text",
    "TokenMaps",
    "token_maps",
    "source_records",
    "OLAResult",
    "cached_attention",
    "cached_ola",
    "store_attention",
    "ALTI_SETTINGS",
    "ALTI",
    "cached_alti",
]

# How attention is extracted (olacore.extraction); part of every attention key.
EXTRACTION_SETTINGS = {
    "dtype": "float32",
    "attn_implementation": "eager",
    "heads": "mean",
    "special_tokens": "as the tokenizer adds them",
    "offsets": "whitespace-trimmed, (0, 0) for special tokens",
    # The bits of one text per forward pass, so an entry never depends on which other texts were extracted with it
    # (entries of the earlier padded batches are not reused); texts of equal length share a pass, without padding,
    # where a self-test on the running machine shows it gives exactly those bits (olacore.extraction.run_batched).
    "batches": "the bits of one text a forward pass; texts of equal length share a pass (no padding) where a "
               "self-test on the machine shows it gives those bits",
    "threads": "olacore.settings.COMPUTE_THREADS = 1",
}
# How OLA is computed from it; part of every OLA key (with EXTRACTION_SETTINGS: OLA is made of attention).
OLA_SETTINGS = {"compute_dtype": "float64", "store_dtype": "float32", "rollout": "prod(A/2 + I/2)"}


@dataclass(frozen=True)
class Product:
    """A per-text product of the pipeline and what its store key holds besides model and text.

    Attributes:
        kind: ``"attention"``, ``"ola"``, ``"alti"``.
        parts: the settings it is computed with (read when a key is made).
        code: the package modules that compute it; their :func:`olacore.store.code_digest` (they and what they
            import) is part of the key.
    """

    kind: str
    parts: Mapping[str, Any]
    code: tuple[str, ...]

    def keys(self, fingerprint: str, texts: Sequence[str], device: str) -> list[str]:
        """The store key of each text: ``(kind, model fingerprint, text, device type, code digest, **parts)``.

        ``device``: ``"cpu"`` / ``"cuda"`` (:func:`device_type`); a GPU run never reads or writes a CPU entry.
        """
        code = code_digest(*self.code)
        return [TensorStore.key(kind=self.kind, model=fingerprint, text=text, device=device, code=code, **self.parts)
                for text in texts]


# Attention is also stored by ALTI's forward pass (cached_alti), which runs extraction's code with the hooks of
# olacore.extraction in the model: those are in the attention and OLA keys too.
ATTENTION = Product("attention", {"settings": EXTRACTION_SETTINGS}, ("olacore.pipeline", "olacore.extraction"))
OLA = Product("ola", {"settings": OLA_SETTINGS, "extraction": EXTRACTION_SETTINGS},
              ("olacore.pipeline", "olacore.extraction"))
# What the contributions depend on besides model and text (a cache-key part).
ALTI_SETTINGS = {
    "method": "ALTI (Ferrando et al. 2022)",
    "distance": "L1",
    "contribution": "max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), rows normalised",
    "residual": "included (diagonal)",
    "norm": "linearised at the real statistics (sqrt(var + eps) / sqrt(mean sq + eps))",
    "rollout": "C^(N) ... C^(1), float64",
    "dtype": "float32",
    "batches": "the bits of one text a forward pass; texts of equal length share a pass (no padding) where a "
               "self-test on the machine shows it gives those bits",
    "threads": "olacore.settings.COMPUTE_THREADS = 1",
}
# ALTI's mathematics (olacore.alti) is in the ALTI key only: this module imports it inside functions.
ALTI = Product("alti", {"settings": ALTI_SETTINGS}, ("olacore.pipeline", "olacore.alti"))


def device_type(model: str | LoadedModel, device: str | torch.device | None = None) -> str:
    """The device type (``"cpu"``, ``"cuda"``) a result of ``model`` is computed on: a :class:`LoadedModel`'s own,
    else ``device`` (default CUDA when available). Nothing runs on it."""
    if isinstance(model, LoadedModel):
        return model.device.type
    return torch.device(device).type if device is not None else resolve_device(None).type


def _put(store: TensorStore, key: str, fingerprint: str, result: Any, tensors: dict[str, torch.Tensor],
         meta_fields: tuple[str, ...] = ()) -> None:
    """Store one computed result under ``key``: its tensors, tokens, offsets, model kind and ``meta_fields``."""
    meta = {"model": fingerprint, "text": result.text, "tokens": result.tokens,
            "offsets": [list(span) for span in result.offsets], "is_causal": result.is_causal,
            **{name: getattr(result, name) for name in meta_fields}}
    store.put_or_warn(key, tensors, meta)


def cached_per_text(
    model: str | LoadedModel,
    texts: Sequence[str],
    *,
    product: Product,
    device: str | torch.device | None,
    compute: Callable[[list[str]], list[Any]],
    tensors_of: Callable[[Any], dict[str, torch.Tensor]],
    rebuild: Callable[[str, dict[str, torch.Tensor], dict[str, Any]], Any],
    meta_fields: tuple[str, ...] = (),
    store: TensorStore | None = None,
) -> list[Any]:
    """The one caching rule of the pipeline: a per-text product, one store entry per text.

    Key: :meth:`Product.keys` (model fingerprint, text, :func:`device_type`, settings, code). The texts the store lacks, or
    whose entry ``rebuild(text, tensors, meta)`` refuses with ``None``, are computed by one ``compute(missing texts)``
    call (results with ``text``, ``tokens``, ``offsets``, ``is_causal``) and stored atomically: ``tensors_of(result)``,
    tokens, offsets, model kind and ``meta_fields``. Returns one result per text, in order; a text given twice is
    computed once and gets its own copy; a read-back result is identical to a computed one. ``store``: default
    ``TensorStore()`` under ``$OLACORE_CACHE/tensors``.
    """
    texts = check_texts(texts)
    store = store if store is not None else TensorStore()
    fingerprint = model.fingerprint if isinstance(model, LoadedModel) else model_fingerprint(model)
    keys = product.keys(fingerprint, texts, device_type(model, device))
    found: dict[str, Any] = {}
    missing: dict[str, str] = {}  # key -> text, each distinct text once
    for text, key in zip(texts, keys):
        if key in found or key in missing:
            continue
        entry = store.get(key)
        result = None if entry is None else rebuild(text, *entry)
        if result is None:
            missing[key] = text
        else:
            found[key] = result
    if missing:
        for key, result in zip(missing, compute(list(missing.values()))):
            _put(store, key, fingerprint, result, tensors_of(result), meta_fields)
            found[key] = result
    results, given = [], set()
    for key in keys:  # a repeated text gets a copy of its result
        results.append(copy.deepcopy(found[key]) if key in given else found[key])
        given.add(key)
    return results


def cached_attention(
    model: str | LoadedModel,
    texts: Sequence[str],
    *,
    workers: int = 1,
    device: str | torch.device | None = None,
    progress: bool = True,
    store: TensorStore | None = None,
) -> list[Extraction]:
    """:func:`~olacore.extraction.extract_attention`, cached per (model fingerprint, text).

    Returns one :class:`Extraction` per text (also the ``"attention"`` source record of :func:`token_maps`),
    ``attentions`` ``(N, T, T)`` float32 CPU, identical whether read or computed.

    Args:
        model: a model name (loaded only on a cache miss) or a :class:`LoadedModel` (its ``fingerprint`` keys the
            cache: a modified copy must carry its own).
        workers: processes extracting the misses, one thread each (:func:`olacore.workers.per_text`).
        device: where to load the model on a miss (default CUDA if available).
        store: default ``TensorStore()`` under ``$OLACORE_CACHE/tensors``.

    Raises:
        ValueError: unknown model (lists the zoo names), empty text, text longer than the model's context.
        ModuleNotFoundError / ImportError: a zoo model's package is missing (pip line given).
    """
    check_compute_options(workers, device)
    return cached_per_text(
        model, texts, product=ATTENTION, device=device,
        compute=lambda missing: per_text(extract_attention, model, missing, device=device, workers=workers,
                                         progress=progress),
        tensors_of=lambda e: {"attentions": e.attentions},
        rebuild=lambda text, tensors, meta: Extraction(text, list(meta["tokens"]), [tuple(s) for s in meta["offsets"]],
                                                       bool(meta["is_causal"]), tensors["attentions"]),
        store=store)


def store_attention(model: str | LoadedModel, extractions: Sequence[Extraction], *,
                    device: str | torch.device | None = None, store: TensorStore | None = None) -> None:
    """Keep attention computed elsewhere (ALTI's forward pass) as :func:`cached_attention` entries, under the keys
    it makes; an entry the store holds already is left as it is. ``extractions``: bit-identical to
    :func:`~olacore.extraction.extract_attention`'s (the caller's promise); other arguments as for
    :func:`cached_attention`."""
    store = store if store is not None else TensorStore()
    fingerprint = model.fingerprint if isinstance(model, LoadedModel) else model_fingerprint(model)
    keys = ATTENTION.keys(fingerprint, [e.text for e in extractions], device_type(model, device))
    for key, extraction in zip(keys, extractions):
        if key not in store:
            _put(store, key, fingerprint, extraction, {"attentions": extraction.attentions})


def cached_alti(
    model: str | LoadedModel,
    texts: Sequence[str],
    *,
    workers: int = 1,
    device: str | torch.device | None = None,
    progress: bool = True,
    store: TensorStore | None = None,
) -> list[ALTIResult]:
    """:func:`olacore.alti.alti`, cached per (model fingerprint, text, device type, :data:`ALTI_SETTINGS`, code).

    One entry per text, read back identical; a corrupt entry is recomputed. Arguments as for :func:`cached_attention`.
    The forward pass that computes a text's ALTI also gives its head-averaged attention, bit-identical to
    extraction's: where the store lacks that attention entry it is stored too (:func:`store_attention`), so a later
    :func:`cached_attention` or :func:`cached_ola` of the text runs no forward pass.

    Raises:
        As :func:`olacore.alti.alti`, and :func:`~olacore.loading.load_model` for a name.
    """
    from olacore import alti  # inside: ALTI's code is in the ALTI key, not the attention and OLA keys

    store = store if store is not None else TensorStore()

    def compute(missing: list[str]) -> list[ALTIResult]:
        passes = per_text(alti._alti_pass, model, missing, device=device, workers=workers, progress=progress)
        store_attention(model, [p.extraction() for p in passes if p.attentions is not None], device=device,
                        store=store)
        return [p.alti() for p in passes]

    return cached_per_text(
        model, texts, product=ALTI, device=device, compute=compute,
        tensors_of=lambda r: {"contributions": r.contributions, "rollout": r.rollout},
        rebuild=lambda text, tensors, meta: alti.ALTIResult(
            text, list(meta["tokens"]), [tuple(s) for s in meta["offsets"]], bool(meta["is_causal"]),
            tensors["contributions"], tensors["rollout"]),
        store=store)


@dataclass
class OLAResult:
    """OLA and rollout of one text (paper section 3.1, derived in the book's first chapter).

    Attributes:
        text, tokens, offsets, is_causal: as in :class:`~olacore.extraction.Extraction`.
        num_layers: ``N`` of the model.
        orders: ``(max_order + 1, T, T)`` float32 CPU; ``orders[k]`` the k-th order OLA (``orders[0]`` the identity),
            row-stochastic.
        rollout: ``(T, T)`` float32 CPU, the row-stochastic rollout ``prod_n (A^(n)/2 + I/2)``.
    """

    text: str
    tokens: list[str]
    offsets: list[tuple[int, int]]
    is_causal: bool
    num_layers: int
    orders: torch.Tensor
    rollout: torch.Tensor


def _check_order(max_order: int, num_layers: int) -> None:
    if max_order > num_layers:
        raise ValueError(f"max_order must be between 0 and the number of layers N={num_layers}; got {max_order}")


def _ola_of(extraction: Extraction, max_order: int) -> OLAResult:
    """OLA orders ``0..max_order`` and rollout of one extraction, in float64, stored in float32."""
    attentions = extraction.attentions.double()
    _check_order(max_order, attentions.shape[0])
    with fixed_threads():  # cached: the same bits whatever the caller's threads
        orders = order_level_attention(attentions, max_order).float()
        rollout = attention_rollout(attentions).float()
    return OLAResult(extraction.text, list(extraction.tokens), list(extraction.offsets), extraction.is_causal,
                     attentions.shape[0], orders, rollout)


def _ola_entry(text: str, tensors: dict[str, torch.Tensor], meta: dict[str, Any], max_order: int) -> OLAResult | None:
    """The OLA of a stored entry, or ``None`` when it holds fewer orders than asked for."""
    _check_order(max_order, meta["num_layers"])
    if tensors["orders"].shape[0] <= max_order:
        return None
    return OLAResult(text, list(meta["tokens"]), [tuple(s) for s in meta["offsets"]], bool(meta["is_causal"]),
                     int(meta["num_layers"]), tensors["orders"][: max_order + 1].clone(), tensors["rollout"])


def cached_ola(
    model: str | LoadedModel,
    texts: Sequence[str],
    max_order: int,
    *,
    workers: int = 1,
    device: str | torch.device | None = None,
    progress: bool = True,
    store: TensorStore | None = None,
) -> list[OLAResult]:
    """OLA orders ``0..max_order`` and rollout of each text, cached (paper section 3.1).

    ``max_order``: ``0 <= K <= N``; the other arguments as for :func:`cached_attention`, from which the attention comes.
    Computed in float64, stored in float32 (:class:`OLAResult`). An entry keeps the highest order computed so far:
    fewer orders slice it, more recompute and replace it.

    Raises:
        TypeError: ``max_order`` is not an int.
        ValueError: ``max_order`` negative or above the model's number of layers; as :func:`cached_attention`.
    """
    check_compute_options(workers, device)
    if isinstance(max_order, bool) or not isinstance(max_order, int):
        raise TypeError(f"max_order must be an int, got {type(max_order).__name__}")
    if max_order < 0:
        raise ValueError(f"max_order must be >= 0, got {max_order}")
    store = store if store is not None else TensorStore()
    return cached_per_text(
        model, texts, product=OLA, device=device,
        compute=lambda missing: [_ola_of(e, max_order) for e in cached_attention(
            model, missing, workers=workers, device=device, progress=progress, store=store)],
        tensors_of=lambda r: {"orders": r.orders, "rollout": r.rollout},
        rebuild=lambda text, tensors, meta: _ola_entry(text, tensors, meta, max_order),
        meta_fields=("num_layers",), store=store)


# ---------------------------------------------------------------------------------------------
# Token-level maps of named channels
# ---------------------------------------------------------------------------------------------


@dataclass
class TokenMaps:
    """The token-level maps of one text through one model, one per channel.

    Attributes:
        text, tokens, offsets: as in :class:`olacore.extraction.Extraction`.
        causal: the model is a decoder-only LM (maps are lower-triangular).
        channels: the channel names, in the order of ``maps``.
        maps: ``(C, T, T)`` float32 CPU tensor.
    """

    text: str
    tokens: list[str]
    offsets: list[tuple[int, int]]
    causal: bool
    model: str
    channels: tuple[str, ...]
    maps: torch.Tensor


def _ola_source(model, texts, wanted, **settings) -> list[OLAResult]:
    max_order = max([c.order for c in wanted if c.order is not None], default=1)
    return cached_ola(model, texts, max_order, **settings)


def _attention_source(model, texts, wanted, **settings) -> list[Extraction]:
    return cached_attention(model, texts, **settings)


def _alti_source(model, texts, wanted, **settings) -> list[ALTIResult]:
    return cached_alti(model, texts, **settings)


_SOURCES: dict[str, Callable[..., list[Any]]] = {"ola": _ola_source, "attention": _attention_source,
                                                  "alti": _alti_source}


def source_records(source: str, model: str | LoadedModel, texts: Sequence[str], channels: Sequence[Any] = (),
                   **settings: Any) -> list[Any]:
    """The cached records of one channel source (``"ola"``, ``"attention"`` or ``"alti"``) per text.

    ``channels``: the :class:`olacore.channels.Channel` entries wanted (``"ola"`` computes the highest order they
    name); ``settings``: those of :func:`cached_attention`.

    Raises:
        ValueError: an unknown ``source`` (the message lists the sources).
    """
    if source not in _SOURCES:
        raise ValueError(f"no producer for the channel source {source!r}; the sources are {sorted(_SOURCES)}")
    return _SOURCES[source](model, texts, list(channels), **settings)


def token_maps(
    model: str | LoadedModel,
    texts: Sequence[str],
    channels: Sequence[str],
    *,
    workers: int = 1,
    device: str | torch.device | None = None,
    progress: bool = True,
    store: TensorStore | None = None,
) -> list[TokenMaps]:
    """The ``(C, T, T)`` token-level maps of the named channels, per text (cached sources).

    ``channels``: names of :mod:`olacore.channels`, e.g. ``("order1", "rollout")``; the other arguments as for
    :func:`cached_attention`.

    Raises:
        ValueError: an unknown or repeated channel, and the errors of the sources.
    """
    check_compute_options(workers, device)
    wanted = vocabulary.channels(channels)
    texts = check_texts(texts)
    settings = dict(workers=workers, device=device, progress=progress, store=store)
    records: dict[str, list[Any]] = {}
    # ALTI first: its forward pass also stores the attention that "ola" and "attention" read (one pass per text).
    for source in sorted(dict.fromkeys(c.source for c in wanted), key=lambda source: source != "alti"):
        records[source] = source_records(source, model, texts, [c for c in wanted if c.source == source], **settings)
    name = model.name if isinstance(model, LoadedModel) else str(model)
    out = []
    for index, text in enumerate(texts):
        first = records[wanted[0].source][index]
        stack = torch.stack([c.take(records[c.source][index]).float() for c in wanted])
        out.append(TokenMaps(text=text, tokens=list(first.tokens), offsets=list(first.offsets),
                             causal=bool(first.is_causal), model=name, channels=tuple(c.name for c in wanted),
                             maps=stack))
    return out
