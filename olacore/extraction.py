"""Attention extraction: the head-averaged attention of every layer, per text (paper section 3.1).

DESIGN.md section 2. Tokens are kept exactly as each tokenizer adds them (BOS for Llama/Gemma,
none for Qwen and for SmolLM2 from GGUF, ``[CLS]``/``[SEP]`` for BERT-like encoders). A batch
only ever holds texts of the same token length, so nothing is padded and a text's attention is
computed from its own tokens alone: it is bit-identical whichever other texts were extracted
with it (a cached map does not depend on which texts were missing from the cache).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import torch

from olacore.loading import LoadedModel
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


def _memory_bounded_batches(
    model: LoadedModel, lengths: Sequence[int], order: Sequence[int], batch_size: int
) -> list[list[int]]:
    """Group texts (given longest first) into batches of equal token length that fit a memory budget.

    A batch holds only texts of one length, so no text is ever padded: padding changes the
    shapes of the reductions (softmax, ``attention @ values``) and with them the last bits of
    every map (measured: 46 of 100 EWT chunks through MiniLM differ, by up to 2e-8, between
    two batch compositions), which made a cached map depend on which other texts were missing
    from the cache. Batches of equal length are bit-identical to batches of one for every zoo
    model on the CPU (``tests/test_extraction.py``).

    ``output_attentions`` holds every layer's ``(B, H, T, T)`` float32 attention at once:
    ``N * H * B * T^2 * 4`` bytes. The budget is ``$OLACORE_ATTENTION_GB`` gigabytes (default 4).

    Raises:
        MemoryError: one text alone needs more than the budget; the message gives its length,
            what it would need and how to proceed.
    """
    budget = float(os.environ.get(ATTENTION_BUDGET_ENV, "4")) * 2**30
    bytes_per_cell = model.num_layers * model.num_heads * 4
    batches: list[list[int]] = []
    width = 0  # the token length of the current batch's texts
    for index, length in zip(order, lengths):
        if bytes_per_cell * length**2 > budget:
            raise MemoryError(
                f"a text of {length} tokens needs {bytes_per_cell * length**2 / 2**30:.2f} GB of attention "
                f"in {model.name} ({model.num_layers} layers x {model.num_heads} heads x T^2 x 4 bytes), "
                f"more than the {budget / 2**30:.2f} GB budget; shorten the text or raise ${ATTENTION_BUDGET_ENV}"
            )
        if (batches and length == width and len(batches[-1]) < batch_size
                and bytes_per_cell * width**2 * (len(batches[-1]) + 1) <= budget):
            batches[-1].append(index)
        else:
            batches.append([index])
            width = length
    return batches


def extract_attention(
    model: LoadedModel,
    texts: Sequence[str],
    batch_size: int = 8,
    progress: bool = True,
) -> list[Extraction]:
    """Head-averaged attention of every layer for each text (DESIGN.md section 2; paper 3.1).

    Texts are sorted by token length and run in batches of texts of *equal* length (nothing is
    padded), so each text's result is bit-identical to its one-by-one result and never depends on
    the other texts of the call. Runs under :func:`torch.inference_mode` on ``model.device``.

    Args:
        model: a :class:`LoadedModel`.
        texts: non-empty strings, each within ``model.max_length`` tokens.
        batch_size: at most this many texts (of equal token length) per forward pass (memory
            grows as ``batch * N * heads * T^2``).
        progress: show a tqdm progress bar over batches.

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
    order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i][0]))
    kwargs = _forward_kwargs(model.backbone)
    results: list[Extraction | None] = [None] * len(encoded)
    batches = _memory_bounded_batches(model, [len(encoded[i][0]) for i in order], order, batch_size)
    cropped: dict[int, torch.Tensor] = {}
    with torch.inference_mode():
        for batch in progress_bar(batches, enabled=progress and bool(batches), desc=f"attention {model.name}", leave=False):
            input_ids = torch.tensor([encoded[i][0] for i in batch], dtype=torch.long)  # equal lengths: no padding
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
            # (N, B, H, T, T) -> mean over heads -> (B, N, T, T)
            stacked = torch.stack([layer.float().mean(dim=1) for layer in attentions], dim=1)
            for row, i in enumerate(batch):
                cropped[i] = stacked[row].to("cpu").clone()  # frees the batch
    for i, (ids, tokens, offsets) in enumerate(encoded):
        # clone outside inference mode: callers get ordinary tensors they may edit in place
        results[i] = Extraction(text=texts[i], tokens=tokens, offsets=offsets, attentions=cropped.pop(i).clone())
    return results
