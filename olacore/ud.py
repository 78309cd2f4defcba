"""Universal Dependencies: UD English EWT read in place, aligned to its text, with its label sets.

Paper section 4.3; the release and its licence are listed on the book's page "Models and data". Every syntactic
word is aligned to the sentence's own ``# text`` (what the models read); a sentence that cannot be aligned is
counted, never dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

import conllu
import numpy as np

from olacore.settings import DATA_ENV, data_file

__all__ = [
    "EWT_SPLITS", "UPOS_TAGS", "UD_RELATIONS", "read_ewt", "ewt_path",
    "AlignmentError", "UDSentence", "UDTreebank", "align_ud_sentence", "ud_treebank", "read_ewt_syntax",
    "ewt_splits", "long_sentences", "evenly_spread",
]

EWT_SPLITS = ("train", "dev", "test")

#: The 17 universal part-of-speech tags (UD v2).
UPOS_TAGS: tuple[str, ...] = (
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM",
    "PART", "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X",
)
#: The 37 universal dependency relations (UD v2), without subtypes.
UD_RELATIONS: tuple[str, ...] = (
    "acl", "advcl", "advmod", "amod", "appos", "aux", "case", "cc", "ccomp", "clf",
    "compound", "conj", "cop", "csubj", "dep", "det", "discourse", "dislocated", "expl",
    "fixed", "flat", "goeswith", "iobj", "list", "mark", "nmod", "nsubj", "nummod", "obj",
    "obl", "orphan", "parataxis", "punct", "reparandum", "root", "vocative", "xcomp",
)


def ewt_path(split: str):
    """Path of the UD English EWT ``split`` file ('train', 'dev' or 'test').

    Raises:
        ValueError: unknown split.
        FileNotFoundError: the file is missing (the message names ``OLACORE_DATA``).
    """
    if split not in EWT_SPLITS:
        raise ValueError(f"unknown EWT split {split!r}; choose one of {', '.join(EWT_SPLITS)}")
    return data_file("ud_english_ewt", f"en_ewt-ud-{split}.conllu")


_FIX = f"replace it with the UD English EWT release's file, or point {DATA_ENV} at a folder that holds the release"


@lru_cache(maxsize=3)
def read_ewt(split: str) -> tuple[conllu.TokenList, ...]:
    """All sentences of an EWT split, parsed by the ``conllu`` library, in document order.

    Raises:
        ValueError: the file is not CoNLL-U or holds no sentence (the message names it and ``OLACORE_DATA``).
    """
    path, sentences = ewt_path(split), []
    with open(path, encoding="utf-8") as handle:
        try:
            sentences.extend(conllu.parse_incr(handle))
        except (conllu.exceptions.ParseException, UnicodeDecodeError) as err:
            raise ValueError(f"{path} is not UTF-8 CoNLL-U ({len(sentences)} sentences read, then: {err}); "
                             f"{_FIX}") from err
    if not sentences:
        raise ValueError(f"{path} holds no sentence; {_FIX}")
    return tuple(sentences)




class AlignmentError(ValueError):
    """A UD sentence whose surface tokens cannot be found, in order, in its ``# text``."""


@dataclass(frozen=True)
class UDSentence:
    """One gold UD sentence, its syntactic words aligned to the sentence text.

    Words are UD *syntactic* words: a multi-word token (id ``3-4``, "don't") is split into its words; empty nodes (id
    ``5.1``) are skipped. All tuples have one entry per word.

    Attributes:
        sent_id, text: the ``# sent_id`` (or ``"#<index>"``) and ``# text`` comments; ``text`` is what the models read.
        spans: ``(start, end)`` character span of each word in ``text``; the words of a multi-word token share its span.
        heads, deprels: 1-based head index (``0``: the root); basic relation, subtype included (``"nmod:poss"``).
        xpos: language-specific tag (EWT: Penn Treebank, that of the paper's CoNLL-2000 POS task); empty when the
            sentence was built without it.
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


@dataclass(frozen=True)
class UDTreebank:
    """The aligned sentences of one treebank file (``name``, e.g. ``"ewt-train"``), in file order, and
    ``unaligned``: ``(sent_id, reason)`` of every sentence left out (counted by :meth:`report`).
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

    Each surface token (a word, or a multi-word token as a whole) must occur in the text at the cursor, after optional
    whitespace; its words get its span. ``index``: the sentence's position in its file, for the fallback id.

    Raises:
        AlignmentError: no ``# text``, a surface token not found where expected, a head out of range, or no word.
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
    """Align every sentence of a CoNLL-U source (parsed sentences or the text itself); the failures go to
    ``unaligned``; ``name`` labels :meth:`UDTreebank.report`.
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
    """UD English EWT ``split`` as aligned gold dependency trees (paper section 4.3): a :class:`UDTreebank`
    named ``"ewt-<split>"`` (train / dev / test: 12,544 / 2,001 / 2,077 sentences in v2.16).

    Raises:
        ValueError: unknown split; the file is not CoNLL-U or holds no sentence.
        FileNotFoundError: the EWT file is missing.
    """
    return ud_treebank(read_ewt(split), name=f"ewt-{split}")


def evenly_spread(items: Sequence, n: int | None) -> list:
    """``n`` items spread evenly over ``items`` (order kept; the first and, for ``n > 1``, the last
    included); all if ``n`` is ``None`` or at least ``len(items)``. Deterministic and chosen without looking at labels;
    every spread test subset of the book is drawn with it.

    Raises:
        ValueError: ``n`` below 1.
    """
    if n is not None and n < 1:
        raise ValueError(f"n must be >= 1 or None; got {n}")
    items = list(items)
    if n is None or n >= len(items):
        return items
    picked = np.unique(np.linspace(0, len(items) - 1, n).round().astype(int))
    return [items[i] for i in picked]


def long_sentences(sentences: Sequence[UDSentence], min_words: int = 30) -> list[int]:
    """Indices of the sentences with more than ``min_words`` words (the length-generalisation split)."""
    return [i for i, s in enumerate(sentences) if len(s) > min_words]


def ewt_splits(num_train: int | None, num_dev: int | None, num_test: int | None, long_min_words: int = 30) -> dict[str, list[UDSentence]]:
    """The EWT sentences of the experiment: ``train``, ``dev``, ``test`` and ``test_long``.

    ``train``, ``dev``: the first sentences of their splits; ``test``: ``num_test`` sentences spread evenly over the
    test split (EWT is ordered by genre); ``test_long``: every test sentence with more than ``long_min_words`` words
    (whatever ``num_test``). ``None``: the whole split.
    """
    train = list(read_ewt_syntax("train").sentences)
    dev = list(read_ewt_syntax("dev").sentences)
    test = list(read_ewt_syntax("test").sentences)
    return {
        "train": train[:num_train] if num_train else train,
        "dev": dev[:num_dev] if num_dev else dev,
        "test": evenly_spread(test, num_test),
        "test_long": [test[i] for i in long_sentences(test, long_min_words)],
    }
