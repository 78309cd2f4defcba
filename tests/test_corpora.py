"""olacore.corpora: WNUT-17 and SemEval-2010 Task 8 readers (real files, and malformed ones)."""

from __future__ import annotations

import pytest

from olacore import corpora
from olacore.corpora import SEMEVAL_LABELS, join_words, read_semeval, read_wnut17


def test_join_words_gives_each_word_its_span():
    text, spans = join_words(["New", "York", "!"])
    assert text == "New York !"
    assert [text[a:b] for a, b in spans] == ["New", "York", "!"]


def test_wnut17_splits_have_the_released_sizes_and_six_types():
    sizes = {split: len(read_wnut17(split)) for split in ("train", "dev", "test")}
    assert sizes == {"train": 3394, "dev": 1009, "test": 1287}
    train = read_wnut17("train")
    assert not train.skipped
    types = {tag[2:] for sentence in train.items for tag in sentence.tags if tag != "O"}
    assert types == set(corpora.WNUT17_TYPES)
    first = train.items[0]
    assert [first.text[a:b] for a, b in first.spans] == list(first.words)
    with pytest.raises(ValueError, match="unknown split"):
        read_wnut17("validation")


def test_semeval_markers_removed_spans_kept_and_dev_held_out_of_train():
    train, dev, test = (read_semeval(split) for split in ("train", "dev", "test"))
    assert (len(train), len(dev), len(test)) == (7200, 800, 2717)
    first = train.items[0]  # "... an arrayed <e1>configuration</e1> of antenna <e2>elements</e2>."
    assert "<e1>" not in first.text and "</e2>" not in first.text
    assert first.words[first.e1[0]:first.e1[1]] == ("configuration",)
    assert first.words[first.e2[0]:first.e2[1]] == ("elements",)
    assert first.label == "Component-Whole(e2,e1)"
    assert {x.sent_id for x in train.items}.isdisjoint(x.sent_id for x in dev.items)
    assert all(int(x.sent_id) <= 8000 for x in dev.items)  # dev comes from TRAIN, never from the test file
    assert {x.label for x in train.items} == set(SEMEVAL_LABELS)
    assert all(int(x.sent_id) % 10 == 0 for x in dev.items)  # every 10th example of TRAIN


@pytest.fixture
def data_folder(tmp_path, monkeypatch):
    (tmp_path / "wnut17").mkdir()
    (tmp_path / "semeval2010_task8").mkdir()
    monkeypatch.setenv("OLACORE_DATA", str(tmp_path))
    read_wnut17.cache_clear()
    corpora._semeval_file.cache_clear()
    yield tmp_path
    read_wnut17.cache_clear()
    corpora._semeval_file.cache_clear()


def test_malformed_records_are_named_and_counted(data_folder):
    (data_folder / "wnut17" / "wnut17train.conll").write_text(
        "Paris\tB-location\nrocks\tO\n\t\nbroken line without tag\nhere\tO\n\nok\tO\n", encoding="utf-8")
    train = read_wnut17("train")
    assert [s.words for s in train.items] == [("Paris", "rocks"), ("ok",)]
    assert len(train.skipped) == 1 and "line 4" in train.skipped[0][1]
    assert "1 skipped" in train.report()
    (data_folder / "semeval2010_task8" / "TEST_FILE_FULL.TXT").write_text(
        '1\t"A <e1>cat</e1> on a <e2>mat</e2>."\nOther\nComment:\n\n'
        '2\t"No second <e1>marker</e1> here."\nOther\nComment:\n\n'
        '3\t"A <e1>b</e1> <e2>c</e2>"\nNot-A-Label(e1,e2)\nComment:\n\n', encoding="utf-8")
    test = read_semeval("test")
    assert [x.sent_id for x in test.items] == ["1"]
    assert test.items[0].words[test.items[0].e2[0]] == "mat"
    reasons = dict(test.skipped)
    assert "missing" in reasons["2"] and "unknown label" in reasons["3"]


def test_a_file_that_is_not_utf8_or_holds_no_well_formed_record_is_refused_naming_it(data_folder):
    wnut = data_folder / "wnut17" / "emerging.dev.conll"
    semeval = data_folder / "semeval2010_task8" / "TRAIN_FILE.TXT"
    for content, problem in ((b"hello\tO\n\xff\xfe\tO\n", "UTF-8"), (b"hello\tnot-a-tag\n", "well-formed")):
        wnut.write_bytes(content)
        semeval.write_bytes(content)
        for read, name in ((read_wnut17, wnut.name), (read_semeval, semeval.name)):
            read_wnut17.cache_clear()
            corpora._semeval_file.cache_clear()
            with pytest.raises(ValueError, match=problem) as error:
                read("dev")
            assert name in str(error.value) and "OLACORE_DATA" in str(error.value)


def test_missing_file_names_the_setting(data_folder):
    with pytest.raises(FileNotFoundError, match="OLACORE_DATA"):
        read_wnut17("dev")


# ---------------------------------------------------------------- UNER English-EWT

def _conllu_sentence(sent_id: str, text: str, forms: list[str]) -> str:
    rows = [f"{i}\t{form}\t_\tX\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t_\t_"
            for i, form in enumerate(forms, 1)]
    return f"# sent_id = {sent_id}\n# text = {text}\n" + "\n".join(rows) + "\n\n"


def _iob2_sentence(sent_id: str, tokens: list[tuple[str, str]]) -> str:
    rows = [f"{i}\t{form}\t{tag}\t-\t-" for i, (form, tag) in enumerate(tokens, 1)]
    return f"# sent_id = {sent_id}\n# text = ignored\n" + "\n".join(rows) + "\n\n"


@pytest.fixture
def uner_folder(tmp_path, monkeypatch):
    from olacore.corpora import read_ewt, read_ewt_syntax

    for name in ("ud_english_ewt", "uner_english_ewt"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("OLACORE_DATA", str(tmp_path))
    caches = (read_ewt, read_ewt_syntax, corpora.read_uner)
    for cache in caches:
        cache.cache_clear()
    yield tmp_path
    for cache in caches:
        cache.cache_clear()


def test_uner_takes_ewt_text_by_sent_id_and_leaves_out_mismatches(uner_folder):
    (uner_folder / "ud_english_ewt" / "en_ewt-ud-dev.conllu").write_text(
        _conllu_sentence("doc-0001", "I saw  Tampa Bay.", ["I", "saw", "Tampa", "Bay", "."])
        + _conllu_sentence("doc-0002", "Mc.Donald's is here", ["Mc.Donald", "'s", "is", "here"])
        + _conllu_sentence("doc-0003", "Hi Bob", ["Hi", "Bob"]), encoding="utf-8")
    (uner_folder / "uner_english_ewt" / "en_ewt-ud-dev.iob2").write_text(
        "# newdoc id = doc\n"
        + _iob2_sentence("doc-0003", [("Hi", "O"), ("Bob", "B-PER")])  # matched by sent_id, not by position
        + _iob2_sentence("doc-0001", [("I", "O"), ("saw", "O"), ("Tampa", "B-LOC"), ("Bay", "I-LOC"), (".", "O")])
        + _iob2_sentence("doc-0002", [("Mc.", "B-ORG"), ("Donald", "I-ORG"), ("'s", "O"), ("is", "O"), ("here", "O")])
        + _iob2_sentence("doc-0009", [("Lost", "O")]), encoding="utf-8")
    dev = corpora.read_uner("dev")
    assert [s.sent_id for s in dev.items] == ["doc-0003", "doc-0001"]
    tampa = dev.items[1]
    assert tampa.text == "I saw  Tampa Bay."  # EWT's own text (double space kept), not the words re-joined
    assert [tampa.text[a:b] for a, b in tampa.spans] == ["I", "saw", "Tampa", "Bay", "."]
    assert tampa.tags == ("O", "O", "B-LOC", "I-LOC", "O")
    skipped = dict(dev.skipped)
    assert set(skipped) == {"doc-0002", "doc-0009"}  # tokens differ from EWT's; no EWT sentence
    assert "EWT" in skipped["doc-0002"] and "EWT" in skipped["doc-0009"]
    assert "2 skipped" in dev.report() and "doc-0002" in dev.report()
    with pytest.raises(ValueError, match="unknown split"):
        corpora.read_uner("train")  # UNER English-EWT has no train file here


def test_uner_missing_file_names_it_and_the_setting(uner_folder):
    with pytest.raises(FileNotFoundError) as error:
        corpora.read_uner("test")
    assert "en_ewt-ud-test.iob2" in str(error.value) and "OLACORE_DATA" in str(error.value)


@pytest.mark.slow
def test_uner_real_files_agree_with_ewt_v216_except_three_sentences_per_split():
    from olacore.corpora import read_ewt_syntax

    for split, kept in (("dev", 1998), ("test", 2074)):
        corpus = corpora.read_uner(split)
        assert len(corpus) == kept and len(corpus.skipped) == 3
        assert all("differ" in why for _, why in corpus.skipped)
        ewt = {s.sent_id: s for s in read_ewt_syntax(split).items}
        for sentence in corpus.items[::97]:
            assert sentence.text == ewt[sentence.sent_id].text and sentence.spans == ewt[sentence.sent_id].spans
        assert {t[2:] for s in corpus.items for t in s.tags if t != "O"} == {"LOC", "ORG", "PER"}


# ---------------------------------------------------------------- empty files are refused, named

@pytest.mark.parametrize("content", ["", "\n \n"])
def test_empty_wnut17_and_semeval_files_are_refused_naming_them(data_folder, content):
    (data_folder / "wnut17" / "emerging.dev.conll").write_text(content, encoding="utf-8")
    (data_folder / "semeval2010_task8" / "TRAIN_FILE.TXT").write_text(content, encoding="utf-8")
    for read, name in ((read_wnut17, "emerging.dev.conll"), (read_semeval, "TRAIN_FILE.TXT")):
        with pytest.raises(ValueError) as error:
            read("dev")
        assert name in str(error.value) and "OLACORE_DATA" in str(error.value)


def test_a_cut_off_ewt_file_skips_its_last_sentence_and_says_why(uner_folder):
    from olacore.corpora import read_ewt_syntax

    whole = _conllu_sentence("doc-0001", "Hi Bob", ["Hi", "Bob"]) + _conllu_sentence("doc-0002", "Hi Al", ["Hi", "Al"])
    (uner_folder / "ud_english_ewt" / "en_ewt-ud-dev.conllu").write_text(whole[: whole.rindex("\troot")],
                                                                         encoding="utf-8")
    treebank = read_ewt_syntax("dev")
    assert [s.sent_id for s in treebank.items] == ["doc-0001"]
    assert treebank.skipped[0][0] == "doc-0002" and "cut-off" in treebank.skipped[0][1]


def test_empty_uner_file_is_refused_naming_it(uner_folder):
    (uner_folder / "ud_english_ewt" / "en_ewt-ud-dev.conllu").write_text(
        _conllu_sentence("doc-0001", "Hi Bob", ["Hi", "Bob"]), encoding="utf-8")
    (uner_folder / "uner_english_ewt" / "en_ewt-ud-dev.iob2").write_text("# newdoc id = doc\n\n", encoding="utf-8")
    with pytest.raises(ValueError) as error:
        corpora.read_uner("dev")
    assert "en_ewt-ud-dev.iob2" in str(error.value) and "OLACORE_DATA" in str(error.value)
