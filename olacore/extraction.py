"""Attention extraction: the head-averaged attention of every layer, per text (paper section 3.1).

As in the official code (models loaded by ``OLAModel`` in ``models/ola_model.py``), tokens are kept exactly as each
tokenizer adds them (BOS for Llama/Gemma, none for Qwen and for SmolLM2 from GGUF, ``[CLS]``/``[SEP]`` for BERT-like
encoders). Every text runs in a forward pass of its own, so its attention is bit-identical whichever other texts
were extracted with it (a cached map does not depend on which texts were missing from the cache).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Sequence

import torch

from olacore.loading import LoadedModel
from olacore.settings import env_positive_number, fixed_threads
from olacore.timing import progress as progress_bar

__all__ = ["Extraction", "check_texts", "tokenize", "extract_attention", "ATTENTION_BUDGET_ENV"]


@dataclass
class Extraction:
    """Attention of one text (paper section 3.1).

    Attributes:
        tokens: the ``T`` tokens as the tokenizer gives them, special tokens kept.
        offsets: ``T`` character spans ``(start, end)`` into ``text``, trimmed of surrounding whitespace; ``(0, 0)``
            for special tokens, ``(start, start)`` for a whitespace-only token.
        is_causal: the model is a decoder-only LM (:attr:`LoadedModel.is_causal`).
        attentions: ``(N, T, T)`` float32 CPU, head-averaged, layer 1 first; rows sum to 1; lower-triangular for
            causal models.
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
        ValueError: a text is empty, whitespace only or invisible (only zero-width spaces, BOMs, Hangul fillers,
            Braille blanks, ...), or not valid Unicode (names its index).
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
    """Token ids, tokens and trimmed character offsets of each text, checked against the context.

    One ``(ids, tokens, offsets)`` per text, offsets as in :class:`Extraction`; special tokens are added as the
    tokenizer adds them, and a special token's spelling inside a text (``"Press [SEP] to continue."``) is read as text.

    Raises:
        TypeError / ValueError: as :func:`check_texts`; a text of which the tokenizer keeps nothing (no token but the
            special ones); a text longer than the model's context (both lengths given).
    """
    result = []
    for index, text in enumerate(check_texts(texts)):
        encoding = model.tokenizer(
            text,
            add_special_tokens=True,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            return_attention_mask=False,
            truncation=False,
            verbose=False,
            # The text's own "[SEP]", "<bos>", "<|endoftext|>" are characters, not control tokens;
            # the tokenizer's own special tokens (BOS, CLS/SEP) are added as before.
            split_special_tokens=True,
        )
        ids = list(encoding["input_ids"])
        if len(ids) > model.max_length:
            raise ValueError(
                f"texts[{index}] has {len(ids)} tokens, longer than the context of {model.name!r} "
                f"({model.max_length} tokens, special tokens included); split or shorten it"
            )
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


def _forward_kwargs(backbone: torch.nn.Module) -> dict:
    import inspect

    parameters = inspect.signature(backbone.forward).parameters
    return {"use_cache": False} if "use_cache" in parameters else {}


ATTENTION_BUDGET_ENV = "OLACORE_ATTENTION_GB"


def _check_memory(model: LoadedModel, length: int) -> None:
    """Refuse a text whose attention (``N * H * T^2 * 4`` bytes) exceeds ``$OLACORE_ATTENTION_GB`` GB (default 4).

    Raises:
        MemoryError: the message gives the text's length, what it would need and how to proceed.
        ValueError: ``$OLACORE_ATTENTION_GB`` is not a positive number (one line naming it).
    """
    budget = env_positive_number(ATTENTION_BUDGET_ENV, 4.0) * 2**30
    needed = model.num_layers * model.num_heads * 4 * length**2
    if needed > budget:
        raise MemoryError(
            f"a text of {length} tokens needs {needed / 2**30:.2f} GB of attention "
            f"in {model.name} ({model.num_layers} layers x {model.num_heads} heads x T^2 x 4 bytes), "
            f"more than the {budget / 2**30:.2f} GB budget; shorten the text or raise ${ATTENTION_BUDGET_ENV}"
        )


def extract_attention(model: LoadedModel, texts: Sequence[str], progress: bool = True) -> list[Extraction]:
    """Head-averaged attention of every layer for each text (paper section 3.1).

    One :class:`Extraction` per text, in order. Each text runs in a forward pass of its own (padding, and even
    equal-length batches, change the last bits), on :data:`olacore.settings.COMPUTE_THREADS` thread(s) whatever the
    caller's setting (restored after), under :func:`torch.inference_mode` on ``model.device``: a result is
    bit-identical whatever other texts are in the call. Cost against padded batches: up to 1.6x (book/design.md).

    Raises:
        TypeError / ValueError: as :func:`tokenize` (empty text, text longer than the context).
        RuntimeError: the backbone returned no attention (not loaded with eager attention).
    """
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
    return [Extraction(text=text, tokens=tokens, offsets=offsets, is_causal=model.is_causal, attentions=maps.clone())
            for text, tokens, offsets, maps in results]
