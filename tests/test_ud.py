"""The UD reader (olacore.corpora): multi-word tokens, empty nodes, alignment to the text, EWT splits."""

from __future__ import annotations

import conllu
import pytest

from olacore.corpora import UDSentence, evenly_spread, ewt_splits, long_sentences, read_ewt, read_ewt_syntax

# "I don't like it." with "don't" as a multi-word token (do + n't) and one empty node.
CONLLU = """\
# sent_id = s1
# text = I don't like it.
1	I	I	PRON	PRP	_	4	nsubj	_	_
2-3	don't	_	_	_	_	_	_	_	_
2	do	do	AUX	VBP	_	4	aux	_	_
3	n't	not	PART	RB	_	4	advmod	_	_
4	like	like	VERB	VB	_	0	root	_	_
4.1	like	like	VERB	VB	_	_	_	4:conj	_
5	it	it	PRON	PRP	_	4	obj	_	SpaceAfter=No
6	.	.	PUNCT	.	_	4	punct	_	_

# sent_id = s2
# text = Al del mar.
1	Al	Al	PROPN	_	_	0	root	_	_
2-3	del	_	_	_	_	_	_	_	_
2	de	de	ADP	_	_	4	case	_	_
3	el	el	DET	_	_	4	det	_	_
4	mar	mar	NOUN	_	_	1	nmod	_	SpaceAfter=No
5	.	.	PUNCT	_	_	1	punct	_	_

# sent_id = broken
# text = Something else entirely.
1	Nothing	nothing	PRON	_	_	0	root	_	_

"""


def _sentence(heads, sent_id="t"):
    words = tuple(f"w{i}" for i in range(len(heads)))
    spans, cursor = [], 0
    for w in words:
        spans.append((cursor, cursor + len(w)))
        cursor += len(w) + 1
    rels = tuple("root" if h == 0 else "dep" for h in heads)
    return UDSentence(sent_id, " ".join(words), words, tuple(spans), tuple(heads), rels, tuple("NOUN" for _ in heads))


@pytest.fixture
def ewt_folder(tmp_path, monkeypatch):
    (tmp_path / "ud_english_ewt").mkdir()
    monkeypatch.setenv("OLACORE_DATA", str(tmp_path))
    for cache in (read_ewt, read_ewt_syntax):
        cache.cache_clear()
    yield tmp_path / "ud_english_ewt"
    for cache in (read_ewt, read_ewt_syntax):
        cache.cache_clear()


@pytest.fixture
def hand(ewt_folder):
    """The three sentences of ``CONLLU`` as a treebank file, read and aligned."""
    (ewt_folder / "en_ewt-ud-dev.conllu").write_text(CONLLU, encoding="utf-8")
    return read_ewt_syntax("dev")


def test_multiword_token_split_into_words_sharing_the_span(hand):
    first = hand.items[0]
    assert first.words == ("I", "do", "n't", "like", "it", ".")
    assert first.heads == (4, 4, 4, 0, 4, 4)
    assert first.deprels == ("nsubj", "aux", "advmod", "root", "obj", "punct")
    assert first.upos == ("PRON", "AUX", "PART", "VERB", "PRON", "PUNCT")
    # do and n't both get the span of the surface token "don't"; the empty node is skipped
    assert first.spans == ((0, 1), (2, 7), (2, 7), (8, 12), (13, 15), (15, 16))
    assert first.text[2:7] == "don't"
    for word, (start, end) in zip(first.words, first.spans):
        if word not in ("do", "n't"):
            assert first.text[start:end] == word


def test_spanish_contraction(hand):
    second = hand.items[1]
    assert second.words == ("Al", "de", "el", "mar", ".")
    assert second.spans[1] == second.spans[2] == (3, 6)
    assert second.text[3:6] == "del"


def test_unaligned_sentence_is_counted_not_dropped_silently(hand):
    assert len(hand) == 2
    assert [sid for sid, _ in hand.skipped] == ["broken"]
    assert "3 read, 2 kept, 1 skipped" in hand.report()
    assert "broken" in hand.report()


def test_unalignable_sentences_are_skipped_with_the_reason(ewt_folder):
    (ewt_folder / "en_ewt-ud-dev.conllu").write_text(
        CONLLU + "1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n\n"
        + "# sent_id = far\n# text = Hi\n1\tHi\thi\tINTJ\t_\t_\t5\troot\t_\t_\n\n", encoding="utf-8")
    reasons = dict(read_ewt_syntax("dev").skipped)
    assert "Nothing" in reasons["broken"] and "no '# text'" in reasons["#3"] and "outside" in reasons["far"]


def test_long_sentences():
    sentences = [_sentence([0] + [1] * k) for k in (5, 30, 31, 40)]  # 6, 31, 32, 41 words
    assert long_sentences(sentences, 30) == [1, 2, 3]
    assert long_sentences(sentences, 31) == [2, 3]


@pytest.fixture(scope="module")
def dev():
    try:
        return read_ewt_syntax("dev")
    except FileNotFoundError:
        pytest.skip("EWT data not available")


def test_ewt_dev_aligns_completely(dev):
    assert len(dev) + len(dev.skipped) == 2001
    assert not dev.skipped, dev.report()
    for sentence in dev.items:
        assert all(0 <= h <= len(sentence) for h in sentence.heads)
        assert sum(h == 0 for h in sentence.heads) >= 1


@pytest.mark.slow
def test_ewt_splits_spread_the_test_sample_and_keep_the_long_sentences():
    try:
        splits = ewt_splits(10, 5, 20)
    except FileNotFoundError:
        pytest.skip("EWT data not available")
    test = read_ewt_syntax("test").items
    assert [s.sent_id for s in splits["train"]] == [s.sent_id for s in read_ewt_syntax("train").items[:10]]
    assert len(splits["dev"]) == 5 and len(splits["test"]) == 20
    positions = [test.index(s) for s in splits["test"]]
    assert positions[0] == 0 and positions[-1] == len(test) - 1 and positions == sorted(positions)
    assert splits["test_long"] and all(len(s) > 30 for s in splits["test_long"])
    assert len(splits["test_long"]) == sum(len(s) > 30 for s in test)


def test_evenly_spread():
    assert evenly_spread(range(10), 3) == [0, 4, 9]
    assert evenly_spread(range(5), 9) == list(range(5)) and evenly_spread(range(5), None) == list(range(5))
    assert evenly_spread(range(100), 100) == list(range(100))
    with pytest.raises(ValueError):
        evenly_spread(range(5), 0)


# ---------------------------------------------------------------- broken EWT files name themselves

@pytest.mark.parametrize("content", ["", "\n\n\n"])
def test_empty_ewt_file_is_refused_naming_it_and_the_setting(ewt_folder, content):
    (ewt_folder / "en_ewt-ud-dev.conllu").write_text(content, encoding="utf-8")
    with pytest.raises(ValueError) as error:
        read_ewt_syntax("dev")
    assert "en_ewt-ud-dev.conllu" in str(error.value) and "OLACORE_DATA" in str(error.value)


def test_malformed_ewt_file_names_it_and_keeps_the_parse_error(ewt_folder):
    (ewt_folder / "en_ewt-ud-test.conllu").write_text(CONLLU + "garbage without tabs\n\n", encoding="utf-8")
    with pytest.raises(ValueError) as error:
        read_ewt_syntax("test")
    assert "en_ewt-ud-test.conllu" in str(error.value) and "3 sentences" in str(error.value)
    assert isinstance(error.value.__cause__, conllu.exceptions.ParseException)
