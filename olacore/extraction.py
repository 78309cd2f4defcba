"""Attention extraction: the head-averaged attention of every layer, per text (paper section 3.1).

DESIGN.md section 2. Tokens are kept exactly as each tokenizer adds them (BOS for Llama/Gemma,
none for Qwen and for SmolLM2 from GGUF, ``[CLS]``/``[SEP]`` for BERT-like encoders). Every text
runs in a forward pass of its own, so its attention is computed from its own tokens alone, in
shapes set by its own length: it is bit-identical whichever other texts were extracted with it
(a cached map does not depend on which texts were missing from the cache; issue #13).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import torch

from olacore.loading import LoadedModel
from olacore.settings import fixed_threads
from olacore.timing import progress as progress_bar

__all__ = ["Extraction", "tokenize", "extract_attention", "ATTENTION_BUDGET_ENV"]


@dataclass
class Extraction:
    """Attention of one text (DESIGN.md section 2).

    Attributes:
        text: the input text.
        tokens: the ``T`` tokens as the tokenizer gives them, special tokens kept.
        offsets: ``T`` character spans ``(start, end)`` into ``text``, trimmed of surrounding
            whitespace (so ``text[start:end]`` is the token's visible characters); ``(0, 0)`` for
            special tokens; a whitespace-only token gets an empty span ``(start, start)``.
        attentions: ``(N, T, T)`` float32 CPU tensor, head-averaged, layer 1 first; each row is a
            probability distribution over keys (sums to 1); lower-triangular for causal models.
    """

    text: str
    tokens: list[str]
    offsets: list[tuple[int, int]]
    attentions: torch.Tensor




def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end)


def tokenize(model: LoadedModel, texts: Sequence[str]) -> list[tuple[list[int], list[str], list[tuple[int, int]]]]:
    """Token ids, tokens and trimmed character offsets of each text, checked against the context.

    Args:
        model: a :class:`LoadedModel` (only its tokenizer and ``max_length`` are used).
        texts: the texts; special tokens are added as the tokenizer adds them.

    Returns:
        One ``(ids, tokens, offsets)`` per text; offsets as in :class:`Extraction`.

    Raises:
        TypeError: ``texts`` is a single string, or holds a non-string.
        ValueError: a text is empty or whitespace only (names its index), or longer than the
            model's context (says the limit and the text's length in tokens).
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not a single string; wrap it in a list")
    result = []
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{index}] is a {type(text).__name__}, not a str")
        if not text.strip():
            raise ValueError(f"texts[{index}] is empty or whitespace only; remove it or give it some words")
        encoding = model.tokenizer(
            text,
            add_special_tokens=True,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            return_attention_mask=False,
            truncation=False,
            verbose=False,
        )
        ids = list(encoding["input_ids"])
        if len(ids) > model.max_length:
            raise ValueError(
                f"texts[{index}] has {len(ids)} tokens, longer than the context of {model.name!r} "
                f"({model.max_length} tokens, special tokens included); split or shorten it"
            )
        special = encoding["special_tokens_mask"]
        offsets = [
            (0, 0) if is_special else _trim(text, int(start), int(end))
            for (start, end), is_special in zip(encoding["offset_mapping"], special)
        ]
        tokens = model.tokenizer.convert_ids_to_tokens(ids)
        result.append((ids, tokens, offsets))
    return result


def _forward_kwargs(backbone: torch.nn.Module) -> dict:
    import inspect

    parameters = inspect.signature(backbone.forward).parameters
    return {"use_cache": False} if "use_cache" in parameters else {}


ATTENTION_BUDGET_ENV = "OLACORE_ATTENTION_GB"


def _check_memory(model: LoadedModel, length: int) -> None:
    """Refuse a text whose attention alone exceeds the memory budget.

    ``output_attentions`` holds every layer's ``(1, H, T, T)`` float32 attention at once:
    ``N * H * T^2 * 4`` bytes. The budget is ``$OLACORE_ATTENTION_GB`` gigabytes (default 4).

    Raises:
        MemoryError: the message gives the text's length, what it would need and how to proceed.
    """
    budget = float(os.environ.get(ATTENTION_BUDGET_ENV, "4")) * 2**30
    needed = model.num_layers * model.num_heads * 4 * length**2
    if needed > budget:
        raise MemoryError(
            f"a text of {length} tokens needs {needed / 2**30:.2f} GB of attention "
            f"in {model.name} ({model.num_layers} layers x {model.num_heads} heads x T^2 x 4 bytes), "
            f"more than the {budget / 2**30:.2f} GB budget; shorten the text or raise ${ATTENTION_BUDGET_ENV}"
        )


def extract_attention(
    model: LoadedModel,
    texts: Sequence[str],
    batch_size: int = 8,
    progress: bool = True,
) -> list[Extraction]:
    """Head-averaged attention of every layer for each text (DESIGN.md section 2; paper 3.1).

    Each text runs in a forward pass of its own (no padding, no batch): its result is
    bit-identical whatever other texts are in the call, so a cached map never depends on which
    texts were missing from the cache (issue #13). Batches were dropped for this: padding
    changes the last bits of every map, and even unpadded batches of equal length do for short
    texts (measured: 52 of 252 UD sentences of 4-11 tokens through MiniLM), because the matrix
    kernels chosen depend on the batch. For the same reason it runs on
    :data:`olacore.settings.COMPUTE_THREADS` torch thread(s) whatever the caller's setting (the
    caller's is restored). Cost against padded batches of 8, one thread: 1.1-1.3x for 50-word
    chunks, 1.6x for UD sentences. Runs under :func:`torch.inference_mode` on ``model.device``.

    Args:
        model: a :class:`LoadedModel`.
        texts: non-empty strings, each within ``model.max_length`` tokens.
        batch_size: kept for the callers that pass it (a positive int); texts no longer share
            a forward pass, whatever its value.
        progress: show a tqdm progress bar over the texts.

    Returns:
        One :class:`Extraction` per text, in input order; ``attentions`` is ``(N, T, T)``
        float32 on the CPU, row-stochastic, lower-triangular for causal models.

    Raises:
        TypeError / ValueError: as :func:`tokenize` (empty text, text longer than the context);
            ``batch_size`` < 1.
        RuntimeError: the backbone returned no attention (not loaded with eager attention).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    encoded = tokenize(model, texts)
    for ids, _, _ in encoded:
        _check_memory(model, len(ids))
    kwargs = _forward_kwargs(model.backbone)
    results: list[tuple] = []
    with torch.inference_mode(), fixed_threads():
        for text, (ids, tokens, offsets) in zip(
            texts, progress_bar(encoded, enabled=progress and bool(encoded), desc=f"attention {model.name}", leave=False)
        ):
            input_ids = torch.tensor([ids], dtype=torch.long)
            attention_mask = torch.ones_like(input_ids)
            outputs = model.backbone(
                input_ids=input_ids.to(model.device),
                attention_mask=attention_mask.to(model.device),
                output_attentions=True,
                return_dict=True,
                **kwargs,
            )
            attentions = getattr(outputs, "attentions", None)
            if not attentions or any(a is None for a in attentions):
                raise RuntimeError(
                    f"{model.name}: the backbone returned no attention weights; load it with "
                    f"attn_implementation='eager' (load_model does)"
                )
            # (N, 1, H, T, T) -> mean over heads -> (N, T, T)
            maps = torch.stack([layer[0].float().mean(dim=0) for layer in attentions]).to("cpu")
            # clone outside inference mode: callers get ordinary tensors they may edit in place
            results.append((text, tokens, offsets, maps))
    return [Extraction(text=text, tokens=tokens, offsets=offsets, attentions=maps.clone())
            for text, tokens, offsets, maps in results]
