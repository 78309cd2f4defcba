"""The similarity texts (50-word chunks of UD English EWT, with their word spans) and the alignment of token maps onto them.

Texts (paper section 4.1), by one of :data:`TEXT_RECIPES`, read in place from :func:`olacore.settings.data_dir`:

- ``"official"`` (the default): the official recipe for OntoNotes (``DataManager.do_classify_data_generate`` in
  ``data_utils/data_manager.py``), on EWT's documents (``# newdoc id`` blocks): each sentence's words go into a
  buffer; once it holds at least 50, its first 50 are a chunk and it is emptied. Chunks start at a sentence start
  within one document; a sentence's overflow and a document's short tail are dropped. The words are joined by single
  spaces (``ClassifyDataset``, ``data_utils/ola_dataset.py``); EWT's *syntactic* words are tokenised as OntoNotes'
  Penn-Treebank tokens ("do n't"), so they are the words here.
- ``"stream"``: consecutive 50-word chunks of the split's *surface* tokens in file order, crossing sentence and
  document ends, detokenised with the treebank's ``SpaceAfter`` marks.

Token maps of different tokenizers are compared after one of three alignments, ``(..., T, T)`` token maps in:

- :func:`resize_maps`, the paper's: each map resized to ``(S, S)`` as torchvision's ``Resize(antialias=True)`` in
  ``ClassifyDataset`` of the official ``olas_retrieval.py`` and ``olas_visual_model.py``; maps paired by text only.
- :func:`pool_to_words`, ours: rows and columns pooled onto the words by character offsets, ``(W, W)`` for a
  ``W``-word text, no resampling, rows stochastic.
- :func:`first_subtoken_maps`: each word's first sub-token's rows and columns, ``(W, W)``. The official parser scores
  words there (``begin_mask`` of ``map_ola_data`` in ``data_utils/dp_utils.py``) but its adapter reads the whole
  token map (``AxialTransformerDPAdapter`` in ``models/adapters.py``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Sequence

import conllu
import torch
import torch.nn.functional as F

from olacore.corpora import read_ewt

__all__ = ["TEXT_RECIPES", "ChunkCounts", "official_chunks", "ewt_documents", "similarity_texts", "text_counts",
           "WordText", "word_spans", "resize_maps", "word_assignment", "pool_to_words", "first_token_indices",
           "first_tokens", "first_subtoken_maps"]


TEXT_RECIPES = ("official", "stream")


@dataclass(frozen=True)
class ChunkCounts:
    """What the official recipe kept and dropped while making its chunks.

    Attributes:
        documents: documents read (up to the one that gave the last chunk asked for).
        documents_used: documents that gave at least one chunk.
        documents_skipped: documents shorter than one chunk (they give none).
        words_dropped: words read but in no chunk.
    """

    chunks: int
    documents: int
    documents_used: int
    documents_skipped: int
    words_read: int
    words_dropped: int


def official_chunks(
    documents: Iterable[Sequence[Sequence[str]]], words_per_text: int = 50, limit: int | None = None
) -> tuple[list[tuple[str, ...]], ChunkCounts]:
    """Cut documents into chunks by the official recipe (``data_utils/data_manager.py``).

    ``documents``: sequences of sentences of words; ``limit``: stop after this many chunks (``None``: read all).
    Returns ``(chunks, counts)``: tuples of ``words_per_text`` words (paper: 50) in document order, and
    :class:`ChunkCounts` over the documents read.
    """
    chunks: list[tuple[str, ...]] = []
    documents_read = used = skipped = words_read = 0
    for document in documents:
        if limit is not None and len(chunks) >= limit:
            break
        documents_read += 1
        before, buffer = len(chunks), []
        for sentence in document:
            words_read += len(sentence)
            if limit is not None and len(chunks) >= limit:
                continue  # the rest of this document is read (and counted) but gives no chunk
            buffer.extend(sentence)
            if len(buffer) >= words_per_text:
                chunks.append(tuple(buffer[:words_per_text]))
                buffer = []
        if len(chunks) > before:
            used += 1
        elif sum(len(s) for s in document) < words_per_text:
            skipped += 1
    counts = ChunkCounts(chunks=len(chunks), documents=documents_read, documents_used=used,
                         documents_skipped=skipped, words_read=words_read,
                         words_dropped=words_read - words_per_text * len(chunks))
    return chunks, counts


def _syntactic_words(sentence: conllu.TokenList) -> list[str]:
    """The syntactic words of a sentence (integer ids): multi-word tokens' parts, not their surface form."""
    return [token["form"] for token in sentence if isinstance(token["id"], int)]


def ewt_documents(split: str = "train") -> list[list[list[str]]]:
    """EWT ``split`` as documents (``# newdoc id`` blocks) of sentences of syntactic words, in file order.

    Raises:
        ValueError: unknown split.
        FileNotFoundError: the EWT file is missing.
    """
    documents: list[list[list[str]]] = []
    for sentence in read_ewt(split):
        if "newdoc id" in sentence.metadata or not documents:
            documents.append([])
        documents[-1].append(_syntactic_words(sentence))
    return documents


def _surface_tokens(sentence: conllu.TokenList) -> list[tuple[str, bool]]:
    """Surface tokens of a sentence as ``(form, space_after)``: a multi-word token once, empty nodes skipped."""
    tokens: list[tuple[str, bool]] = []
    skip_until = 0
    for token in sentence:
        token_id = token["id"]
        misc = token["misc"] or {}
        space_after = misc.get("SpaceAfter") != "No"
        if isinstance(token_id, tuple) and token_id[1] == "-":  # multi-word token
            tokens.append((token["form"], space_after))
            skip_until = token_id[2]
        elif isinstance(token_id, tuple):  # empty node
            continue
        elif token_id <= skip_until:
            continue
        else:
            tokens.append((token["form"], space_after))
    return tokens


def _word_text(tokens: Sequence[tuple[str, bool]]) -> WordText:
    text, spans = "", []
    for position, (form, space_after) in enumerate(tokens):
        spans.append((len(text), len(text) + len(form)))
        text += form
        if space_after and position < len(tokens) - 1:
            text += " "
    return WordText(text=text, words=tuple(form for form, _ in tokens), spans=tuple(spans))


def _check(num_texts: int, recipe: str) -> None:
    if recipe not in TEXT_RECIPES:
        raise ValueError(f"unknown text recipe {recipe!r}; choose one of {', '.join(TEXT_RECIPES)} "
                         "('official': the official code's document-bounded chunks, 'stream': consecutive chunks)")
    if isinstance(num_texts, bool) or not hasattr(type(num_texts), "__index__"):  # ints, numpy ints; not 2.5
        raise TypeError(f"num_texts must be an int, got {type(num_texts).__name__} {num_texts!r}")
    if num_texts <= 0:
        raise ValueError(f"num_texts must be positive, got {num_texts}")


def similarity_texts(num_texts: int, recipe: str = "official") -> list[WordText]:
    """The first ``num_texts`` 50-word chunks of EWT train by ``recipe`` (paper section 4.1: the first 1000 of
    OntoNotes, one class each).

    Raises:
        ValueError: an unknown recipe, ``num_texts`` not positive, or too few chunks in EWT train.
        FileNotFoundError: the EWT file is missing.
    """
    _check(num_texts, recipe)
    if recipe == "official":
        chunks, counts = official_chunks(ewt_documents("train"), limit=num_texts)
        if len(chunks) < num_texts:
            raise ValueError(f"EWT train holds only {len(chunks)} chunks of 50 words by the official recipe "
                             f"({counts.documents_skipped} documents shorter than one chunk); asked for {num_texts}")
        return [_word_text([(word, True) for word in chunk]) for chunk in chunks]
    stream = [tok for sentence in read_ewt("train") for tok in _surface_tokens(sentence)]
    available = len(stream) // 50
    if num_texts > available:
        raise ValueError(f"EWT train holds only {available} chunks of 50 words; asked for {num_texts}")
    return [_word_text(stream[i * 50 : (i + 1) * 50]) for i in range(num_texts)]


def text_counts(num_texts: int) -> ChunkCounts:
    """:class:`ChunkCounts` of the official recipe for the first ``num_texts`` chunks of EWT train.

    Raises:
        ValueError, FileNotFoundError: as :func:`similarity_texts`.
    """
    _check(num_texts, "official")
    return official_chunks(ewt_documents("train"), limit=num_texts)[1]


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
    """Resize square maps to ``size x size``, bilinear and antialiased, as ``transforms.Resize(antialias=True)``
    after sink cleaning in the official ``olas_retrieval.py`` and ``olas_visual_model.py``.

    ``(..., T, T)`` float -> ``(..., S, S)``, same dtype and device, rows not renormalised (paper: ``S = 50``).
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
    """Pool token x token maps onto words (our addition to the paper).

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
    nothing renormalised (spans as :func:`word_assignment`). The official adapter attends over the whole token map
    and reads only the dependents at first sub-tokens; this grid is the cheaper one.

    Raises:
        ValueError: a word has no token.
    """
    index = torch.tensor(first_token_indices(token_offsets, word_spans), device=maps.device)
    return maps.index_select(-2, index).index_select(-1, index)
