"""Aligning token maps of different tokenizers: resize, pool onto words, or pick first sub-tokens.

Paper section 4.1 and the official similarity scripts (named below). Different tokenizers give maps
of different sizes. Three ways to line them up:

- :func:`resize_maps`, the paper's way: every token x token map is resized to ``S x S``
  (bilinear, antialiased: torchvision's ``Resize(antialias=True)`` in ``ClassifyDataset`` of the
  official ``olas_retrieval.py`` and ``olas_visual_model.py``) and maps are paired only by text.
- :func:`pool_to_words`, our addition: token rows and columns are pooled onto the words of
  the text using the tokenizer's character offsets, so every model gives a ``W x W`` map
  for a ``W``-word text, without resampling, and rows stay stochastic.

- :func:`first_subtoken_maps`: the rows and columns of each word's first sub-token, read from
  the full token map (nothing renormalised). The official parser scores each word at its first
  sub-token (the ``begin_mask`` of ``map_ola_data`` in the official ``data_utils/dp_utils.py``),
  but its adapter reads the whole token map first (``AxialTransformerDPAdapter`` in the official
  ``models/adapters.py``); this alignment keeps only the rows and columns it scores.
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
        words: the words, in order.
        spans: ``(start, end)`` character offsets of each word in ``text``
            (``text[start:end] == word``).
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

    ``extend`` follows UAX #29's Extend and Format classes: combining marks (Mn, Mc, Me:
    accents, Indic vowel signs, variation selectors), format characters (Cf: soft hyphen,
    zero-width (non-)joiners, word joiner, direction marks) except the zero-width space, and
    emoji skin-tone modifiers. ``skip``: control characters and the zero-width space, which
    are never part of a word.
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

    Characters that belong inside a word never split it (UAX #29, rule WB4): combining marks,
    Indic vowel signs, variation selectors, emoji skin tones and format characters such as the
    soft hyphen (``"co\u00adoperation"`` is one word) or the zero-width (non-)joiner stay with
    the word or symbol they are in; a zero-width joiner also joins the next symbol (emoji
    sequences). An apostrophe between word characters is inside the word (``"don't"``).
    Control characters and the zero-width space are no part of any word, and a span made only
    of invisible characters is no word.

    Returns:
        ``[(start, end), ...]`` with ``text[start:end]`` the word, in order.
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

    The official ``olas_retrieval.py`` and ``olas_visual_model.py`` resize with torchvision's
    ``transforms.Resize(antialias=True)`` (bilinear on tensors), after sink cleaning.

    Args:
        maps: ``(..., T, T)`` float tensor.
        size: output side ``S`` (paper: 50).

    Returns:
        ``(..., S, S)`` tensor, same dtype and device. Rows are not renormalised.
    """
    lead = maps.shape[:-2]
    flat = maps.reshape(-1, 1, *maps.shape[-2:])
    out = F.interpolate(flat, size=(size, size), mode="bilinear", align_corners=False, antialias=True)
    return out.reshape(*lead, size, size)


def word_assignment(
    token_offsets: Sequence[tuple[int, int]], word_spans: Sequence[tuple[int, int]]
) -> torch.Tensor:
    """Soft assignment of tokens to words by character overlap.

    Args:
        token_offsets: ``T`` character spans of the tokens; ``(0, 0)`` marks a special token.
        word_spans: ``W`` character spans of the words in the same text.

    Returns:
        ``(W, T)`` float64 tensor; entry ``[w, t]`` is the share of token ``t``'s characters
        that fall in word ``w``, renormalised over words. A column sums to 1 when the token
        overlaps some word, and is all zero for special and whitespace-only tokens.

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

    Key tokens of a word are summed (a token shared by two words is split by character
    overlap) and query tokens of a word are averaged. Attention to special tokens (BOS,
    [CLS], [SEP]) and whitespace tokens has no word to go to: it is dropped and each row
    renormalised, so rows of the result are stochastic whenever some word receives mass.

    Args:
        maps: ``(..., T, T)`` float tensor (rows: queries, columns: keys).
        token_offsets: ``T`` character spans of the tokens, ``(0, 0)`` for special tokens.
        word_spans: ``W`` character spans of the words.

    Returns:
        ``(..., W, W)`` tensor, same dtype and device as ``maps``.

    Raises:
        ValueError: a word has no token (:func:`word_assignment`).
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
    """Index of each word's first sub-token: the first token overlapping the word's span.

    Args:
        token_offsets: ``T`` character spans of the tokens, ``(0, 0)`` for special tokens.
        word_spans: ``W`` character spans of the words.

    Returns:
        ``W`` token indices (words of one multi-word token share theirs).

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

    ``out[..., i, j] = maps[..., t_i, t_j]`` with ``t_i`` the first token of word ``i``
    (:func:`first_token_indices`). Unlike :func:`olacore.maps.pool_to_words` nothing is
    renormalised, and attention to special tokens and to later sub-tokens is dropped. The
    official parser does not drop it: its adapter (``AxialTransformerDPAdapter``, official
    ``models/adapters.py``) runs axial attention over the whole token map, and every token is a
    candidate head; only the dependents are read at first sub-tokens (official
    ``data_utils/dp_utils.py``). This alignment is the cheaper grid our adapter reads instead.

    Args:
        maps: ``(..., T, T)`` token maps.
        token_offsets: ``T`` token character spans.
        word_spans: ``W`` word character spans.

    Returns:
        ``(..., W, W)`` tensor, same dtype and device.

    Raises:
        ValueError: a word has no token.
    """
    index = torch.tensor(first_token_indices(token_offsets, word_spans), device=maps.device)
    return maps.index_select(-2, index).index_select(-1, index)
