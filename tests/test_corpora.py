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
    with pytest.raises(ValueError, match="dev_every"):
        read_semeval("dev", dev_every=1)


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


def test_missing_file_names_the_setting(data_folder):
    with pytest.raises(FileNotFoundError, match="OLACORE_DATA"):
        read_wnut17("dev")
