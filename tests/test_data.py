"""The UD reader for syntax: multi-word tokens, empty nodes, alignment to the text."""

from __future__ import annotations

import pytest

from olacore.data import AlignmentError, UDSentence, align_ud_sentence, ud_treebank

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


def test_multiword_token_split_into_words_sharing_the_span():
    bank = ud_treebank(CONLLU, name="hand")
    first = bank.sentences[0]
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


def test_spanish_contraction():
    second = ud_treebank(CONLLU).sentences[1]
    assert second.words == ("Al", "de", "el", "mar", ".")
    assert second.spans[1] == second.spans[2] == (3, 6)
    assert second.text[3:6] == "del"
    assert second.word_text().words == second.words


def test_unaligned_sentence_is_counted_not_dropped_silently():
    bank = ud_treebank(CONLLU, name="hand")
    assert len(bank) == 2
    assert [sid for sid, _ in bank.unaligned] == ["broken"]
    assert "3 sentences, 2 aligned, 1 not aligned" in bank.report()
    assert "broken" in bank.report()


def test_align_raises_on_mismatch_and_missing_text():
    import conllu

    broken = conllu.parse(CONLLU)[2]
    with pytest.raises(AlignmentError, match="Nothing"):
        align_ud_sentence(broken)
    no_text = conllu.parse("1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n\n")[0]
    with pytest.raises(AlignmentError, match="no '# text'"):
        align_ud_sentence(no_text)


def test_ewt_dev_aligns_completely():
    pytest.importorskip("conllu")
    from olacore.data import read_ewt_syntax

    try:
        bank = read_ewt_syntax("dev")
    except FileNotFoundError:
        pytest.skip("EWT data not available")
    assert len(bank) + len(bank.unaligned) == 2001
    sentence = bank.sentences[0]
    assert isinstance(sentence, UDSentence)
    assert all(0 <= h <= len(sentence) for h in sentence.heads)
