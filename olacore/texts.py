"""The similarity texts (50-word chunks of UD English EWT, with their word spans) and the alignment of token maps onto them.

Texts (paper section 4.1): ``"official"``, the official OntoNotes recipe (``DataManager.do_classify_data_generate``,
``data_utils/data_manager.py``) on EWT's documents and syntactic words; or ``"stream"``, consecutive 50-word chunks
of surface tokens. Alignments of ``(..., T, T)`` token maps: :func:`resize_maps` (the paper's, as ``ClassifyDataset``
in ``olas_retrieval.py``), :func:`pool_to_words` (ours) and :func:`first_subtoken_maps` (where the official parser
scores words, ``data_utils/dp_utils.py``).
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
           "WordText", "word_spans", "resize_maps", "word_assignment", "pool_to_words", "first_tokens",
           "first_subtoken_maps"]


TEXT_RECIPES = ("official", "stream")


@dataclass(frozen=True)
class ChunkCounts:
    """What the official recipe kept and dropped while making its chunks (``documents_skipped``: shorter than one)."""

    chunks: int
    documents: int
    documents_used: int
    documents_skipped: int
    words_read: int
    words_dropped: int


def official_chunks(
    documents: Iterable[Sequence[Sequence[str]]], words_per_text: int = 50, limit: int | None = None
) -> tuple[list[tuple[str, ...]], ChunkCounts]:
    """``(chunks, counts)``: documents (sentences of words) cut by the official recipe (``data_utils/data_manager.py``)
    into tuples of ``words_per_text`` words, at most ``limit`` of them."""
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
        documents[-1].append([token["form"] for token in sentence if isinstance(token["id"], int)])  # syntactic words
    return documents


def _surface_tokens(sentence: conllu.TokenList) -> list[tuple[str, bool]]:
    """Surface tokens of a sentence as ``(form, space_after)``: a multi-word token once, empty nodes skipped."""
    tokens: list[tuple[str, bool]] = []
    skip_until = 0
    for token in sentence:
        token_id = token["id"]
        if isinstance(token_id, tuple) and token_id[1] == "-":  # multi-word token: it stands for its words
            skip_until = token_id[2]
        elif isinstance(token_id, tuple) or token_id <= skip_until:  # an empty node, or a word of a multi-word token
            continue
        tokens.append((token["form"], (token["misc"] or {}).get("SpaceAfter") != "No"))
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
    if isinstance(num_texts, bool) or not hasattr(type(num_texts), "__index__") or num_texts <= 0:  # numpy ints too
        raise ValueError(f"num_texts must be a positive int, got {num_texts!r}")


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
    """A text with its words and their ``(start, end)`` character spans."""

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
    """``"word"``, ``"extend"`` (UAX #29 Extend and Format), ``"space"``, ``"skip"`` or ``"punct"``."""
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
    """Character spans of the words of a free text: runs of word characters (``"don't"`` one word; combining and
    format characters never split one), and each punctuation mark or symbol on its own."""
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
            # an extend character, the next word character, or the next mark of an emoji ZWJ sequence
            if (kind_here == "extend" or kind == kind_here == "word"
                    or kind == kind_here == "punct" and text[index - 1] == _ZWJ):
                index += 1
            elif (kind == "word" and text[index] in _APOSTROPHES and index + 1 < length
                  and classes[index + 1] == "word"):
                index += 2
            else:
                break
        spans.append((start, index))
    return spans


def resize_maps(maps: torch.Tensor, size: int) -> torch.Tensor:
    """``(..., T, T)`` -> ``(..., S, S)``, bilinear and antialiased as the official ``transforms.Resize(antialias=True)``
    (``olas_retrieval.py``); rows not renormalised (paper: ``S = 50``)."""
    lead = maps.shape[:-2]
    flat = maps.reshape(-1, 1, *maps.shape[-2:])
    out = F.interpolate(flat, size=(size, size), mode="bilinear", align_corners=False, antialias=True)
    return out.reshape(*lead, size, size)


def word_assignment(
    token_offsets: Sequence[tuple[int, int]], word_spans: Sequence[tuple[int, int]]
) -> torch.Tensor:
    """Soft assignment of tokens to words by character overlap: ``T`` token spans, ``W`` word spans -> ``(W, T)``
    float64, each column summing to 1 (0 for special tokens).

    Raises:
        ValueError: some word overlaps no token.
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
    """Pool token maps onto words (our addition to the paper): ``(..., T, T)`` -> ``(..., W, W)``, key tokens summed,
    query tokens averaged, rows renormalised.

    Raises:
        ValueError: a word has no token.
    """
    share = word_assignment(token_offsets, word_spans).to(device=maps.device, dtype=maps.dtype)
    members = (share > 0).to(maps.dtype)
    query_mean = members / members.sum(1, keepdim=True)
    pooled = query_mean @ maps @ share.transpose(0, 1)
    mass = pooled.sum(-1, keepdim=True)
    return pooled / torch.where(mass > 0, mass, torch.ones_like(mass))


def first_tokens(share: torch.Tensor) -> list[int]:
    """Each word's first sub-token from a :func:`word_assignment` share ``(W, T)``: ``W`` token indices."""
    return [int(torch.nonzero(row > 0)[0]) for row in share]


def first_subtoken_maps(
    maps: torch.Tensor,
    token_offsets: Sequence[tuple[int, int]],
    word_spans: Sequence[tuple[int, int]],
) -> torch.Tensor:
    """Word maps at each word's first sub-token (where the official parser scores): ``(..., W, W)``, not renormalised.

    Raises:
        ValueError: a word has no token.
    """
    index = torch.tensor(first_tokens(word_assignment(token_offsets, word_spans)), device=maps.device)
    return maps.index_select(-2, index).index_select(-1, index)
