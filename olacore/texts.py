"""The similarity texts: 50-word chunks of UD English EWT, with their word spans (paper 4.1).

Everything here reads in place from :func:`olacore.settings.data_dir` and never writes there.
"""

from __future__ import annotations

import conllu

from olacore.alignment import WordText
from olacore.ud import read_ewt

__all__ = ["similarity_texts"]


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
