"""The cached pipeline: texts -> attention -> OLA -> token-level maps of any channel.

One part of the package's data flow (module map in :mod:`olacore`). Each step is cached in a
:class:`olacore.store.TensorStore`, one entry per (model fingerprint, text, settings), so that a
larger text set reuses the entries of a smaller one and a warm notebook never loads a model:

- :func:`cached_attention`: the ``(N, T, T)`` head-averaged attention of
  :func:`olacore.extraction.extract_attention`.
- :func:`cached_ola`: OLA orders ``0..K`` and the rollout, computed in float64 from the attention
  and stored in float32 (small: a warm run reads no attention at all).
- :func:`token_maps`: the ``(C, T, T)`` maps of named channels (:mod:`olacore.channels`) per
  text, each taken from the cached *source* that computes it (``"ola"``: :func:`cached_ola`;
  ``"attention"``: :func:`cached_attention`; ``"alti"``: :func:`olacore.alti.cached_alti`;
  further sources are added with :func:`register_source`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from olacore import channels as vocabulary
from olacore.extraction import Extraction, extract_attention, per_text
from olacore.loading import LoadedModel, model_fingerprint, model_kind
from olacore.ola import attention_rollout, order_level_attention
from olacore.settings import check_compute_options, fixed_threads
from olacore.store import TensorStore

__all__ = [
    "cached_per_text",
    "TokenMaps",
    "token_maps",
    "register_source",
    "OLAResult",
    "cached_attention",
    "cached_ola",
]

# How attention is extracted (olacore.extraction); part of every attention key.
EXTRACTION_SETTINGS = {
    "dtype": "float32",
    "attn_implementation": "eager",
    "heads": "mean",
    "special_tokens": "as the tokenizer adds them",
    "offsets": "whitespace-trimmed, (0, 0) for special tokens",
    # One text per forward pass, so an entry never depends on which other texts were extracted
    # with it; entries of the earlier padded batches are not reused.
    "batches": "one text per forward pass",
    "threads": "olacore.settings.COMPUTE_THREADS = 1",
}
# How OLA is computed from it; part of every OLA key (with EXTRACTION_SETTINGS: OLA is made of attention).
OLA_SETTINGS = {"compute_dtype": "float64", "store_dtype": "float32", "rollout": "prod(A/2 + I/2)"}


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not a single string; wrap it in a list")
    texts = list(texts)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{index}] is a {type(text).__name__}, not a str")
        if not text.strip():
            raise ValueError(f"texts[{index}] is empty or whitespace only; remove it or give it some words")
        bad = next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
        if bad is not None:  # an undecodable byte read with errors="surrogateescape", or a broken pair
            raise ValueError(f"texts[{index}] is not valid Unicode: character {bad} is a lone surrogate "
                             f"{text[bad]!r}; decode the text with its real encoding (e.g. latin-1) first")
    return texts


def _fingerprint(model: str | LoadedModel) -> str:
    return model.fingerprint if isinstance(model, LoadedModel) else model_fingerprint(model)


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

    Args:
        model: a model name (zoo, folder or Hugging Face id: loaded only if some text misses
            the cache) or a :class:`LoadedModel` (its ``fingerprint`` keys the cache, so a
            modified copy must carry its own).
        texts: non-empty strings.
        workers: processes extracting the texts the cache lacks, one thread each
            (:func:`olacore.extraction.per_text`; :func:`olacore.settings.cpu_workers` gives one
            per core). The default, 1, extracts in this process: a script that passes more must
            guard its top level with ``if __name__ == "__main__":`` (spawned processes import it).
        device: where to load the model on a miss (default CUDA if available); ignored for a
            :class:`LoadedModel`.
        progress: tqdm bar while extracting the misses.
        store: the store; default ``TensorStore()`` under ``$OLACORE_CACHE/tensors``.

    Returns:
        One :class:`Extraction` per text, in order; ``attentions`` ``(N, T, T)`` float32 CPU,
        identical whether read from the cache or computed.

    Raises:
        ValueError: unknown model (lists the zoo names), empty text or one that is not valid
            Unicode (names its index), text longer than the model's context (gives both
            lengths), ``workers < 1``.
        TypeError: a text or ``workers`` of the wrong type.
        RuntimeError: a device torch does not know or this machine lacks.
        ModuleNotFoundError / ImportError: a zoo model's package is missing (pip line given).
    """
    return cached_per_text(
        model, texts, kind="attention", settings=EXTRACTION_SETTINGS, compute=extract_attention,
        tensors_of=lambda e: {"attentions": e.attentions},
        rebuild=lambda text, tensors, meta: Extraction(text, list(meta["tokens"]),
                                                       [tuple(span) for span in meta["offsets"]], tensors["attentions"]),
        workers=workers, device=device, progress=progress, store=store)


def cached_per_text(
    model: str | LoadedModel,
    texts: Sequence[str],
    *,
    kind: str,
    settings: dict[str, Any],
    compute: Callable[..., list[Any]],
    tensors_of: Callable[[Any], dict[str, torch.Tensor]],
    rebuild: Callable[[str, dict[str, torch.Tensor], dict[str, Any]], Any],
    workers: int = 1,
    device: str | torch.device | None = None,
    progress: bool = True,
    store: TensorStore | None = None,
) -> list[Any]:
    """A per-text computation on a model, cached per (model fingerprint, text, ``settings``).

    The one caching rule of every forward-pass product (attention, ALTI): each text's entry is
    looked up; the texts the store lacks are computed by ``compute`` (one text per pass, in
    ``workers`` processes: :func:`olacore.extraction.per_text`) and stored with their tokens,
    offsets and the model's kind; a text given twice is computed once. A read-back result is
    identical to a computed one.

    Args:
        model: model name or :class:`LoadedModel` (its ``fingerprint`` keys the store).
        texts: non-empty strings.
        kind: the entry kind in the key (``"attention"``, ``"alti"``).
        settings: everything about the computation that changes its result (in the key).
        compute: ``(LoadedModel, texts, progress=...) -> results``, top level (it may run in a
            worker process); each result has ``text``, ``tokens`` and ``offsets``.
        tensors_of: a result's tensors to store.
        rebuild: ``(text, tensors, meta) -> result`` from a stored entry.
        workers, device, progress, store: as for :func:`cached_attention`.

    Returns:
        One result per text, in order (a repeated text gets its own copy).
    """
    texts = _check_texts(texts)
    check_compute_options(workers, device)
    store = store if store is not None else TensorStore()
    fingerprint = _fingerprint(model)
    keys = [store.key(kind=kind, model=fingerprint, text=text, settings=settings) for text in texts]
    found: dict[str, Any] = {}
    missing: dict[str, str] = {}  # key -> text, each distinct text once
    for text, key in zip(texts, keys):
        if key in found or key in missing:
            continue
        entry = store.get(key)
        if entry is None:
            missing[key] = text
        else:
            found[key] = rebuild(text, *entry)
    if missing:
        causal = model.is_causal if isinstance(model, LoadedModel) else model_kind(model) == "causal"
        computed = per_text(compute, model, list(missing.values()), device=device, workers=workers, progress=progress)
        for key, result in zip(missing, computed):
            meta = {"model": fingerprint, "text": result.text, "tokens": result.tokens,
                    "offsets": [list(span) for span in result.offsets], "is_causal": causal}
            store.put_or_warn(key, tensors_of(result), meta)
            found[key] = result
    results, given = [], set()
    for text, key in zip(texts, keys):  # a repeated text gets a copy of its result
        first = found[key]
        if key in given:
            meta = {"tokens": first.tokens, "offsets": first.offsets, "is_causal": getattr(first, "is_causal", None)}
            first = rebuild(text, {name: t.clone() for name, t in tensors_of(first).items()}, meta)
        results.append(first)
        given.add(key)
    return results


@dataclass
class OLAResult:
    """OLA and rollout of one text (paper section 3.1, derived in the book's first chapter).

    Attributes:
        text, tokens, offsets: as in :class:`~olacore.extraction.Extraction`.
        is_causal: the model is a decoder-only LM (maps are lower-triangular).
        num_layers: ``N`` of the model.
        orders: ``(max_order + 1, T, T)`` float32 CPU; ``orders[k]`` is the k-th order OLA
            (``orders[0]`` the identity), each row-stochastic.
        rollout: ``(T, T)`` float32 CPU, the row-stochastic rollout ``prod_n (A^(n)/2 + I/2)``.
    """

    text: str
    tokens: list[str]
    offsets: list[tuple[int, int]]
    is_causal: bool
    num_layers: int
    orders: torch.Tensor
    rollout: torch.Tensor


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

    On a miss, the attention comes from :func:`cached_attention` (itself cached), and
    :func:`~olacore.ola.order_level_attention` and :func:`~olacore.ola.attention_rollout` run in
    float64; the results are stored in float32. An entry keeps the highest order computed so far:
    asking for fewer orders slices it, asking for more recomputes and replaces it.

    Args:
        model: model name or :class:`LoadedModel`, as for :func:`cached_attention`.
        texts: non-empty strings.
        max_order: highest order ``K``, ``0 <= K <= N``.
        workers, device, progress, store: as for :func:`cached_attention`.

    Returns:
        One :class:`OLAResult` per text, in order: ``orders`` ``(K + 1, T, T)`` and ``rollout``
        ``(T, T)``, float32 on the CPU.

    Raises:
        TypeError: ``max_order`` is not an int.
        ValueError: ``max_order`` negative or above the model's number of layers; and the
            errors of :func:`cached_attention`.
    """
    if isinstance(max_order, bool) or not isinstance(max_order, int):
        raise TypeError(f"max_order must be an int, got {type(max_order).__name__}")
    if max_order < 0:
        raise ValueError(f"max_order must be >= 0, got {max_order}")
    texts = _check_texts(texts)
    check_compute_options(workers, device)
    store = store if store is not None else TensorStore()
    fingerprint = _fingerprint(model)
    keys = [store.key(kind="ola", model=fingerprint, text=text, settings=OLA_SETTINGS, extraction=EXTRACTION_SETTINGS)
            for text in texts]
    results: list[OLAResult | None] = [None] * len(texts)
    missing: list[int] = []
    for index, (text, key) in enumerate(zip(texts, keys)):
        entry = store.get(key)
        if entry is not None:
            tensors, meta = entry
            if max_order > meta["num_layers"]:
                raise ValueError(
                    f"max_order must be between 0 and the number of layers N={meta['num_layers']}; got {max_order}"
                )
            if tensors["orders"].shape[0] > max_order:
                results[index] = OLAResult(
                    text=text,
                    tokens=list(meta["tokens"]),
                    offsets=[tuple(span) for span in meta["offsets"]],
                    is_causal=bool(meta["is_causal"]),
                    num_layers=int(meta["num_layers"]),
                    orders=tensors["orders"][: max_order + 1].clone(),
                    rollout=tensors["rollout"],
                )
                continue
        missing.append(index)
    if missing:
        extractions = cached_attention(
            model, [texts[i] for i in missing], workers=workers, device=device, progress=progress, store=store
        )
        causal = model.is_causal if isinstance(model, LoadedModel) else model_kind(model) == "causal"
        for index, extraction in zip(missing, extractions):
            attentions = extraction.attentions.double()
            num_layers = attentions.shape[0]
            if max_order > num_layers:
                raise ValueError(f"max_order must be between 0 and the number of layers N={num_layers}; got {max_order}")
            with fixed_threads():  # cached: the same bits whatever the caller's threads
                orders = order_level_attention(attentions, max_order).float()
                rollout = attention_rollout(attentions).float()
            store.put_or_warn(
                keys[index],
                {"orders": orders, "rollout": rollout},
                {
                    "model": fingerprint,
                    "text": extraction.text,
                    "tokens": extraction.tokens,
                    "offsets": [list(span) for span in extraction.offsets],
                    "is_causal": causal,
                    "num_layers": num_layers,
                },
            )
            results[index] = OLAResult(
                text=extraction.text,
                tokens=list(extraction.tokens),
                offsets=list(extraction.offsets),
                is_causal=causal,
                num_layers=num_layers,
                orders=orders,
                rollout=rollout,
            )
    return results



# ---------------------------------------------------------------------------------------------
# Token-level maps of named channels
# ---------------------------------------------------------------------------------------------


@dataclass
class TokenMaps:
    """The token-level maps of one text through one model, one per channel.

    Attributes:
        text, tokens, offsets: as in :class:`olacore.extraction.Extraction`.
        causal: the model is a decoder-only LM (maps are lower-triangular).
        model: the model's name.
        channels: the channel names (:mod:`olacore.channels`), in the order of ``maps``.
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


@dataclass
class _LayerRecord:
    """An :class:`Extraction` with the model's kind, as a channel source record."""

    text: str
    tokens: list[str]
    offsets: list[tuple[int, int]]
    is_causal: bool
    attentions: torch.Tensor


def _attention_source(model, texts, wanted, **settings) -> list[_LayerRecord]:
    causal = model.is_causal if isinstance(model, LoadedModel) else model_kind(model) == "causal"
    return [_LayerRecord(e.text, e.tokens, e.offsets, causal, e.attentions) for e in cached_attention(model, texts, **settings)]


def _alti_source(model, texts, wanted, **settings) -> list[Any]:
    from olacore.alti import cached_alti  # hooks into the model's layers: imported only when asked for

    return cached_alti(model, texts, **settings)


Source = Callable[..., list[Any]]
_SOURCES: dict[str, Source] = {"ola": _ola_source, "attention": _attention_source, "alti": _alti_source}


def register_source(name: str, producer: Source) -> None:
    """Register the producer of a channel source (e.g. ``"alti"``).

    Args:
        name: the source name that :class:`olacore.channels.Channel` entries refer to.
        producer: ``producer(model, texts, wanted_channels, *, workers, device, progress,
            store) -> records``: one record per text with ``text``, ``tokens``, ``offsets`` and
            ``is_causal`` attributes, from which each wanted channel's ``take`` reads its map.
    """
    _SOURCES[name] = producer


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

    Args:
        model: model name or :class:`LoadedModel`, as for :func:`cached_attention`.
        texts: non-empty strings.
        channels: channel names (:mod:`olacore.channels`), e.g. ``("order1", "rollout")``.
        workers, device, progress, store: as for :func:`cached_attention`.

    Returns:
        One :class:`TokenMaps` per text, in order.

    Raises:
        ValueError: an unknown or repeated channel (the message lists the vocabulary), a
            channel whose source is not registered, and the errors of the sources.
    """
    wanted = vocabulary.channels(channels)
    texts = _check_texts(texts)
    check_compute_options(workers, device)
    settings = dict(workers=workers, device=device, progress=progress, store=store)
    records: dict[str, list[Any]] = {}
    for source in dict.fromkeys(c.source for c in wanted):
        if source not in _SOURCES:
            raise ValueError(f"no producer for the channel source {source!r}; registered: {sorted(_SOURCES)}")
        records[source] = _SOURCES[source](model, texts, [c for c in wanted if c.source == source], **settings)
    name = model.name if isinstance(model, LoadedModel) else str(model)
    out = []
    for index, text in enumerate(texts):
        first = records[wanted[0].source][index]
        stack = torch.stack([c.take(records[c.source][index]).float() for c in wanted])
        out.append(TokenMaps(text=text, tokens=list(first.tokens), offsets=list(first.offsets),
                             causal=bool(first.is_causal), model=name, channels=tuple(c.name for c in wanted),
                             maps=stack))
    return out
