"""Readers for the public data releases in the data folder (DESIGN.md section 5).

Everything here reads in place from :func:`olacore.settings.data_dir` and never writes there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

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
