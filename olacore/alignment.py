"""Aligning token maps of different tokenizers: resize, pool onto words, or pick first sub-tokens.

Paper section 4.1 and the official similarity scripts:

- :func:`resize_maps`, the paper's way: each map resized to ``S x S`` as torchvision's ``Resize(antialias=True)`` in
  ``ClassifyDataset`` of the official ``olas_retrieval.py`` and ``olas_visual_model.py``; maps paired by text only.
- :func:`pool_to_words`, our addition: rows and columns pooled onto the words by character offsets (``W x W`` per
  ``W``-word text, no resampling, rows stochastic).
- :func:`first_subtoken_maps`: each word's first sub-token's rows and columns. The official parser scores words
  there (``begin_mask`` of ``map_ola_data`` in ``data_utils/dp_utils.py``) but its adapter reads the whole token map
  (``AxialTransformerDPAdapter`` in ``models/adapters.py``); this keeps only the scored rows and columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import re
import unicodedata

import torch
import torch.nn.functional as F

__all__ = ["WordText", "word_spans", "resize_maps", "word_assignment", "pool_to_words", "first_token_indices", "first_tokens",
           "first_subtoken_maps"]


@dataclass(frozen=True)
class WordText:
    """A text with its word segmentation.

    Attributes:
        text: the string given to the models.
        spans: ``(start, end)`` character offsets of each word in ``text`` (``text[start:end] == word``).
    """

    text: str
    words: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, text: str) -> "WordText":
        """A free text segmented by :func:`word_spans` (runs of word characters, each punctuation mark)."""
        spans = tuple(word_spans(text))
        return cls(text=text, words=tuple(text[a:b] for a, b in spans), spans=spans)



_WORD_CHAR = re.compile(r"\w")
_APOSTROPHES = frozenset("'\u2019")
_ZWJ = "\u200d"
# Format characters that mark a break rather than glue one (UAX #29 leaves ZWSP out of Format).
_BREAKING_FORMAT = frozenset("\u200b")


def _char_class(char: str) -> str:
    """``"word"``, ``"extend"`` (belongs to the character before it), ``"space"``, ``"skip"`` or ``"punct"``.

    ``extend``: UAX #29 Extend and Format (combining marks, format characters but the zero-width space, emoji skin
    tones); ``skip``: control characters and the zero-width space.
    """
    if _WORD_CHAR.match(char):
        return "word"
    if char.isspace():
        return "space"
    category = unicodedata.category(char)
    if category in ("Mn", "Mc", "Me") or "\U0001f3fb" <= char <= "\U0001f3ff":
        return "extend"
    if category == "Cf":
        return "skip" if char in _BREAKING_FORMAT else "extend"
    if category == "Cc":
        return "skip"
    return "punct"


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the words of a free text: runs of word characters, and each
    punctuation mark or symbol on its own (a stand-in for a treebank's tokenisation).

    Characters inside a word never split it (UAX #29, WB4: combining marks, variation selectors, skin tones, format
    characters such as the soft hyphen, ``"co\u00adoperation"``); a zero-width joiner also joins the next symbol, and an
    apostrophe between word characters is inside the word (``"don't"``). Control characters, the zero-width space and
    spans of invisible characters only are no word. Returns ``(start, end)`` per word, in order.
    """
    classes = [_char_class(char) for char in text]
    spans: list[tuple[int, int]] = []
    index, length = 0, len(text)
    while index < length:
        kind = classes[index]
        if kind in ("space", "skip", "extend"):  # an extend here has nothing to attach to
            index += 1
            continue
        start = index
        index += 1
        while index < length:
            kind_here = classes[index]
            if kind_here == "extend":
                index += 1
            elif kind == "word" and kind_here == "word":
                index += 1
            elif (kind == "word" and text[index] in _APOSTROPHES and index + 1 < length
                  and classes[index + 1] == "word"):
                index += 2
            elif kind == "punct" and text[index - 1] == _ZWJ and kind_here == "punct":
                index += 1  # an emoji ZWJ sequence
            else:
                break
        spans.append((start, index))
    return spans


def resize_maps(maps: torch.Tensor, size: int) -> torch.Tensor:
    """Resize square maps to ``size x size`` as the official similarity scripts do (bilinear, antialiased).

    ``transforms.Resize(antialias=True)``, after sink cleaning, in the official ``olas_retrieval.py`` and
    ``olas_visual_model.py``. ``(..., T, T)`` float -> ``(..., S, S)``, same dtype and device, rows not renormalised
    (paper: ``S = 50``).
    """
    lead = maps.shape[:-2]
    flat = maps.reshape(-1, 1, *maps.shape[-2:])
    out = F.interpolate(flat, size=(size, size), mode="bilinear", align_corners=False, antialias=True)
    return out.reshape(*lead, size, size)


def word_assignment(
    token_offsets: Sequence[tuple[int, int]], word_spans: Sequence[tuple[int, int]]
) -> torch.Tensor:
    """Soft assignment of tokens to words by character overlap.

    ``T`` token spans (``(0, 0)``: a special token), ``W`` word spans of the same text -> ``(W, T)`` float64: ``[w, t]``
    is the share of token ``t``'s characters in word ``w``, renormalised over words (a column sums to 1, or to 0 for
    special and whitespace-only tokens).

    Raises:
        ValueError: some word overlaps no token (the offsets do not cover the text).
    """
    assign = torch.zeros(len(word_spans), len(token_offsets), dtype=torch.float64)
    for t, (t_start, t_end) in enumerate(token_offsets):
        if t_end <= t_start:
            continue
        for w, (w_start, w_end) in enumerate(word_spans):
            overlap = min(t_end, w_end) - max(t_start, w_start)
            if overlap > 0:
                assign[w, t] = overlap
    column_mass = assign.sum(0, keepdim=True)
    assign = assign / column_mass.clamp_min(1e-12)
    orphans = (assign.sum(1) == 0).nonzero().flatten().tolist()
    if orphans:
        raise ValueError(
            f"words {orphans} (character spans {[tuple(word_spans[w]) for w in orphans]}) overlap no "
            "token: the tokenizer dropped their characters (some tokenizers drop emoji, control or "
            "zero-width characters), or the offsets come from another text. Remove those "
            "characters, or leave these words out of word_spans."
        )
    return assign


def pool_to_words(
    maps: torch.Tensor,
    token_offsets: Sequence[tuple[int, int]],
    word_spans: Sequence[tuple[int, int]],
) -> torch.Tensor:
    """Pool token x token maps onto words (our addition to the paper; module docstring).

    ``(..., T, T)`` (rows: queries) -> ``(..., W, W)``, same dtype and device; spans as :func:`word_assignment`. Key
    tokens of a word are summed (a shared token split by character overlap), query tokens averaged; attention to
    special and whitespace tokens is dropped and rows renormalised, so they are stochastic whenever a word gets mass.

    Raises:
        ValueError: a word has no token.
    """
    share = word_assignment(token_offsets, word_spans).to(device=maps.device, dtype=maps.dtype)
    members = (share > 0).to(maps.dtype)
    query_mean = members / members.sum(1, keepdim=True)
    pooled = query_mean @ maps @ share.transpose(0, 1)
    mass = pooled.sum(-1, keepdim=True)
    return pooled / torch.where(mass > 0, mass, torch.ones_like(mass))


def first_token_indices(
    token_offsets: Sequence[tuple[int, int]], word_spans: Sequence[tuple[int, int]]
) -> list[int]:
    """Index of each word's first sub-token, the first token overlapping its span: ``W`` indices
    (words of one multi-word token share theirs); arguments as :func:`word_assignment`.

    Raises:
        ValueError: a word overlaps no token.
    """
    return first_tokens(word_assignment(token_offsets, word_spans))  # (W, T), raises on orphan words


def first_tokens(share: torch.Tensor) -> list[int]:
    """Each word's first sub-token from a :func:`word_assignment` share ``(W, T)``: ``W`` token indices."""
    return [int(torch.nonzero(row > 0)[0]) for row in share]


def first_subtoken_maps(
    maps: torch.Tensor,
    token_offsets: Sequence[tuple[int, int]],
    word_spans: Sequence[tuple[int, int]],
) -> torch.Tensor:
    """Word maps at each word's first sub-token: the rows and columns the official parser scores.

    ``out[..., i, j] = maps[..., t_i, t_j]``, ``t_i`` word ``i``'s first token: ``(..., W, W)``, same dtype and device,
    nothing renormalised (spans as :func:`word_assignment`). Departure: the official adapter
    (``AxialTransformerDPAdapter``, ``models/adapters.py``) attends over the whole token map, every token a candidate
    head, and reads only the dependents at first sub-tokens (``data_utils/dp_utils.py``); ours reads this cheaper grid.

    Raises:
        ValueError: a word has no token.
    """
    index = torch.tensor(first_token_indices(token_offsets, word_spans), device=maps.device)
    return maps.index_select(-2, index).index_select(-1, index)
