"""The corpora, read in place from the data folder into word-level records: the text the models read and each word's
character span. A record that cannot be read is named and counted (``report()``), never dropped silently.

- UD English EWT (paper section 4.3): gold dependency trees, words aligned to each sentence's ``# text``.
- WNUT-17: BIO NER over 6 types, words joined by single spaces (official ``data_utils/ola_dataset.py``).
- UNER English-EWT v1: PER / LOC / ORG in BIO over EWT's dev and test sentences.
- SemEval-2010 Task 8, as ``OLADataset_SemEvalRe`` in the official ``data_utils/ola_dataset.py``; dev is every 10th
  example of TRAIN.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import conllu
import numpy as np

from olacore.settings import DATA_ENV, data_file

__all__ = ["EWT_SPLITS", "read_ewt", "UDSentence", "read_ewt_syntax", "ewt_splits", "long_sentences", "evenly_spread",
           "WNUT17_FILES", "WNUT17_TYPES", "UNER_FILES", "SEMEVAL_LABELS", "NERSentence", "RelationExample", "Corpus",
           "join_words", "read_wnut17", "read_uner", "read_semeval"]


EWT_SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class Corpus:
    """The records of one split, in file order, and ``skipped``: ``(id, reason)`` of every record left out."""

    name: str
    items: tuple
    skipped: tuple[tuple[str, str], ...] = ()

    def __len__(self) -> int:
        return len(self.items)

    def report(self) -> str:
        """One line: how many records were read and how many were left out (first ids shown)."""
        line = f"{self.name}: {len(self.items) + len(self.skipped)} read, {len(self.items)} kept, {len(self.skipped)} skipped"
        if self.skipped:
            shown = ", ".join(f"{i} ({why})" for i, why in self.skipped[:3])
            line += f" [{shown}{', ...' if len(self.skipped) > 3 else ''}]"
        return line


def _split_name(split: str, known) -> None:
    if split not in known:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(known)}")


def _refused(path, problem: str, release: str) -> ValueError:
    """The one-line refusal of a bad data file: what is wrong with it and what to do."""
    return ValueError(f"{path} {problem}; replace it with the {release} release's file, or point {DATA_ENV} at a "
                      "folder that holds the release")


@lru_cache(maxsize=3)
def read_ewt(split: str) -> tuple[conllu.TokenList, ...]:
    """All sentences of UD English EWT ``split`` ('train', 'dev' or 'test'), parsed by the ``conllu`` library, in
    document order.

    Raises:
        ValueError: unknown split; the file is not CoNLL-U or holds no sentence (the message names it and
            ``OLACORE_DATA``).
        FileNotFoundError: the file is missing (the message names ``OLACORE_DATA``).
    """
    _split_name(split, EWT_SPLITS)
    path, sentences = data_file("ud_english_ewt", f"en_ewt-ud-{split}.conllu"), []
    with open(path, encoding="utf-8") as handle:
        try:
            sentences.extend(conllu.parse_incr(handle))
        except (conllu.exceptions.ParseException, UnicodeDecodeError) as err:
            raise _refused(path, f"is not UTF-8 CoNLL-U ({len(sentences)} sentences read, then: {err})",
                           "UD English EWT") from err
    if not sentences:
        raise _refused(path, "holds no sentence", "UD English EWT")
    return tuple(sentences)


@dataclass(frozen=True)
class UDSentence:
    """One gold UD sentence, its syntactic words (multi-word tokens split, empty nodes skipped) aligned to ``text``.

    Attributes:
        spans: character span of each word in ``text``; the words of a multi-word token share its span.
        heads, deprels: 1-based head index (``0``: the root); basic relation, subtype included (``"nmod:poss"``).
        xpos: EWT's Penn Treebank tag (the paper's CoNLL-2000 POS task).
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


def _align(sentence: conllu.TokenList, sent_id: str) -> UDSentence:
    """Align the syntactic words of one ``conllu`` sentence to its ``# text``, surface token by surface token.

    Raises:
        ValueError: no ``# text``, a surface token not found where expected, a head out of range, or no word.
    """
    text = sentence.metadata.get("text")
    if text is None:
        raise ValueError("no '# text' comment")
    words, spans = [], []  # the word lines of the sentence, and their spans
    cursor = 0
    mwt_span: tuple[int, int] | None = None
    mwt_last = 0

    def locate(form: str) -> tuple[int, int]:
        nonlocal cursor
        while cursor < len(text) and text[cursor].isspace():
            cursor += 1
        if not text.startswith(form, cursor):
            raise ValueError(f"token {form!r} not found at character {cursor} of the text "
                             f"(text there: {text[cursor:cursor + len(form) + 5]!r})")
        cursor += len(form)
        return cursor - len(form), cursor

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
            raise ValueError(f"word {token_id} has no head")
        words.append(token)
        spans.append(span)
    if not words:
        raise ValueError("no word")
    heads = tuple(int(word["head"]) for word in words)
    if any(not 0 <= head <= len(words) for head in heads):
        raise ValueError("a head points outside the sentence")
    return UDSentence(sent_id, text, tuple(word["form"] for word in words), tuple(spans), heads,
                      tuple(word["deprel"] for word in words), tuple(word["upos"] for word in words),
                      tuple(word["xpos"] or "_" for word in words))


@lru_cache(maxsize=3)
def read_ewt_syntax(split: str) -> Corpus:
    """UD English EWT ``split`` as gold dependency trees aligned to their text (paper section 4.3): a sentence that
    cannot be aligned is skipped, named with the reason.

    Raises:
        ValueError: unknown split; the file is not CoNLL-U or holds no sentence.
        FileNotFoundError: the EWT file is missing.
    """
    aligned, skipped = [], []
    for index, sentence in enumerate(read_ewt(split)):
        sent_id = sentence.metadata.get("sent_id", f"#{index}")
        try:
            aligned.append(_align(sentence, sent_id))
        except ValueError as error:
            skipped.append((sent_id, str(error)))
        except KeyError as error:  # conllu leaves a cut-off line's fields out
            field = str(error.args[0]).strip("'\"")
            skipped.append((sent_id, f"a token lacks its {field} field (a cut-off line?)"))
    return Corpus(name=f"ewt-{split}", items=tuple(aligned), skipped=tuple(skipped))


def evenly_spread(items: Sequence, n: int | None) -> list:
    """``n`` items spread evenly over ``items``, order kept, first and last included; all if ``n`` is ``None``.

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
    """The EWT sentences of the experiment: the first ``train`` and ``dev`` sentences, ``test`` spread evenly over the
    test split (ordered by genre), ``test_long`` every test sentence over ``long_min_words`` words; ``None``: all."""
    train, dev, test = (list(read_ewt_syntax(split).items) for split in EWT_SPLITS)
    return {
        "train": train[:num_train] if num_train else train,
        "dev": dev[:num_dev] if num_dev else dev,
        "test": evenly_spread(test, num_test),
        "test_long": [test[i] for i in long_sentences(test, long_min_words)],
    }


WNUT17_FILES = {"train": "wnut17train.conll", "dev": "emerging.dev.conll", "test": "emerging.test.annotated"}
WNUT17_TYPES = ("corporation", "creative-work", "group", "location", "person", "product")
UNER_FILES = {"dev": "en_ewt-ud-dev.iob2", "test": "en_ewt-ud-test.iob2"}
#: The 19 directed labels of SemEval-2010 Task 8: 9 relations x 2 directions, and Other.
SEMEVAL_LABELS: tuple[str, ...] = tuple(
    f"{relation}({a},{b})"
    for relation in ("Cause-Effect", "Component-Whole", "Content-Container", "Entity-Destination", "Entity-Origin",
                     "Instrument-Agency", "Member-Collection", "Message-Topic", "Product-Producer")
    for a, b in (("e1", "e2"), ("e2", "e1"))
) + ("Other",)


@dataclass(frozen=True)
class NERSentence:
    """One sentence of a named-entity corpus, word level, with the BIO tag of each word."""

    sent_id: str
    text: str
    words: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]
    tags: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.words)


@dataclass(frozen=True)
class RelationExample:
    """One SemEval-2010 Task 8 example, markers removed; ``e1``, ``e2``: ``(first word, last word + 1)``."""

    sent_id: str
    text: str
    words: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]
    e1: tuple[int, int]
    e2: tuple[int, int]
    label: str

    def __len__(self) -> int:
        return len(self.words)


def join_words(words: tuple[str, ...] | list[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """``(text, spans)``: the words joined by single spaces and each word's character span."""
    spans, cursor = [], 0
    for word in words:
        spans.append((cursor, cursor + len(word)))
        cursor += len(word) + 1
    return " ".join(words), tuple(spans)


def _bio_sentences(path, release: str, split: str, columns: tuple[str, ...], tag_form: str, comments: bool):
    """``(sent_id, words, tags)`` of every sentence of a tab-separated BIO file (``columns`` name its columns, two
    of them ``word`` and ``tag``), and ``(sent_id, reason)`` of every malformed one; ``sent_id``: the
    ``# sent_id`` comment when ``comments`` are read, else ``<split>-<position>``.

    Raises:
        ValueError: the file is not UTF-8 or holds no well-formed sentence (the message names it and
            ``OLACORE_DATA``).
    """
    word_at, tag_at, tag_form = columns.index("word"), columns.index("tag"), re.compile(tag_form)
    sentences, skipped = [], []
    sent_id, words, tags, problem = None, [], [], None

    def flush() -> None:
        nonlocal sent_id, words, tags, problem
        if words or problem or sent_id is not None:
            name = sent_id or f"{split}-{len(sentences) + len(skipped)}"
            if problem or not words:
                skipped.append((name, problem or "no token"))
            else:
                sentences.append((name, tuple(words), tuple(tags)))
        sent_id, words, tags, problem = None, [], [], None

    try:
        lines = path.read_text(encoding="utf-8").split("\n")  # universal newlines, as iterating the file
    except UnicodeDecodeError as error:
        raise _refused(path, f"is not UTF-8 text ({error})", release) from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            flush()
        elif comments and line.startswith("#"):
            if line.startswith("# sent_id") and "=" in line:
                sent_id = line.split("=", 1)[1].strip()
        else:
            parts = line.split("\t")
            if len(parts) <= max(word_at, tag_at) or not parts[word_at] or not tag_form.match(parts[tag_at].strip()):
                problem = problem or f"line {number} is not '{'<TAB>'.join(columns)}': {line[:40]!r}"
                continue
            words.append(parts[word_at])
            tags.append(parts[tag_at].strip())
    flush()
    if not sentences:
        raise _refused(path, f"holds no well-formed sentence (first: {skipped[0][1]})" if skipped else
                       "holds no sentence", release)
    return sentences, skipped


@lru_cache(maxsize=3)
def read_wnut17(split: str) -> Corpus:
    """WNUT-17 ``split`` ('train', 'dev' or 'test') as word-level BIO, words joined by single spaces; a malformed
    sentence is skipped.

    Raises:
        ValueError: unknown split; the file holds no sentence (the message names it and ``OLACORE_DATA``).
        FileNotFoundError: the file is missing (the message names ``OLACORE_DATA``).
    """
    _split_name(split, WNUT17_FILES)
    raw, skipped = _bio_sentences(data_file("wnut17", WNUT17_FILES[split]), "WNUT-17", split, ("word", "tag"),
                                  r"^(O|[BI]-[\w-]+)$", comments=False)
    sentences = []
    for sent_id, words, tags in raw:
        text, spans = join_words(words)
        sentences.append(NERSentence(sent_id, text, words, spans, tags))
    return Corpus(name=f"wnut17-{split}", items=tuple(sentences), skipped=tuple(skipped))


@lru_cache(maxsize=2)
def read_uner(split: str) -> Corpus:
    """UNER English-EWT ``split`` ('dev' or 'test'), each sentence on EWT's own text, matched by ``# sent_id``; a
    sentence whose tokens differ from EWT's words is skipped.

    Raises:
        ValueError: unknown split (there is no UNER train file here); a file holds no sentence (or is not CoNLL-U).
        FileNotFoundError: the UNER or EWT file is missing (the message names ``OLACORE_DATA``).
    """
    _split_name(split, UNER_FILES)
    raw, skipped = _bio_sentences(data_file("uner_english_ewt", UNER_FILES[split]), "UNER English-EWT", split,
                                  ("id", "word", "tag", "-", "-"), r"^(O|[BI]-(PER|LOC|ORG))$", comments=True)
    treebank = read_ewt_syntax(split)
    ewt = {s.sent_id: s for s in treebank.items}
    unaligned = dict(treebank.skipped)
    sentences = []
    for sent_id, forms, tags in raw:
        ud = ewt.get(sent_id)
        if ud is None:
            why = "EWT could not align it" if sent_id in unaligned else "no EWT sentence of this sent_id"
            skipped.append((sent_id, why))
        elif forms != ud.words:
            where = next((i for i, (a, b) in enumerate(zip(forms, ud.words)) if a != b), min(len(forms), len(ud.words)))
            skipped.append((sent_id, f"tokens differ from EWT at token {where + 1} "
                                     f"({len(forms)} UNER tokens, {len(ud.words)} EWT words)"))
        else:
            sentences.append(NERSentence(sent_id, ud.text, ud.words, ud.spans, tags))
    return Corpus(name=f"uner-ewt-{split}", items=tuple(sentences), skipped=tuple(skipped))


_MARKERS = ("<e1>", "</e1>", "<e2>", "</e2>")


def _parse_relation(sent_id: str, sentence: str, label: str) -> RelationExample:
    spaced = sentence
    for marker in _MARKERS:
        spaced = spaced.replace(marker, f" {marker} ")
    words: list[str] = []
    position: dict[str, int] = {}
    for piece in spaced.split(" "):
        if not piece:
            continue
        if piece in _MARKERS:
            if piece in position:
                raise ValueError(f"marker {piece} appears twice")
            position[piece] = len(words)
        else:
            words.append(piece)
    missing = [m for m in _MARKERS if m not in position]
    if missing:
        raise ValueError(f"marker(s) {missing} missing")
    e1, e2 = (position["<e1>"], position["</e1>"]), (position["<e2>"], position["</e2>"])
    if e1[1] <= e1[0] or e2[1] <= e2[0]:
        raise ValueError("an entity holds no word")
    if label not in SEMEVAL_LABELS:
        raise ValueError(f"unknown label {label!r}")
    text, spans = join_words(words)
    return RelationExample(sent_id, text, tuple(words), spans, e1, e2, label)


@lru_cache(maxsize=3)
def _semeval_file(name: str) -> tuple[tuple[RelationExample, ...], tuple[tuple[str, str], ...]]:
    path = data_file("semeval2010_task8", name)
    try:
        lines = enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
    except UnicodeDecodeError as error:
        raise _refused(path, f"is not UTF-8 text ({error})", "SemEval-2010 Task 8") from None
    examples, skipped = [], []
    for number, line in lines:  # records: '<id><TAB>"sentence"', the label, 'Comment: ...', a blank line
        line = line.strip()
        if not line or line.startswith("Comment"):
            continue
        head = re.match(r'^(\d+)\s+"(.*)"$', line)
        if not head:
            skipped.append((f"line {number}", f"not '<id><TAB>\"sentence\"': {line[:40]!r}"))
            continue
        sent_id, sentence = head.groups()
        label = next(lines, (0, ""))[1].strip()
        try:
            examples.append(_parse_relation(sent_id, sentence, label))
        except ValueError as error:
            skipped.append((sent_id, str(error)))
    if not examples:
        raise _refused(path, f"holds no well-formed record (first: {skipped[0][1]})" if skipped else
                       "holds no sentence", "SemEval-2010 Task 8")
    return tuple(examples), tuple(skipped)


def read_semeval(split: str) -> Corpus:
    """SemEval-2010 Task 8 ``split``: ``dev`` every 10th example of TRAIN_FILE.TXT by id, ``train`` the rest,
    ``test`` TEST_FILE_FULL.TXT.

    Raises:
        ValueError: unknown split; the file holds no sentence (the message names it and ``OLACORE_DATA``).
        FileNotFoundError: a file is missing (the message names ``OLACORE_DATA``).
    """
    _split_name(split, ("train", "dev", "test"))
    examples, skipped = _semeval_file("TEST_FILE_FULL.TXT" if split == "test" else "TRAIN_FILE.TXT")
    if split == "test":
        return Corpus("semeval-test", examples, skipped)
    if split == "train":
        return Corpus("semeval-train", tuple(x for x in examples if int(x.sent_id) % 10 != 0), skipped)
    return Corpus("semeval-dev (every 10th of TRAIN)", tuple(x for x in examples if int(x.sent_id) % 10 == 0), ())
