"""The cached pipeline: texts -> attention -> OLA, and ALTI -> token-level ``(C, T, T)`` maps of named channels.

One store entry per (model fingerprint, text, settings, device type, code digest: :class:`Product`), so a warm run
never loads a model.
"""

from __future__ import annotations

import copy
import dataclasses
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

__all__ = ["Product", "ATTENTION", "OLA", "device_type", "cached_per_text", "TokenMaps", "token_maps",
           "source_records", "OLAResult", "cached_attention", "cached_ola", "ALTI_SETTINGS", "ALTI",
           "cached_alti"]

# Part of every attention key.
EXTRACTION_SETTINGS = {
    "dtype": "float32",
    "attn_implementation": "eager",
    "heads": "mean",
    "special_tokens": "as the tokenizer adds them",
    "offsets": "whitespace-trimmed, (0, 0) for special tokens",
    "batches": "the bits of one text a forward pass; texts of equal length share a pass (no padding) where a "
               "self-test on the machine shows it gives those bits",
    "threads": "olacore.settings.COMPUTE_THREADS = 1",
}
# How OLA is computed from it; part of every OLA key (with EXTRACTION_SETTINGS: OLA is made of attention).
OLA_SETTINGS = {"compute_dtype": "float64", "store_dtype": "float32", "rollout": "prod(A/2 + I/2)"}


@dataclass(frozen=True)
class Product:
    """A per-text product of the pipeline (``kind``) and what its key holds besides model and text: settings
    (``parts``) and the :func:`olacore.store.code_digest` of the modules that compute it (``code``)."""

    kind: str
    parts: Mapping[str, Any]
    code: tuple[str, ...]

    def keys(self, fingerprint: str, texts: Sequence[str], device: str) -> list[str]:
        """The store key of each text; ``device``: ``"cpu"`` / ``"cuda"`` (:func:`device_type`)."""
        code = code_digest(*self.code)
        return [TensorStore.key(kind=self.kind, model=fingerprint, text=text, device=device, code=code, **self.parts)
                for text in texts]


ATTENTION = Product("attention", {"settings": EXTRACTION_SETTINGS}, ("olacore.pipeline", "olacore.extraction"))
OLA = Product("ola", {"settings": OLA_SETTINGS, "extraction": EXTRACTION_SETTINGS},
              ("olacore.pipeline", "olacore.extraction"))
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
    """The device type (``"cpu"``, ``"cuda"``) a result of ``model`` is computed on."""
    if isinstance(model, LoadedModel):
        return model.device.type
    return torch.device(device).type if device is not None else resolve_device(None).type


def _fingerprint(model: str | LoadedModel) -> str:
    return model.fingerprint if isinstance(model, LoadedModel) else model_fingerprint(model)


def _put(store: TensorStore, key: str, fingerprint: str, result: Any) -> None:
    """Store one per-text record (a dataclass) under ``key``: its tensor fields as tensors, the others as meta."""
    values = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    tensors = {name: value for name, value in values.items() if isinstance(value, torch.Tensor)}
    meta = {name: value for name, value in values.items() if name not in tensors}
    store.put_or_warn(key, tensors, {"model": fingerprint, **meta})


def _read(record: type, tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> Any:
    """The ``record`` dataclass of a stored entry (:func:`_put`)."""
    stored = {**meta, **tensors}
    values = {f.name: stored[f.name] for f in dataclasses.fields(record)}
    return record(**{**values, "offsets": [tuple(span) for span in values["offsets"]]})


def cached_per_text(model: str | LoadedModel, texts: Sequence[str], *, product: Product, record: type,
                    device: str | torch.device | None, compute: Callable[[list[str]], list[Any]], store: TensorStore,
                    accept: Callable[[Any], Any | None] = lambda stored: stored) -> list[Any]:
    """The one caching rule of the pipeline: one store entry per text, holding one ``record`` (a dataclass).

    Texts the store lacks, or whose stored record ``accept(record)`` refuses with ``None``, are computed by one
    ``compute(missing texts)`` call and stored. One result per text, in order; a repeated text is computed once and
    gets its own copy.
    """
    texts = check_texts(texts)
    fingerprint = _fingerprint(model)
    keys = product.keys(fingerprint, texts, device_type(model, device))
    found: dict[str, Any] = {}
    missing: dict[str, str] = {}  # key -> text, each distinct text once
    for text, key in zip(texts, keys):
        if key in found or key in missing:
            continue
        entry = store.get(key)
        result = None if entry is None else accept(_read(record, *entry))
        if result is None:
            missing[key] = text
        else:
            found[key] = result
    if missing:
        for key, result in zip(missing, compute(list(missing.values()))):
            _put(store, key, fingerprint, result)
            found[key] = result
    results, given = [], set()
    for key in keys:  # a repeated text gets a copy of its result
        results.append(copy.deepcopy(found[key]) if key in given else found[key])
        given.add(key)
    return results


def cached_attention(model: str | LoadedModel, texts: Sequence[str], *, workers: int = 1,
                     device: str | torch.device | None = None, progress: bool = True,
                     store: TensorStore | None = None) -> list[Extraction]:
    """:func:`~olacore.extraction.extract_attention`, cached per (model fingerprint, text): one :class:`Extraction`
    per text, ``attentions`` ``(N, T, T)`` float32 CPU.

    Args:
        model: a model name (loaded only on a cache miss) or a :class:`LoadedModel` (its ``fingerprint`` keys the
            cache: a modified copy must carry its own).
        workers: processes extracting the misses (:func:`olacore.workers.per_text`).
        device: where to load the model on a miss (default CUDA if available).
        store: default ``TensorStore()`` under ``$OLACORE_CACHE/tensors``.

    Raises:
        ValueError: unknown model (lists the zoo names), empty text, text longer than the model's context.
        ModuleNotFoundError / ImportError: a zoo model's package is missing (pip line given).
    """
    check_compute_options(workers, device)
    return cached_per_text(
        model, texts, product=ATTENTION, record=Extraction, device=device, store=store or TensorStore(),
        compute=lambda missing: per_text(extract_attention, model, missing, device=device, workers=workers,
                                         progress=progress))


def cached_alti(model: str | LoadedModel, texts: Sequence[str], *, workers: int = 1,
                device: str | torch.device | None = None, progress: bool = True,
                store: TensorStore | None = None) -> list[ALTIResult]:
    """:func:`olacore.alti.alti`, cached per text; arguments as for :func:`cached_attention`. The same forward pass
    stores the text's attention too, as :func:`cached_attention` entries (existing ones left).

    Raises:
        As :func:`olacore.alti.alti`, and :func:`~olacore.loading.load_model` for a name.
    """
    from olacore import alti  # inside: ALTI's code is in the ALTI key, not the attention and OLA keys

    store = store or TensorStore()

    def compute(missing: list[str]) -> list[ALTIResult]:
        passes = per_text(alti._alti_pass, model, missing, device=device, workers=workers, progress=progress)
        extractions = [p.extraction() for p in passes if p.attentions is not None]
        fingerprint = _fingerprint(model)
        for key, extraction in zip(ATTENTION.keys(fingerprint, [e.text for e in extractions],
                                                  device_type(model, device)), extractions):
            if key not in store:
                _put(store, key, fingerprint, extraction)
        return [p.alti() for p in passes]

    return cached_per_text(model, texts, product=ALTI, record=alti.ALTIResult, device=device, compute=compute,
                           store=store)


@dataclass
class OLAResult:
    """OLA and rollout of one text (paper section 3.1).

    Attributes:
        orders: ``(max_order + 1, T, T)`` float32 CPU; ``orders[k]`` the k-th order OLA (``orders[0]`` the identity).
        rollout: ``(T, T)`` float32 CPU, ``prod_n (A^(n)/2 + I/2)``.
    """

    text: str
    tokens: list[str]
    offsets: list[tuple[int, int]]
    is_causal: bool
    num_layers: int
    orders: torch.Tensor
    rollout: torch.Tensor


def _ola_of(extraction: Extraction, max_order: int) -> OLAResult:
    """OLA orders ``0..max_order`` and rollout of one extraction, in float64, stored in float32."""
    attentions = extraction.attentions.double()
    with fixed_threads():  # cached: the same bits whatever the caller's threads
        orders = order_level_attention(attentions, max_order).float()
        rollout = attention_rollout(attentions).float()
    return OLAResult(extraction.text, list(extraction.tokens), list(extraction.offsets), extraction.is_causal,
                     attentions.shape[0], orders, rollout)


def cached_ola(model: str | LoadedModel, texts: Sequence[str], max_order: int, *, workers: int = 1,
               device: str | torch.device | None = None, progress: bool = True,
               store: TensorStore | None = None) -> list[OLAResult]:
    """OLA orders ``0..max_order`` and rollout of each text, cached (paper section 3.1); computed in float64, stored
    in float32. ``max_order``: ``0 <= K <= N``; the other arguments as for :func:`cached_attention`.

    Raises:
        TypeError: ``max_order`` is not an int.
        ValueError: ``max_order`` negative or above the model's number of layers; as :func:`cached_attention`.
    """
    check_compute_options(workers, device)
    if isinstance(max_order, bool) or not isinstance(max_order, int):
        raise TypeError(f"max_order must be an int, got {type(max_order).__name__}")
    if max_order < 0:
        raise ValueError(f"max_order must be >= 0, got {max_order}")
    store = store or TensorStore()

    def accept(stored: OLAResult) -> OLAResult | None:
        """The stored OLA cut to ``max_order``, or ``None`` when it holds fewer orders than asked for."""
        if not 0 <= max_order <= stored.num_layers:
            raise ValueError(f"max_order must be between 0 and the number of layers N={stored.num_layers}; got "
                             f"{max_order}")
        if stored.orders.shape[0] <= max_order:
            return None
        return dataclasses.replace(stored, orders=stored.orders[: max_order + 1].clone())

    return cached_per_text(
        model, texts, product=OLA, record=OLAResult, device=device, store=store, accept=accept,
        compute=lambda missing: [_ola_of(e, max_order) for e in cached_attention(
            model, missing, workers=workers, device=device, progress=progress, store=store)])


# Token-level maps of named channels


@dataclass
class TokenMaps:
    """The token-level maps of one text through one model: ``maps`` ``(C, T, T)`` float32 CPU, one per channel."""

    text: str
    tokens: list[str]
    offsets: list[tuple[int, int]]
    causal: bool
    model: str
    channels: tuple[str, ...]
    maps: torch.Tensor


#: Each channel source's producer: ``(model, texts, wanted channels, **settings) -> records``.
_SOURCES: dict[str, Callable[..., list[Any]]] = {
    "ola": lambda model, texts, wanted, **settings: cached_ola(
        model, texts, max([c.order for c in wanted if c.order is not None], default=1), **settings),
    "attention": lambda model, texts, wanted, **settings: cached_attention(model, texts, **settings),
    "alti": lambda model, texts, wanted, **settings: cached_alti(model, texts, **settings),
}


def source_records(source: str, model: str | LoadedModel, texts: Sequence[str], channels: Sequence[Any] = (),
                   **settings: Any) -> list[Any]:
    """The cached records of one channel source (``"ola"``, ``"attention"`` or ``"alti"``) per text.

    Raises:
        ValueError: an unknown ``source`` (the message lists the sources).
    """
    if source not in _SOURCES:
        raise ValueError(f"no producer for the channel source {source!r}; the sources are {sorted(_SOURCES)}")
    return _SOURCES[source](model, texts, list(channels), **settings)


def token_maps(model: str | LoadedModel, texts: Sequence[str], channels: Sequence[str], *, workers: int = 1,
               device: str | torch.device | None = None, progress: bool = True,
               store: TensorStore | None = None) -> list[TokenMaps]:
    """The ``(C, T, T)`` token-level maps of the named channels (e.g. ``("order1", "rollout")``), per text.

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
