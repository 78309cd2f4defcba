"""Readers for the public data releases in the data folder (DESIGN.md section 5).

Everything here reads in place from :func:`olacore.settings.data_dir` and never writes there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

import conllu

from olacore.settings import data_file

EWT_SPLITS = ("train", "dev", "test")


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


def ewt_path(split: str):
    """Path of the UD English EWT ``split`` file ('train', 'dev' or 'test').

    Raises:
        ValueError: unknown split.
        FileNotFoundError: the file is missing (the message names ``OLACORE_DATA``).
    """
    if split not in EWT_SPLITS:
        raise ValueError(f"unknown EWT split {split!r}; choose one of {', '.join(EWT_SPLITS)}")
    return data_file("ud_english_ewt", f"en_ewt-ud-{split}.conllu")


@lru_cache(maxsize=3)
def read_ewt(split: str) -> tuple[conllu.TokenList, ...]:
    """All sentences of an EWT split, parsed by the ``conllu`` library, in document order."""
    with open(ewt_path(split), encoding="utf-8") as handle:
        return tuple(conllu.parse_incr(handle))


def _surface_tokens(sentence: conllu.TokenList) -> list[tuple[str, bool]]:
    """Surface tokens of a sentence as ``(form, space_after)``.

    A multi-word token (id ``3-4``) contributes its surface form once and hides the
    syntactic words it spans; empty nodes (id ``5.1``) have no surface form and are skipped.
    """
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


def similarity_texts(num_texts: int, words_per_text: int = 50, split: str = "train") -> list[WordText]:
    """The similarity texts of the paper's recipe, on UD English EWT (paper section 4.1).

    The paper cut OntoNotes into consecutive 50-word chunks in document order, ignoring
    sentence ends, and used the first 1000 chunks as 1000 classes. Here the surface tokens of
    EWT ``split`` are chunked the same way; each chunk is detokenised with the treebank's own
    ``SpaceAfter`` marks, so models see natural text, and each word keeps its character span.

    Args:
        num_texts: number of chunks, taken from the start of the split.
        words_per_text: words per chunk (paper: 50).
        split: EWT split to read.

    Returns:
        ``num_texts`` :class:`WordText` items.

    Raises:
        ValueError: ``num_texts`` or ``words_per_text`` is not positive, or the split holds
            fewer than ``num_texts`` chunks.
        FileNotFoundError: the EWT file is missing.
    """
    if num_texts <= 0 or words_per_text <= 0:
        raise ValueError("num_texts and words_per_text must be positive")
    stream = [tok for sentence in read_ewt(split) for tok in _surface_tokens(sentence)]
    available = len(stream) // words_per_text
    if num_texts > available:
        raise ValueError(f"EWT {split} holds only {available} chunks of {words_per_text} words; asked for {num_texts}")
    texts = []
    for index in range(num_texts):
        chunk = stream[index * words_per_text : (index + 1) * words_per_text]
        text, spans = "", []
        for position, (form, space_after) in enumerate(chunk):
            spans.append((len(text), len(text) + len(form)))
            text += form
            if space_after and position < len(chunk) - 1:
                text += " "
        texts.append(WordText(text=text, words=tuple(form for form, _ in chunk), spans=tuple(spans)))
    return texts


# ---------------------------------------------------------------------------------------------
# Dependency syntax: UD sentences with heads, relations, UPOS and character spans (paper 4.3)
# ---------------------------------------------------------------------------------------------


class AlignmentError(ValueError):
    """A UD sentence whose surface tokens cannot be found, in order, in its ``# text``."""


@dataclass(frozen=True)
class UDSentence:
    """One gold UD sentence, its syntactic words aligned to the sentence text.

    Words are UD *syntactic* words: a multi-word token (id ``3-4``, e.g. "don't" or Spanish
    "del") is split into the words it spans, as UD defines; empty nodes (id ``5.1``) are
    skipped (they carry no basic-tree head). All tuples have one entry per word.

    Attributes:
        sent_id: the ``# sent_id`` comment (or ``"#<index>"`` when absent).
        text: the ``# text`` comment: the string given to the models.
        words: word forms.
        spans: ``(start, end)`` character span of each word in ``text``. A word of a
            multi-word token gets the span of the whole surface token (the words of
            "don't" both get the span of "don't"), so ``text[start:end]`` is the word only
            for ordinary words.
        heads: head of each word, 1-based word index, ``0`` for the root.
        deprels: basic dependency relation of each word, subtype included ("nmod:poss").
        upos: universal part-of-speech tag of each word.
        xpos: language-specific tag of each word (EWT: the Penn Treebank tag set, that of the
            paper's CoNLL-2000 POS task); empty when the sentence was built without it.
    """

    sent_id: str
    text: str
    words: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]
    heads: tuple[int, ...]
    deprels: tuple[str, ...]
    upos: tuple[str, ...]
    xpos: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.words)

    def word_text(self) -> WordText:
        """The sentence as a :class:`WordText` (text, words, spans) for the map functions."""
        return WordText(text=self.text, words=self.words, spans=self.spans)


@dataclass(frozen=True)
class UDTreebank:
    """The aligned sentences of one treebank file, and the ones that could not be aligned.

    Attributes:
        name: where the sentences came from (e.g. ``"ewt-train"``).
        sentences: aligned sentences, in file order.
        unaligned: ``(sent_id, reason)`` of every sentence left out because its words could
            not be aligned to its text (or it had no ``# text``). Never dropped silently:
            :meth:`report` states the count.
    """

    name: str
    sentences: tuple[UDSentence, ...]
    unaligned: tuple[tuple[str, str], ...]

    def __len__(self) -> int:
        return len(self.sentences)

    def report(self) -> str:
        """One line: how many sentences were read, aligned and left out (with the first ids)."""
        total = len(self.sentences) + len(self.unaligned)
        line = f"{self.name}: {total} sentences, {len(self.sentences)} aligned, {len(self.unaligned)} not aligned"
        if self.unaligned:
            shown = ", ".join(f"{sid} ({why})" for sid, why in self.unaligned[:3])
            line += f" [{shown}{', ...' if len(self.unaligned) > 3 else ''}]"
        return line


def align_ud_sentence(sentence: conllu.TokenList, index: int = 0) -> UDSentence:
    """Align the syntactic words of one ``conllu`` sentence to its ``# text``.

    Each surface token (an ordinary word, or a multi-word token as a whole) must occur in the
    text at the cursor, after optional whitespace; its words get its span.

    Args:
        sentence: a sentence parsed by :func:`conllu.parse` / :func:`conllu.parse_incr`.
        index: position of the sentence in its file, for the fallback id.

    Returns:
        the :class:`UDSentence`.

    Raises:
        AlignmentError: no ``# text``, a surface token not found where expected, a head out
            of range, or no word at all.
    """
    meta = sentence.metadata or {}
    sent_id = meta.get("sent_id", f"#{index}")
    text = meta.get("text")
    if text is None:
        raise AlignmentError(f"{sent_id}: no '# text' comment")
    words, spans, heads, deprels, upos, xpos = [], [], [], [], [], []
    cursor = 0
    mwt_span: tuple[int, int] | None = None
    mwt_last = 0

    def locate(form: str) -> tuple[int, int]:
        nonlocal cursor
        while cursor < len(text) and text[cursor].isspace():
            cursor += 1
        if not text.startswith(form, cursor):
            raise AlignmentError(
                f"{sent_id}: token {form!r} not found at character {cursor} of the text "
                f"(text there: {text[cursor:cursor + len(form) + 5]!r})"
            )
        span = (cursor, cursor + len(form))
        cursor += len(form)
        return span

    for token in sentence:
        token_id = token["id"]
        if isinstance(token_id, tuple):
            if token_id[1] == "-":  # multi-word token: its words follow and share its span
                mwt_span, mwt_last = locate(token["form"]), token_id[2]
            continue  # empty node ("."): no surface form, no basic head
        if mwt_span is not None and token_id <= mwt_last:
            span = mwt_span
        else:
            mwt_span = None
            span = locate(token["form"])
        if token["head"] is None:
            raise AlignmentError(f"{sent_id}: word {token_id} has no head")
        words.append(token["form"])
        spans.append(span)
        heads.append(int(token["head"]))
        deprels.append(token["deprel"])
        upos.append(token["upos"])
        xpos.append(token["xpos"] or "_")
    if not words:
        raise AlignmentError(f"{sent_id}: no word")
    if any(not 0 <= head <= len(words) for head in heads):
        raise AlignmentError(f"{sent_id}: a head points outside the sentence")
    return UDSentence(
        sent_id=sent_id,
        text=text,
        words=tuple(words),
        spans=tuple(spans),
        heads=tuple(heads),
        deprels=tuple(deprels),
        upos=tuple(upos),
        xpos=tuple(xpos),
    )


def ud_treebank(sentences: Iterable[conllu.TokenList] | str, name: str = "conllu") -> UDTreebank:
    """Align every sentence of a CoNLL-U source; collect the ones that fail.

    Args:
        sentences: parsed sentences, or the CoNLL-U text itself.
        name: label used in :meth:`UDTreebank.report`.

    Returns:
        a :class:`UDTreebank`; unalignable sentences are listed in ``unaligned``.
    """
    if isinstance(sentences, str):
        sentences = conllu.parse(sentences)
    aligned, failed = [], []
    for index, sentence in enumerate(sentences):
        try:
            aligned.append(align_ud_sentence(sentence, index))
        except AlignmentError as error:
            failed.append(((sentence.metadata or {}).get("sent_id", f"#{index}"), str(error)))
    return UDTreebank(name=name, sentences=tuple(aligned), unaligned=tuple(failed))


@lru_cache(maxsize=3)
def read_ewt_syntax(split: str) -> UDTreebank:
    """UD English EWT ``split`` as aligned gold dependency trees (paper section 4.3).

    Args:
        split: 'train', 'dev' or 'test' (12,544 / 2,001 / 2,077 sentences in v2.16).

    Returns:
        a :class:`UDTreebank` named ``"ewt-<split>"``.

    Raises:
        ValueError: unknown split.
        FileNotFoundError: the EWT file is missing.
    """
    return ud_treebank(read_ewt(split), name=f"ewt-{split}")
