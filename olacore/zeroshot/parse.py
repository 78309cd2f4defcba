"""Parsers of zero-shot answers: generated text -> one SemEval relation label, or NER entity spans.

Tolerant of surface form, never guessing. Every answer gets a *status*; an answer whose status is not ``"ok"``
(RE) or that yields no usable line (NER) scores as wrong and is counted.

Relation extraction (:func:`parse_relation`) reads the answer's first line with content (blank lines and a lone
lead-in such as ``Answer:`` skipped). Statuses:

- ``ok``: exactly one of the 19 labels is named (twice is still one). A directed label is a relation name (case,
  spaces, ``-`` or ``_`` between its words free: ``Cause Effect``, ``CauseEffect``) and a direction:
  ``(e1,e2)``, ``[e1,e2]``, ``e1->e2``, ``e1 => e2``, ``e1→e2``, ``e1 to e2``, spaces free. ``Other`` is named
  when the whole answer is that word (any case; lead-ins, quotes, markup, a final full stop removed) or the
  capitalised word ``Other`` stands alone in it; a lower-case "other" in a sentence is the English word.
- ``ambiguous``: two or more different labels, or one label and another relation's bare name.
- ``no_direction``: one relation named without a direction (``Cause-Effect``).
- ``outside``: label-shaped but outside the set (``Effect-Cause(e1,e2)``, ``(e1,e1)``, ``Word-Word(e1,e2)``).
- ``no_label``: no label named (an explanation, an option number, a copy of the sentence).
- ``empty``: nothing but white space.

Named entities (:func:`parse_entities`), line by line; bullets, markdown and lead-in lines (``Entities:``) are
dropped. A line names an entity as ``type: text``, ``text: type``, ``type - text``, ``type | text``,
``text (type)`` or ``(text, type)``, ``type`` one of WNUT-17's six (case, ``_``/space for ``-`` and a plural
``s`` tolerated); ``none`` (or "no entities") says there is none. The text is matched, case-insensitively, to a
run of the sentence's words (outer quotes and final punctuation dropped); every occurrence not overlapping an
entity placed before is tagged (BIO); ``type: A, B`` whose parts, not whole, are in the sentence gives one
entity per part. Problems counted per line: ``bad_line`` (no readable entity), ``outside_type`` (such as
``organization``), ``not_in_sentence`` (hallucinated, or re-tokenised), ``overlap`` (every occurrence overlaps
a placed entity). Statuses: ``ok`` (every content line read), ``none`` (no entity, says the answer),
``partial`` (some lines read), ``unparseable`` (none read), ``empty``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from olacore.corpora import SEMEVAL_LABELS, WNUT17_TYPES

__all__ = ["RELATION_TYPES", "RE_STATUSES", "NER_STATUSES", "RelationParse", "EntityParse", "parse_relation",
           "parse_entities", "entity_type"]

#: The nine relation types of SemEval-2010 Task 8 (the labels without direction, Other left out).
RELATION_TYPES: tuple[str, ...] = tuple(dict.fromkeys(label.split("(")[0] for label in SEMEVAL_LABELS if label != "Other"))
RE_STATUSES = ("ok", "ambiguous", "no_direction", "outside", "no_label", "empty")
NER_STATUSES = ("ok", "none", "partial", "unparseable", "empty")


def _name_pattern(first: str, second: str) -> str:
    return rf"{first}[\s_-]*{second}"


_TYPE_PATTERNS = {name: _name_pattern(*name.lower().split("-")) for name in RELATION_TYPES}
_REVERSED = "|".join(_name_pattern(*reversed(name.lower().split("-"))) for name in RELATION_TYPES)
_ARROWS = str.maketrans({"→": "->", "⟶": "->", "➔": "->", "⇒": "=>", "−": "-", "–": "-", "—": "-"})
_DIRECTION = r"[(\[]?\s*e\s*(?P<a>\d)\s*(?:,|->|=>|>|\bto\b)\s*e\s*(?P<b>\d)\s*[)\]]?"
_TYPE_ALT = "|".join(f"(?P<t{i}>{p})" for i, p in enumerate(_TYPE_PATTERNS.values()))
_FULL = re.compile(rf"(?<![a-z])(?:{_TYPE_ALT})\s*:?\s*{_DIRECTION}", re.IGNORECASE)
_BARE = re.compile(rf"(?<![a-z])(?:{_TYPE_ALT})(?![a-z])", re.IGNORECASE)
_REVERSED_RE = re.compile(rf"(?<![a-z])(?:{_REVERSED})(?![a-z])", re.IGNORECASE)
_UNKNOWN_SHAPE = re.compile(r"(?<![a-z])[a-z]+(?:-[a-z]+)+\s*\(\s*e\s*\d\s*,\s*e\s*\d\s*\)|(?<![a-z])[a-z]+\(\s*e\s*\d\s*,\s*e\s*\d\s*\)",
                            re.IGNORECASE)
_LEAD_IN = re.compile(r"^(?:the\s+)?(?:answer|label|relation(?:ship)?|output|response)(?:\s+is)?\s*[:=-]?\s*", re.IGNORECASE)
_MARKUP = re.compile(r"[*`\"'_#]+")
_OTHER_WORD = re.compile(r"(?<![\w-])Other(?![\w-])")
_OTHER_ALONE = re.compile(rf"other\s*(?:{_DIRECTION})?", re.IGNORECASE)


@dataclass(frozen=True)
class RelationParse:
    """What an RE answer says.

    Attributes:
        label: the one label named (one of :data:`~olacore.corpora.SEMEVAL_LABELS`), or ``None``.
        status: one of :data:`RE_STATUSES` (``label`` is set exactly when it is ``"ok"``).
        named: every label, bare relation name or out-of-set form found, in order of appearance.
    """

    label: str | None
    status: str
    named: tuple[str, ...] = ()


def _type_of(match: re.Match) -> str:
    return next(RELATION_TYPES[i] for i in range(len(RELATION_TYPES)) if match.group(f"t{i}"))


def _mentions_other(text: str) -> bool:
    cleaned = _LEAD_IN.sub("", _MARKUP.sub("", text.strip())).strip().rstrip(".!").strip()
    return bool(_OTHER_ALONE.fullmatch(cleaned) or _OTHER_WORD.search(text))


def _answer_line(text: str) -> str:
    """The first line with content: blank lines and lone lead-ins (``Answer:``) skipped."""
    for line in text.splitlines():
        line = line.strip()
        if line and not _LEAD_IN.fullmatch(_MARKUP.sub("", line).strip()):
            return line
    return ""


def parse_relation(answer: str) -> RelationParse:
    """Map a generated RE answer (the prompt not included) to one SemEval-2010 Task 8 label, or say why it
    cannot be (rules: module docstring)."""
    text = _answer_line((answer or "").translate(_ARROWS))
    if not text:
        return RelationParse(None, "empty")
    labels, outside, found = [], [], []
    rest = text
    for match in _FULL.finditer(text):
        kind, a, b = _type_of(match), match.group("a"), match.group("b")
        if {a, b} == {"1", "2"}:
            labels.append(f"{kind}(e{a},e{b})")
        else:
            outside.append(f"{kind}(e{a},e{b})")
        found.append((match.start(), labels[-1] if {a, b} == {"1", "2"} else outside[-1]))
        rest = rest[:match.start()] + " " * (match.end() - match.start()) + rest[match.end():]
    bare = []
    for match in _BARE.finditer(rest):
        bare.append(_type_of(match))
        found.append((match.start(), bare[-1]))
    for match in list(_REVERSED_RE.finditer(rest)) + [m for m in _UNKNOWN_SHAPE.finditer(rest)
                                                      if not _BARE.search(m.group(0))]:
        outside.append(match.group(0).strip())
        found.append((match.start(), outside[-1]))
    if _mentions_other(text):
        labels.append("Other")
        found.append((len(text), "Other"))
    named = tuple(dict.fromkeys(name for _, name in sorted(found)))
    distinct = set(labels)
    if len(distinct) >= 2:
        return RelationParse(None, "ambiguous", named)
    if len(distinct) == 1:
        label = labels[0]
        if outside or any(kind != label.split("(")[0] for kind in bare):
            return RelationParse(None, "ambiguous", named)
        return RelationParse(label, "ok", named)
    if len(set(bare)) >= 2 or (bare and outside):
        return RelationParse(None, "ambiguous", named)
    if outside:
        return RelationParse(None, "outside", named)
    if bare:
        return RelationParse(None, "no_direction", named)
    return RelationParse(None, "no_label", named)


# ----------------------------------------------------------------------------------------- NER

_BULLET = re.compile(r"^\s*(?:[-*•+]+|\d+\s*[.)])\s+")
_NONE = re.compile(r"^(?:none|no(?:ne)?\.?|n/?a|no (?:named )?entit(?:y|ies)(?: found)?|there (?:is|are) no (?:named )?entit(?:y|ies).*)$",
                   re.IGNORECASE)
_TYPE_WORD = re.compile(r"^[A-Za-z][A-Za-z_\- ]{0,24}$")
_EDGE = " \t\"'`*“”‘’«»"
_SEPARATORS = (":", "|", " - ", " – ", " — ", "=", "\t")


def entity_type(word: str) -> str | None:
    """The WNUT-17 type a word names (``"Creative Work"``, ``"persons"`` -> canonical), or ``None``."""
    key = re.sub(r"[\s_]+", "-", word.strip(_EDGE + ".,;").lower())
    if key in WNUT17_TYPES:
        return key
    if key.endswith("s") and key[:-1] in WNUT17_TYPES:
        return key[:-1]
    return None


@dataclass(frozen=True)
class EntityParse:
    """What an NER answer says, placed on the sentence's words.

    Attributes:
        tags: one BIO tag per word (``"B-person"``, ``"I-person"``, ``"O"``).
        status: one of :data:`NER_STATUSES`.
        entities: ``(first word, last word + 1, type)`` of every entity placed, in order.
        problems: per-line problem counts (``bad_line``, ``outside_type``, ``not_in_sentence``,
            ``overlap``).
    """

    tags: tuple[str, ...]
    status: str
    entities: tuple[tuple[int, int, str], ...] = ()
    problems: dict = field(default_factory=dict)


def _split_line(line: str) -> tuple[str, str] | None:
    """``(left, right)`` of an entity line, or ``None`` if it has no separator."""
    paren = re.fullmatch(r"\(?\s*(.+?)\s*,\s*([^,()]+?)\s*\)?", line) if line.startswith("(") else None
    if paren:
        return paren.group(1), paren.group(2)
    for separator in _SEPARATORS:
        if separator in line:
            left, right = line.split(separator, 1)
            return left, right
    paren = re.fullmatch(r"(.+?)\s*[(\[]\s*([^()\[\]]+?)\s*[)\]]\.?", line)
    if paren:
        return paren.group(1), paren.group(2)
    return None


def _occurrences(words_lower: list[str], target: list[str]) -> list[int]:
    size = len(target)
    return [i for i in range(len(words_lower) - size + 1) if words_lower[i:i + size] == target]


def _entity_words(text: str) -> list[str]:
    text = text.strip(_EDGE).rstrip(".,;:!?").strip(_EDGE)
    return [w.lower() for w in text.split()]


def parse_entities(answer: str, words) -> EntityParse:
    """Map a generated NER answer (the prompt not included) to BIO tags over ``words``, one per word (rules:
    module docstring)."""
    words = list(words)
    lower = [w.lower() for w in words]
    tags = ["O"] * len(words)
    taken = [False] * len(words)
    entities: list[tuple[int, int, str]] = []
    problems = {"bad_line": 0, "outside_type": 0, "not_in_sentence": 0, "overlap": 0}
    if not (answer or "").strip():
        return EntityParse(tuple(tags), "empty", (), problems)
    read = said_none = 0

    def place(target: list[str], kind: str) -> bool:
        starts = _occurrences(lower, target)
        if not starts:
            return False
        placed = False
        for start in starts:
            end = start + len(target)
            if any(taken[start:end]):
                continue
            taken[start:end] = [True] * (end - start)
            tags[start:end] = [f"B-{kind}"] + [f"I-{kind}"] * (end - start - 1)
            entities.append((start, end, kind))
            placed = True
        if not placed:
            problems["overlap"] += 1
        return True

    lines = []
    for raw in answer.splitlines():
        line = _BULLET.sub("", raw.replace("**", "").strip()).strip()
        tuples = re.findall(r"\(([^()]*,[^()]*)\)", line) if line.startswith(("(", "[(")) else []
        if len(tuples) > 1:  # "(a, person), (b, location)" on one line
            lines.extend(f"({t})" for t in tuples)
        else:
            lines.append(line)
    for line in lines:
        if not line:
            continue
        if _NONE.fullmatch(line.strip(_EDGE + ".!").strip()):
            said_none += 1
            continue
        parts = _split_line(line)
        if parts is None:
            problems["bad_line"] += 1
            continue
        left, right = parts
        left_type, right_type = entity_type(left), entity_type(right)
        if not right.strip(_EDGE + ".") and left_type is None:  # "Entities:", "Here they are:"
            continue
        if (left_type is None) == (right_type is None):
            if left_type is None and _TYPE_WORD.match(left.strip(_EDGE)) and len(left.split()) <= 2 and right.strip():
                problems["outside_type"] += 1  # "organization: Apple"
            else:
                problems["bad_line"] += 1
            continue
        kind, text = (left_type, right) if left_type else (right_type, left)
        target = _entity_words(text)
        if not target:
            problems["bad_line"] += 1
            continue
        read += 1
        if place(target, kind):
            continue
        pieces = [_entity_words(piece) for piece in text.split(",")]
        if len(pieces) > 1 and all(pieces) and all(_occurrences(lower, piece) for piece in pieces):
            for piece in pieces:
                place(piece, kind)
        else:
            problems["not_in_sentence"] += 1
    bad = problems["bad_line"] + problems["outside_type"]
    if read == 0 and said_none == 0:
        status = "unparseable"
    elif read == 0 and bad == 0:
        status = "none"
    elif bad:
        status = "partial"
    else:
        status = "ok"
    order = sorted(entities)
    return EntityParse(tuple(tags), status, tuple(order), problems)
