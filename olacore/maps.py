"""Making attention maps of different models comparable (DESIGN.md section 2).

Different tokenizers give maps of different sizes. Two ways to line them up:

- :func:`resize_maps`, the paper's way: every token x token map is resized to ``S x S``
  (bilinear, antialiased) and maps are paired only by text.
- :func:`pool_to_words`, our addition: token rows and columns are pooled onto the words of
  the text using the tokenizer's character offsets, so every model gives a ``W x W`` map
  for a ``W``-word text, without resampling, and rows stay stochastic.

:func:`clean_sinks` removes attention sinks as the official preprocessing does, and
:func:`mirror_causal` fills the upper triangle of a causal map (the TOA input).
"""

from __future__ import annotations

from typing import Sequence

import re
import unicodedata

import torch
import torch.nn.functional as F

__all__ = ["word_spans", "resize_maps", "word_assignment", "pool_to_words", "clean_sinks", "mirror_causal"]


_INVISIBLE = {"Mn", "Me", "Cf", "Cc"}  # combining marks, variation selectors, zero-width, control
_WORD = re.compile(r"(?:\w+(?:['’]\w+)*|[^\w\s])[\u0300-\u036f\u200b-\u200f\ufe00-\ufe0f\U0001f3fb-\U0001f3ff]*")


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the words of a free text: runs of word characters, and each
    punctuation mark or symbol on its own (a stand-in for a treebank's tokenisation).
    Combining marks, variation selectors, zero-width characters and emoji skin tones stay
    with the character before them; a span made only of such invisible characters is no word.

    Returns:
        ``[(start, end), ...]`` with ``text[start:end]`` the word, in order.
    """
    return [
        match.span()
        for match in _WORD.finditer(text)
        if any(unicodedata.category(char) not in _INVISIBLE for char in match.group())
    ]


def resize_maps(maps: torch.Tensor, size: int) -> torch.Tensor:
    """Resize square maps to ``size x size`` as the official code does (bilinear, antialiased).

    Args:
        maps: ``(..., T, T)`` float tensor.
        size: output side ``S`` (paper: 50).

    Returns:
        ``(..., S, S)`` tensor, same dtype and device. Rows are not renormalised.

    Raises:
        ValueError: maps are not square or ``size`` is not positive.
    """
    if maps.ndim < 2 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(f"maps must be square (..., T, T); got shape {tuple(maps.shape)}")
    if size <= 0:
        raise ValueError(f"size must be positive; got {size}")
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
    """Pool token x token maps onto words (our addition to the paper, DESIGN.md section 2).

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
        ValueError: ``maps`` and ``token_offsets`` disagree on ``T``, or a word has no token.
    """
    if maps.shape[-1] != len(token_offsets) or maps.shape[-2] != len(token_offsets):
        raise ValueError(
            f"maps are {tuple(maps.shape[-2:])} but there are {len(token_offsets)} token offsets"
        )
    share = word_assignment(token_offsets, word_spans).to(device=maps.device, dtype=maps.dtype)
    members = (share > 0).to(maps.dtype)
    query_mean = members / members.sum(1, keepdim=True)
    pooled = query_mean @ maps @ share.transpose(0, 1)
    mass = pooled.sum(-1, keepdim=True)
    return pooled / torch.where(mass > 0, mass, torch.ones_like(mass))


def clean_sinks(maps: torch.Tensor, causal: bool, num_std: float = 3.0) -> torch.Tensor:
    """Remove attention sinks as the official preprocessing does (DESIGN.md section 2).

    In every row the largest entry and every entry above ``mean + num_std * std`` are
    zeroed, with mean and (population) standard deviation taken over the row's valid
    entries (the causal part ``j <= i`` for a causal model), and the row is renormalised.

    Args:
        maps: ``(..., T, T)`` float tensor of row-stochastic maps.
        causal: whether the maps come from a causal model (only ``j <= i`` is valid).
        num_std: threshold in standard deviations (paper: 3).

    Returns:
        ``(..., T, T)`` tensor, same dtype and device. A row whose whole mass was flagged
        (the first row of a causal map, say) becomes all zeros.

    Raises:
        ValueError: maps are not square.
    """
    if maps.ndim < 2 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(f"maps must be square (..., T, T); got shape {tuple(maps.shape)}")
    size = maps.shape[-1]
    valid = torch.ones(size, size, dtype=torch.bool, device=maps.device)
    if causal:
        valid = valid.tril()
    count = valid.sum(-1, keepdim=True).to(maps.dtype)
    values = maps * valid
    mean = values.sum(-1, keepdim=True) / count
    std = (((maps - mean) * valid) ** 2).sum(-1, keepdim=True).div(count).sqrt()
    flagged = (maps > mean + num_std * std) & valid
    argmax = values.masked_fill(~valid, float("-inf")).argmax(-1, keepdim=True)
    flagged = flagged.scatter(-1, argmax, True)
    kept = values.masked_fill(flagged, 0.0)
    mass = kept.sum(-1, keepdim=True)
    return kept / torch.where(mass > 0, mass, torch.ones_like(mass))


def mirror_causal(maps: torch.Tensor) -> torch.Tensor:
    """Fill the upper triangle of causal maps with the transpose of the lower one (TOA input).

    Args:
        maps: ``(..., T, T)`` lower-triangular tensor.

    Returns:
        ``(..., T, T)`` symmetric tensor ``L + L^T - diag(L)``.
    """
    lower = maps.tril()
    return lower + lower.transpose(-1, -2).triu(1)
