"""The similarity texts (olacore.texts): 50-word chunks of UD English EWT with their word spans.

The official recipe is checked on a hand-made two-document input, then on EWT; the stream recipe
against a reference that reads the CoNLL-U file line by line, independently of the ``conllu``
library and of olacore.
"""

from __future__ import annotations

import pytest

from olacore.settings import data_file
from olacore.texts import ChunkCounts, official_chunks, similarity_texts, text_counts

NUM_TEXTS = 40


def _surface_stream(split: str = "train") -> list[tuple[str, bool]]:
    """``(surface form, space after)`` of every surface token of the split, in file order."""
    stream, skip_until = [], 0
    with open(data_file("ud_english_ewt", f"en_ewt-ud-{split}.conllu"), encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            token_id, form, misc = cols[0], cols[1], cols[9]
            space_after = "SpaceAfter=No" not in misc.split("|")
            if "-" in token_id:  # multi-word token: its surface form once, its words hidden
                stream.append((form, space_after))
                skip_until = int(token_id.split("-")[1])
            elif "." in token_id:  # empty node: no surface form
                continue
            elif int(token_id) <= skip_until:
                continue
            else:
                skip_until = 0
                stream.append((form, space_after))
    return stream


@pytest.fixture(scope="module")
def texts():
    try:
        return similarity_texts(NUM_TEXTS, recipe="stream")
    except FileNotFoundError:
        pytest.skip("EWT data not available")


def test_every_span_slices_its_word_out_of_the_text(texts):
    assert len(texts) == NUM_TEXTS
    for item in texts:
        assert len(item.words) == len(item.spans) == 50
        assert [item.text[a:b] for a, b in item.spans] == list(item.words)
        starts = [a for a, _ in item.spans]
        assert starts == sorted(starts) and item.spans[0][0] == 0 and item.spans[-1][1] == len(item.text)
        # between two words there is at most one space, and nothing else
        for (_, end), (start, _) in zip(item.spans, item.spans[1:]):
            assert item.text[end:start] in ("", " ")


def test_words_are_the_treebank_surface_forms_in_document_order(texts):
    stream = _surface_stream()
    for index, item in enumerate(texts):
        chunk = stream[index * 50 : (index + 1) * 50]
        assert list(item.words) == [form for form, _ in chunk]
        gaps = [item.text[end:start] for (_, end), (start, _) in zip(item.spans, item.spans[1:])]
        assert gaps == [" " if space else "" for _, space in chunk[:-1]]  # the treebank's SpaceAfter


def test_chunks_are_a_prefix_and_sizes_are_checked(texts):
    assert similarity_texts(3, recipe="stream") == texts[:3]
    with pytest.raises(ValueError, match="positive"):
        similarity_texts(0)
    with pytest.raises(ValueError, match="only"):
        similarity_texts(10**6, recipe="stream")
    with pytest.raises(ValueError, match="recipe"):
        similarity_texts(3, recipe="ontonotes")


# ---------------------------------------------------------------------------------------------
# The official recipe (official data_utils/data_manager.py): document-bounded, from sentence starts


def _sentence(tag: str, n: int) -> list[str]:
    return [f"{tag}{i}" for i in range(n)]


def test_official_chunks_on_a_hand_made_two_document_input():
    """Document A: sentences of 3, 4, 2, 5 and 2 words; document B: 6 and 1. Chunks of 5 words."""
    a = [_sentence("a", 3), _sentence("b", 4), _sentence("c", 2), _sentence("d", 5), _sentence("e", 2)]
    b = [_sentence("f", 6), _sentence("g", 1)]
    chunks, counts = official_chunks([a, b], words_per_text=5)
    assert chunks == [
        ("a0", "a1", "a2", "b0", "b1"),  # b2, b3 (the rest of the overflowing sentence) dropped
        ("c0", "c1", "d0", "d1", "d2"),  # starts at the next sentence start; d3, d4 dropped
        ("f0", "f1", "f2", "f3", "f4"),  # e0, e1 (A's tail) dropped: no chunk crosses a document
    ]
    assert counts == ChunkCounts(chunks=3, documents=2, documents_used=2, documents_skipped=0, words_read=23,
                                 words_dropped=8)


def test_a_document_shorter_than_one_chunk_is_skipped_and_counted():
    short = [_sentence("s", 2), _sentence("t", 2)]  # 4 words < 5
    long = [_sentence("u", 5)]
    chunks, counts = official_chunks([short, long, short], words_per_text=5)
    assert chunks == [("u0", "u1", "u2", "u3", "u4")]
    assert (counts.documents, counts.documents_used, counts.documents_skipped) == (3, 1, 2)
    assert counts.words_dropped == 8
    # with a limit, reading stops at the document that gave the last chunk asked for
    assert official_chunks([long, short, long], words_per_text=5, limit=1)[1].documents == 1


def _ewt_documents_by_hand(split: str = "train") -> list[list[list[str]]]:
    """Documents (``# newdoc id``) of sentences of syntactic words (integer ids), read line by line."""
    documents, sentence = [], None
    with open(data_file("ud_english_ewt", f"en_ewt-ud-{split}.conllu"), encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if line.startswith("# newdoc id"):
                documents.append([])
            elif line.startswith("#"):
                continue
            elif not line:
                if sentence is not None:
                    documents[-1].append(sentence)
                sentence = None
            else:
                token_id, form = line.split("\t")[:2]
                if token_id.isdigit():
                    sentence = (sentence or []) + [form]
    return documents


def test_official_texts_on_ewt_start_at_sentence_starts_and_stay_in_their_document():
    try:
        texts = similarity_texts(NUM_TEXTS)  # the default recipe: official
    except FileNotFoundError:
        pytest.skip("EWT data not available")
    documents = _ewt_documents_by_hand()
    expected, position = [], {}
    for d, document in enumerate(documents):  # the recipe, once more, with sentence positions
        buffer, start = [], None
        for s, sentence in enumerate(document):
            start = (d, s) if not buffer else start
            buffer += sentence
            if len(buffer) >= 50:
                expected.append(tuple(buffer[:50]))
                position[len(expected) - 1] = start
                buffer = []
    assert [t.words for t in texts] == expected[:NUM_TEXTS]
    for index, item in enumerate(texts):
        assert item.text == " ".join(item.words)  # single spaces, as the official ClassifyDataset joins
        assert [item.text[a:b] for a, b in item.spans] == list(item.words)
        d, s = position[index]
        assert item.words[: len(documents[d][s])] == tuple(documents[d][s][:50])  # a sentence start
    counts = text_counts(NUM_TEXTS)
    assert counts.chunks == NUM_TEXTS and counts.documents_used == counts.documents - counts.documents_skipped
