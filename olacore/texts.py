"""The similarity texts: 50-word chunks of UD English EWT, with their word spans (paper 4.1).

Two recipes (:data:`TEXT_RECIPES`), read in place from :func:`olacore.settings.data_dir` (never written):

- ``"official"`` (the default): the official code's recipe for OntoNotes, on EWT's documents (``# newdoc id``
  blocks). The official ``data_utils/data_manager.py`` (``DataManager``, ``do_classify_data_generate``) appends each
  sentence's words to a buffer and, once it holds at least 50, keeps its first 50 as a chunk and empties it: chunks
  start at a sentence start within one document; a sentence's overflow and a document's short tail are dropped.
  ``ClassifyDataset`` in the official ``data_utils/ola_dataset.py`` joins the words with single spaces. EWT's
  *syntactic* words are tokenised as OntoNotes' Penn-Treebank tokens ("do n't"), so they are the words here.
- ``"stream"``: consecutive 50-word chunks of the split's *surface* tokens in file order, crossing sentence and
  document ends, detokenised with the treebank's ``SpaceAfter`` marks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import conllu

from olacore.alignment import WordText
from olacore.ud import read_ewt

__all__ = ["TEXT_RECIPES", "ChunkCounts", "official_chunks", "ewt_documents", "similarity_texts", "text_counts"]

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
    """Cut documents into chunks by the official recipe (module docstring; official ``data_utils/data_manager.py``).

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
    """The similarity texts (paper section 4.1) on UD English EWT, by one of :data:`TEXT_RECIPES`.

    The paper used the first 1000 chunks of OntoNotes as 1000 classes; here the first ``num_texts`` chunks of 50 words
    of EWT train, as :class:`olacore.alignment.WordText`.

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
