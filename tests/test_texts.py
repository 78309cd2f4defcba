"""The similarity texts (olacore.texts): 50-word chunks of UD English EWT with their word spans.

The reference here reads the CoNLL-U file line by line, independently of the ``conllu`` library
and of olacore.
"""

from __future__ import annotations

import pytest

from olacore.settings import data_file
from olacore.texts import similarity_texts

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
        return similarity_texts(NUM_TEXTS)
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
    assert similarity_texts(3) == texts[:3]
    short = similarity_texts(2, words_per_text=7)
    assert [len(t.words) for t in short] == [7, 7] and short[0].words == texts[0].words[:7]
    with pytest.raises(ValueError, match="positive"):
        similarity_texts(0)
    with pytest.raises(ValueError, match="only"):
        similarity_texts(10**6)
