"""Zero-shot prompting of a causal LM: the paper's only baseline for TOA transfer (paper section 4.4, its RE table:
:func:`olacore.report.paper_toa_relation_extraction`; official ``rel_zeroshot.py``, ``ner_zeroshot.py``).

**Prompts** (:data:`PROMPTS`, :func:`build_prompt`): fixed RE (SemEval-2010 Task 8) and NER (WNUT-17) instructions,
written for this book and chosen on the dev splits. Form ``"chat"``: the instructions as the user turn of the
tokenizer's chat template (``smollm2-135m``, ``qwen2.5-0.5b``); ``"plain"``: the same text ending in an answer cue
(``Label:`` / ``Entities:``) for a base model to complete (``gemma-3-270m``).

**Decoding** (:func:`generate_greedy`, :func:`decode_batch`): greedy, at most ``max_new_tokens`` (RE 20, NER 40),
ending at the model's end-of-turn tokens and the task's stop strings. The token prefix all prompts share runs once
per batch; the answers equal ``model.generate``'s greedy ones up to float rounding.

**Parsing**, tolerant of surface form, never guessing; an RE answer whose status is not ``"ok"``, or an NER answer
with no usable line, scores as wrong and is counted. :func:`parse_relation` reads the answer's first line with
content (a lone lead-in such as ``Answer:`` skipped):

- ``ok``: exactly one of the 19 labels is named (twice is still one). A directed label is a relation name (case,
  spaces, ``-`` or ``_`` between its words free) and a direction: ``(e1,e2)``, ``[e1,e2]``, ``e1->e2``,
  ``e1 => e2``, ``e1→e2``, ``e1 to e2``. ``Other`` is named when the whole answer is that word (any case; lead-ins,
  quotes, markup, a final full stop removed) or the capitalised word ``Other`` stands alone in it.
- ``ambiguous``: two or more different labels, or one label and another relation's bare name.
- ``no_direction``: one relation named without a direction (``Cause-Effect``).
- ``outside``: label-shaped but outside the set (``Effect-Cause(e1,e2)``, ``(e1,e1)``, ``Word-Word(e1,e2)``).
- ``no_label``: no label named; ``empty``: nothing but white space.

:func:`parse_entities` reads line by line (bullets, markdown and lead-in lines dropped): ``type: text``,
``text: type``, ``type - text``, ``type | text``, ``text (type)`` or ``(text, type)``, ``type`` one of WNUT-17's
six (case, ``_``/space for ``-`` and a plural ``s`` tolerated); ``none`` says there is none. The text is matched,
case-insensitively, to a run of the sentence's words, and every occurrence not overlapping an entity placed before
is tagged (BIO); ``type: A, B`` whose parts are in the sentence gives one entity per part. Problems counted per
line: ``bad_line``, ``outside_type``, ``not_in_sentence``, ``overlap``. Statuses: ``ok``, ``none``, ``partial``
(some lines read), ``unparseable`` (none read), ``empty``.

**Experiment** (:func:`zero_shot`, :func:`zero_shot_scores`): every raw answer is cached under :func:`answer_keys`;
RE 19-way accuracy and the official SemEval-2010 Task 8 macro-F1, NER entity-level F1 (seqeval).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import pandas as pd
import torch

from olacore.corpora import NERSentence, RelationExample, SEMEVAL_LABELS, WNUT17_TYPES
from olacore.loading import from_pretrained, model_fingerprint, model_kind
from olacore.results import progress as progress_bar
from olacore.settings import check_compute_options, cpu_workers, fixed_threads, resolve_device
from olacore.store import TensorStore, code_digest

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = ["zero_shot", "zero_shot_scores", "semeval_macro_f1", "answer_keys", "GenerativeLM", "Generation",
           "load_generator", "load_tokenizer", "generate_greedy", "parse_relation", "parse_entities", "RelationParse",
           "EntityParse", "PROMPTS", "build_prompt", "instructions", "prompt_form", "prompt_forms", "TASKS", "FORMS",
           "PromptSpec", "RELATION_GLOSSES", "RELATION_TYPES", "RE_STATUSES", "NER_STATUSES", "entity_type",
           "answer_identity", "tokenize_prompts", "decode_batch", "decode_job", "END_OF_TURN"]


TASKS = ("re", "ner")
FORMS = ("chat", "plain")

#: The six WNUT-17 types in the order the NER prompt names them.
WNUT17_TYPES_IN_PROMPT = ("person", "location", "corporation", "group", "creative-work", "product")

#: What each directed label means, in the words of the task's definitions (X(e1,e2): e1 is X's first role).
RELATION_GLOSSES = {
    "Cause-Effect": "{a} causes {b}",
    "Component-Whole": "{a} is a part of {b}",
    "Content-Container": "{a} is held inside {b}",
    "Entity-Destination": "{a} moves into or toward {b}",
    "Entity-Origin": "{a} comes from {b}",
    "Instrument-Agency": "{a} is the instrument used by {b}",
    "Member-Collection": "{a} is a member of {b}",
    "Message-Topic": "{a} is a message about {b}",
    "Product-Producer": "{a} is made by {b}",
}


def _gloss(label: str) -> str:
    if label == "Other":
        return "Other: none of these relations holds"
    kind, direction = label[:-7], label[-6:-1]
    a, b = direction.split(",")
    return f"{label}: " + RELATION_GLOSSES[kind].format(a=a, b=b)


_RE_HEAD = (
    "Task: relation classification. Read the sentence and decide which semantic relation holds "
    "between entity e1 and entity e2. Choose exactly one label from this list (label: meaning):\n"
    + "\n".join(_gloss(label) for label in SEMEVAL_LABELS)
    + "\nAnswer with the label only, copied exactly from the list, direction included.\n\n"
)
_NER_HEAD = (
    "Task: named entity recognition. Find the named entities in the sentence: people, locations, "
    "corporations, groups, creative works and products. For each one write a line <type>: <entity text>, "
    "where <type> is one of " + ", ".join(WNUT17_TYPES_IN_PROMPT) + ", and <entity text> is copied exactly "
    "from the sentence. If there is none, write none.\n\n"
)


@dataclass(frozen=True)
class PromptSpec:
    """One task's fixed prompt and decoding budget.

    Attributes:
        head: the instructions shared by every example (the cached prompt prefix).
        cue: the answer cue of the plain form (the chat form ends with the template's assistant turn).
        plain_stop, chat_stop: strings that end an answer of that form (first occurrence after the first non-blank
            character), besides the end-of-turn token.
    """

    task: str
    head: str
    cue: str
    max_new_tokens: int
    plain_stop: tuple[str, ...]
    chat_stop: tuple[str, ...]

    def stop(self, form: str) -> tuple[str, ...]:
        """The stop strings of ``form`` (``"chat"`` or ``"plain"``)."""
        return self.plain_stop if form == "plain" else self.chat_stop


PROMPTS = {
    "re": PromptSpec("re", _RE_HEAD, "\nLabel:", 20, ("\n",), ("\n",)),
    "ner": PromptSpec("ner", _NER_HEAD, "\nEntities:\n", 40, ("\n\n", "\nSentence:"), ()),
}


def _check_task(task: str) -> PromptSpec:
    if task not in PROMPTS:
        raise ValueError(f"unknown zero-shot task {task!r}; choose one of {', '.join(TASKS)}")
    return PROMPTS[task]


def _span_text(example: RelationExample, span: tuple[int, int]) -> str:
    return " ".join(example.words[span[0]:span[1]])


def instructions(task: str, example: RelationExample | NERSentence) -> str:
    """The user message of ``example``: the task's fixed head, then ``Sentence: <text>`` (entity markers
    removed) and, for RE, ``e1: <entity 1>`` and ``e2: <entity 2>``.

    Raises:
        ValueError: unknown task, or an example of the other task's type.
    """
    spec = _check_task(task)
    if task == "re":
        if not isinstance(example, RelationExample):
            raise ValueError(f"task 're' needs a RelationExample (olacore.corpora.read_semeval); got {type(example).__name__}")
        return f"{spec.head}Sentence: {example.text}\ne1: {_span_text(example, example.e1)}\ne2: {_span_text(example, example.e2)}"
    if not isinstance(example, NERSentence):
        raise ValueError(f"task 'ner' needs an NERSentence (olacore.corpora.read_wnut17); got {type(example).__name__}")
    return f"{spec.head}Sentence: {example.text}"


def prompt_form(tokenizer: "PreTrainedTokenizerBase", form: str = "auto") -> str:
    """``"chat"`` if ``form`` is ``"auto"`` and the tokenizer has a chat template, else ``"plain"``.

    Raises:
        ValueError: ``form`` not ``"auto"``, ``"chat"`` or ``"plain"``; ``"chat"`` without a chat template.
    """
    if form not in ("auto",) + FORMS:
        raise ValueError(f"form must be 'auto', 'chat' or 'plain'; got {form!r}")
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if form == "chat" and not has_template:
        raise ValueError("form='chat' needs a tokenizer with a chat template; this one has none (use 'plain')")
    if form == "auto":
        return "chat" if has_template else "plain"
    return form


def build_prompt(tokenizer: "PreTrainedTokenizerBase", task: str, example, form: str) -> str:
    """The full prompt text of one example in ``form``: ``"chat"`` (the instructions as the single user turn,
    ``apply_chat_template`` with the generation prompt; tokenize with ``add_special_tokens=False``) or ``"plain"``
    (instructions + cue; tokenize with the special tokens).

    Raises:
        ValueError: unknown task or form, wrong example type.
    """
    spec = _check_task(task)
    text = instructions(task, example)
    if form == "chat":
        return tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                             add_generation_prompt=True)
    if form == "plain":
        return text + spec.cue
    raise ValueError(f"form must be 'chat' or 'plain'; got {form!r}")


def prompt_forms(models, tokenizers=None) -> pd.DataFrame:
    """Which prompt form each model gets: ``model, form, reason``, one row per model (zoo, folder or hub id).

    Args:
        tokenizers: optional ``{name: tokenizer}``; missing ones are loaded (tokenizer only).
    """
    rows = []
    for name in models:
        tokenizer = (tokenizers or {}).get(name) or load_tokenizer(name)
        form = prompt_form(tokenizer)
        reason = ("its tokenizer has a chat template (instruct checkpoint): instructions as the user turn"
                  if form == "chat" else "no chat template (base model): plain-text completion prompt")
        rows.append((name, form, reason))
    return pd.DataFrame(rows, columns=["model", "form", "reason"])


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


#: Tokens that end an answer when the vocabulary has them (besides the configured EOS ids).
END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<|eot_id|>", "<|end|>")


def _refuse_encoder(name: str) -> None:
    if model_kind(name) != "causal":
        raise ValueError(
            f"{name} is a bidirectional encoder: zero-shot prompting needs a causal LM that generates "
            f"text (in the zoo: smollm2-135m, gemma-3-270m, qwen2.5-0.5b)"
        )


def load_tokenizer(name: str) -> "PreTrainedTokenizerBase":
    """The tokenizer of a causal LM (zoo name, folder or Hugging Face id), without its weights.

    Read once per process and name: callers share the object and must not change it.

    Raises:
        ValueError: unknown model (lists the zoo names), or an encoder.
    """
    _refuse_encoder(name)
    return _read_tokenizer(os.fspath(name))


@functools.lru_cache(maxsize=8)
def _read_tokenizer(name: str) -> "PreTrainedTokenizerBase":
    from transformers import AutoTokenizer

    return from_pretrained(name, AutoTokenizer.from_pretrained)


@dataclass
class GenerativeLM:
    """A causal LM with its LM head (float32, eval mode, no gradients), ready for :func:`generate_greedy`.

    Attributes:
        fingerprint: :func:`olacore.loading.model_fingerprint` of ``name`` (keys cached answers).
        end_ids: token ids that end an answer (configured EOS ids and :data:`END_OF_TURN` tokens).
    """

    name: str
    tokenizer: "PreTrainedTokenizerBase"
    model: "PreTrainedModel"
    device: torch.device
    fingerprint: str
    end_ids: frozenset[int]


def answer_identity(model: "str | GenerativeLM") -> tuple[str, "PreTrainedTokenizerBase", str]:
    """``(name, tokenizer, fingerprint)`` of a causal LM given by name or loaded: what cached answers are
    keyed on, read without loading the weights.

    Raises:
        ValueError: unknown model (lists the zoo names), or an encoder.
    """
    if isinstance(model, GenerativeLM):
        name, tokenizer, fingerprint = model.name, model.tokenizer, model.fingerprint
    else:
        name = os.fspath(model)
        tokenizer, fingerprint = load_tokenizer(name), None
    if fingerprint is None:
        fingerprint = model_fingerprint(name)
    return name, tokenizer, fingerprint


def _end_ids(model, tokenizer) -> frozenset[int]:
    ids: set[int] = set()
    for value in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif value is not None:
            ids.update(int(v) for v in value)
    vocabulary = tokenizer.get_vocab()
    ids.update(vocabulary[token] for token in END_OF_TURN if token in vocabulary)
    return frozenset(ids)


def load_generator(name: str, device: str | torch.device | None = None) -> GenerativeLM:
    """A causal LM WITH its LM head, for generation: float32, eval mode. ``name``: zoo name (its folder built by
    ``scripts/build_zoo.py``), local folder or Hugging Face id in the local Hugging Face cache.

    Raises:
        ValueError: unknown model, an encoder, or a checkpoint lacking weights (a random LM head would emit noise).
    """
    from transformers import AutoModelForCausalLM

    _refuse_encoder(name)
    tokenizer = load_tokenizer(name)
    model, info = from_pretrained(name, AutoModelForCausalLM.from_pretrained, dtype=torch.float32,
                                  output_loading_info=True)
    if info.get("missing_keys"):
        raise ValueError(f"{name}: the checkpoint lacks {sorted(info['missing_keys'])[:5]}; its LM head "
                         f"would be random. Rebuild the folder or use a complete checkpoint.")
    device = resolve_device(device)
    model.eval().requires_grad_(False).to(device)
    return GenerativeLM(os.fspath(name), tokenizer, model, device, model_fingerprint(name), _end_ids(model, tokenizer))


@dataclass(frozen=True)
class Generation:
    """One generated answer.

    Attributes:
        text: the decoded answer (special tokens skipped), cut before the first stop string, stripped.
        tokens: the generated token ids (the end-of-turn token not included).
        finish: ``"eos"`` (end-of-turn token), ``"stop"`` (a stop string) or ``"length"`` (``max_new_tokens``).
        seconds: batch time (its shared prefix's pass included) / batch size.
    """

    text: str
    tokens: tuple[int, ...]
    finish: str
    prompt_tokens: int
    seconds: float


def _cut(text: str, stop: Sequence[str]) -> int | None:
    """Index of the first stop string after the first non-blank character, or ``None``."""
    begin = len(text) - len(text.lstrip())
    hits = [i for s in stop if (i := text.find(s, begin + 1 if begin < len(text) else len(text))) >= 0]
    return min(hits) if hits else None


def _common_prefix(sequences: list[list[int]]) -> int:
    shortest = min(len(s) for s in sequences)
    length = 0
    while length < shortest - 1 and all(s[length] == sequences[0][length] for s in sequences):
        length += 1
    return length


def tokenize_prompts(tokenizer: "PreTrainedTokenizerBase", prompts: Sequence[str], add_special_tokens: bool
                     ) -> tuple[list[list[int]], int]:
    """``(token ids of each prompt, shared)``: ``shared`` is the length of the longest token prefix all prompts share
    (at most one less than the shortest prompt), which :func:`decode_batch` runs once per batch."""
    ids = [tokenizer(p, add_special_tokens=add_special_tokens)["input_ids"] for p in prompts]
    return ids, _common_prefix(ids)


@torch.inference_mode()
def decode_batch(lm: GenerativeLM, rows: Sequence[Sequence[int]], shared: int, *, max_new_tokens: int,
                 stop: Sequence[str] = ()) -> list[Generation]:
    """Greedy answers to one batch of tokenized prompts whose first ``shared`` tokens are equal, in order.

    The shared prefix runs once, its KV cache repeated over the batch; the rest of each prompt is left-padded behind
    it. Runs on :data:`olacore.settings.COMPUTE_THREADS` threads, so an answer depends only on its batch and
    ``shared``.
    """
    tokenizer, model, device = lm.tokenizer, lm.model, lm.device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else next(iter(sorted(lm.end_ids)), 0)
    with fixed_threads():
        begin = time.perf_counter()
        cache = None
        if shared:
            cache = model(input_ids=torch.tensor([list(rows[0][:shared])], device=device), use_cache=True).cache
        size, width = len(rows), max(len(r) - shared for r in rows)
        inputs = torch.full((size, width), pad, dtype=torch.long)
        present = torch.zeros((size, width), dtype=torch.long)
        for r, row in enumerate(rows):
            suffix = list(row[shared:])
            inputs[r, width - len(suffix):] = torch.tensor(suffix)
            present[r, width - len(suffix):] = 1
        mask = torch.cat([torch.ones((size, shared), dtype=torch.long), present], dim=1).to(device)
        positions = (shared + (present.cumsum(-1) - 1).clamp(min=0)).to(device)
        if cache is not None and size > 1:
            cache.batch_repeat_interleave(size)
        out = model(input_ids=inputs.to(device), attention_mask=mask, position_ids=positions, cache=cache,
                    use_cache=True, logits_to_keep=1)
        generated: list[list[int]] = [[] for _ in rows]
        finish: list[str | None] = [None] * size
        texts = [""] * size
        for step in range(max_new_tokens):
            chosen = out.logits[:, -1].argmax(-1)
            for r, token in enumerate(chosen.tolist()):
                if finish[r]:
                    continue
                if token in lm.end_ids:
                    finish[r] = "eos"
                    continue
                generated[r].append(token)
                if stop:
                    decoded = tokenizer.decode(generated[r], skip_special_tokens=True)
                    cut = _cut(decoded, stop)
                    if cut is not None:
                        finish[r], texts[r] = "stop", decoded[:cut]
                        continue
                if step == max_new_tokens - 1:
                    finish[r] = "length"
            if all(finish):
                break
            mask = torch.cat([mask, torch.ones((size, 1), dtype=torch.long, device=device)], dim=1)
            positions = positions[:, -1:] + 1
            out = model(input_ids=chosen[:, None], attention_mask=mask, position_ids=positions,
                        cache=out.cache, use_cache=True)
        seconds = (time.perf_counter() - begin) / size
    results = []
    for r, row in enumerate(rows):
        text = texts[r] if finish[r] == "stop" else tokenizer.decode(generated[r], skip_special_tokens=True)
        results.append(Generation(text.strip(), tuple(generated[r]), finish[r], len(row), seconds))
    return results


def _worker_generator(name: str, device: str) -> GenerativeLM:
    """The generator of a worker process, kept for its next job as the workers keep models
    (:func:`olacore.workers.kept`: one at a time, keyed with the model's fingerprint)."""
    from olacore.workers import kept

    return kept(("generator", name, device, model_fingerprint(name)), lambda: load_generator(name, device=device))


def decode_job(job: tuple) -> list[Generation]:
    """One batch of :func:`decode_batch` in a worker process: ``(model name, device, rows, shared, max_new_tokens,
    stop)``."""
    name, device, rows, shared, max_new_tokens, stop = job
    return decode_batch(_worker_generator(name, device), rows, shared, max_new_tokens=max_new_tokens, stop=stop)


def generate_greedy(lm: GenerativeLM, prompts: Sequence[str], *, max_new_tokens: int, add_special_tokens: bool,
                    stop: Sequence[str] = (), batch_size: int = 8, progress: bool = False) -> list[Generation]:
    """Greedy answers to ``prompts``, one :class:`Generation` each, in order (:func:`decode_batch` per batch).

    Args:
        prompts: full prompt texts (non-empty), batched in their given order: batch ``j`` holds prompts
            ``j * batch_size`` to ``(j + 1) * batch_size - 1``; every batch starts with the token prefix all of
            ``prompts`` share.
        add_special_tokens: let the tokenizer add its special tokens (plain prompts); ``False`` for chat-template
            prompts, which hold them already.
        stop: strings that end an answer (checked on the decoded answer after each step).

    Raises:
        ValueError: empty prompt list or prompt, ``max_new_tokens`` or ``batch_size`` below 1.
    """
    if not prompts or any(not p for p in prompts):
        raise ValueError("prompts must be a non-empty list of non-empty strings")
    if max_new_tokens < 1 or batch_size < 1:
        raise ValueError(f"max_new_tokens and batch_size must be >= 1; got {max_new_tokens}, {batch_size}")
    ids, shared = tokenize_prompts(lm.tokenizer, prompts, add_special_tokens)
    results: list[Generation] = []
    firsts = range(0, len(prompts), batch_size)
    for first in progress_bar(firsts, enabled=progress, total=len(firsts), desc=f"zero-shot {lm.name}"):
        results += decode_batch(lm, ids[first:first + batch_size], shared, max_new_tokens=max_new_tokens, stop=stop)
    return results


def _decoding(task: str, form: str) -> dict:
    spec = PROMPTS[task]
    return {"greedy": True, "max_new_tokens": spec.max_new_tokens,
            "stop": list(spec.stop(form)), "end_of_turn": True}


def _batches(count: int, batch_size: int) -> list[range]:
    """The fixed batches of ``count`` distinct prompts: batch ``j`` holds prompts ``j * batch_size`` onwards."""
    return [range(first, min(first + batch_size, count)) for first in range(0, count, batch_size)]


def answer_keys(store: TensorStore, fingerprint: str, task: str, form: str, prompts: Sequence[str],
                texts: Sequence[str], *, device: str, batch_size: int = 16, shared: int = 0) -> list[str]:
    """The store key of each answer: model fingerprint, task, form, decoding, prompt, text, ``device`` type, the
    :func:`olacore.store.code_digest` of this module and its imports, the prompts of its fixed batch (``prompts``
    distinct and in order, cut into batches of ``batch_size``) and ``shared``, the token prefix run once per batch."""
    decoding, code = _decoding(task, form), code_digest(__name__)
    keys = []
    for batch in _batches(len(prompts), batch_size):
        members = hashlib.sha256(json.dumps([prompts[i] for i in batch], ensure_ascii=False).encode()).hexdigest()
        keys += [store.key(kind="zero-shot-answer", model=fingerprint, task=task, form=form, decoding=decoding,
                           prompt=prompts[i], text=texts[i], device=device, code=code, batch=members, shared=shared)
                 for i in batch]
    return keys


def _check_examples(task: str, examples: Sequence) -> list:
    if task not in PROMPTS:
        raise ValueError(f"unknown zero-shot task {task!r}; choose 're' or 'ner'")
    examples = list(examples)
    if not examples:
        raise ValueError("examples is empty; pass records of olacore.corpora.read_semeval / read_wnut17")
    wanted = RelationExample if task == "re" else NERSentence
    wrong = [i for i, x in enumerate(examples) if not isinstance(x, wanted)]
    if wrong:
        raise ValueError(f"task {task!r} needs {wanted.__name__} records; example {wrong[0]} is "
                         f"{type(examples[wrong[0]]).__name__}")
    return examples


def zero_shot(model: str | GenerativeLM, task: str, examples: Sequence, *, form: str = "auto", batch_size: int = 16,
              device: str | torch.device | None = None, workers: int | None = None, progress: bool = True,
              store: TensorStore | None = None) -> pd.DataFrame:
    """Zero-shot prompting of a causal LM on ``examples``: one parsed row per example.

    Args:
        model: a causal LM name (zoo, folder, Hugging Face id; weights loaded only on a cache miss) or a
            :class:`GenerativeLM`.
        task: ``"re"`` (SemEval-2010 Task 8 :class:`RelationExample` records) or ``"ner"`` (WNUT-17
            :class:`NERSentence` records).
        form: ``"auto"`` (chat template where the tokenizer has one, else plain), ``"chat"`` or ``"plain"``.
        batch_size: prompts decoded together: the distinct prompts, in order, cut into fixed batches; a batch with
            any answer missing from ``store`` is decoded whole, so an answer never depends on what was cached.
        workers: processes decoding the missing batches on a CPU (default one per core); the answers are the same
            for any ``workers``.
        store: default ``TensorStore()``.

    Returns:
        One row per example, in order: ``model, form, id, text, gold, answer, status, finish, seconds`` (generation
        cost when made), ``cached`` and, for RE, ``e1, e2, label, correct``; for NER, ``words, tags, entities,
        bad_line, outside_type, not_in_sentence, overlap`` (``gold`` and ``tags`` are BIO tuples).

    Raises:
        ValueError: unknown task, empty or mistyped examples, an encoder or unknown model, ``batch_size`` below 1.
    """
    examples = _check_examples(task, examples)
    check_compute_options(workers, device)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1; got {batch_size!r}")
    store = store if store is not None else TensorStore()
    name, tokenizer, fingerprint = answer_identity(model)
    form = prompt_form(tokenizer, form)
    prompts = [build_prompt(tokenizer, task, x, form) for x in examples]
    where = model.device.type if isinstance(model, GenerativeLM) else resolve_device(device).type
    distinct = list(dict.fromkeys(zip(prompts, (x.text for x in examples))))  # a repeated example is asked once
    ids, shared = tokenize_prompts(tokenizer, [p for p, _ in distinct], add_special_tokens=form == "plain")
    keys = answer_keys(store, fingerprint, task, form, [p for p, _ in distinct], [t for _, t in distinct],
                       device=where, batch_size=batch_size, shared=shared)
    answers: dict[str, dict] = {}
    missing = []  # batches with an answer missing: decoded whole
    for batch in _batches(len(distinct), batch_size):
        found = {keys[i]: store.get(keys[i]) for i in batch}
        if any(entry is None for entry in found.values()):
            missing.append(batch)
        else:
            answers.update({key: dict(entry[1], cached=True) for key, entry in found.items()})
    if missing:
        spec = PROMPTS[task]
        stop = _decoding(task, form)["stop"]
        made = _decode(model, name, [[ids[i] for i in batch] for batch in missing], shared, spec.max_new_tokens, stop,
                       device=device, workers=workers, progress=progress)
        for batch, generations in zip(missing, made):
            for i, generation in zip(batch, generations):
                meta = {"answer": generation.text, "finish": generation.finish,
                        "prompt_tokens": generation.prompt_tokens, "seconds": generation.seconds,
                        "model": fingerprint, "task": task, "form": form}
                if keys[i] not in store:
                    store.put_or_warn(keys[i], {"tokens": torch.tensor(generation.tokens, dtype=torch.long)}, meta)
                answers[keys[i]] = dict(meta, cached=False)
    by_example = dict(zip(distinct, keys))
    keys = [by_example[prompt, x.text] for prompt, x in zip(prompts, examples)]
    rows = [_row(task, x, answers[key], name, form) for x, key in zip(examples, keys)]
    return pd.DataFrame(rows)


def _decode(model: str | GenerativeLM, name: str, batches: list[list[list[int]]], shared: int, max_new_tokens: int,
            stop: list[str], *, device, workers: int | None, progress: bool) -> list[list]:
    """:func:`decode_batch` of each batch of token ids, in order: in worker processes (one job per batch) when
    ``model`` is a name on a CPU and more than one batch and worker are at hand, else here."""
    workers = cpu_workers(device) if workers is None else workers
    spread = not isinstance(model, GenerativeLM) and resolve_device(device).type == "cpu" and workers > 1 \
        and len(batches) > 1
    if spread:
        from olacore.workers import run_in_processes  # the pool: it changes no answer (not in the answers' keys)

        jobs = [(name, "cpu", rows, shared, max_new_tokens, stop) for rows in batches]
        return run_in_processes(decode_job, jobs, min(workers, len(jobs)), progress=progress,
                                desc=f"zero-shot {name}")
    lm = model if isinstance(model, GenerativeLM) else load_generator(name, device=device)
    return [decode_batch(lm, rows, shared, max_new_tokens=max_new_tokens, stop=stop)
            for rows in progress_bar(batches, enabled=progress, total=len(batches), desc=f"zero-shot {name}")]


def _row(task: str, example, answer: dict, name: str, form: str) -> dict:
    row = {"model": name, "form": form, "id": example.sent_id, "text": example.text}
    text = answer["answer"]
    if task == "re":
        parsed = parse_relation(text)
        row.update(e1=" ".join(example.words[slice(*example.e1)]), e2=" ".join(example.words[slice(*example.e2)]),
                   gold=example.label, answer=text, label=parsed.label, status=parsed.status,
                   correct=parsed.label == example.label)
    else:
        parsed = parse_entities(text, example.words)
        row.update(words=example.words, gold=example.tags, answer=text, tags=parsed.tags, status=parsed.status,
                   entities=len(parsed.entities), **parsed.problems)
    row.update(finish=answer["finish"], seconds=answer["seconds"], cached=answer["cached"])
    return row


def semeval_macro_f1(gold: Sequence[str], predicted: Sequence[str | None]) -> tuple[float, pd.DataFrame]:
    """The official SemEval-2010 Task 8 score: macro-F1 over the 9 relations, direction taken into account.

    Per relation type, a true positive is a prediction equal to the gold directed label; precision's denominator is
    every prediction of that type (either direction), recall's every gold example of it; ``Other`` is left out of
    the average (its predictions still cost recall). ``None`` predictions are wrong; a type without predictions or
    gold has F1 0.

    Returns:
        ``(macro-F1 in [0, 1], per-type table: type, tp, predicted, gold, precision, recall, f1)``.
    """
    from sklearn.metrics import multilabel_confusion_matrix

    directed = [label for label in SEMEVAL_LABELS if label != "Other"]
    gold = list(gold)
    predicted = ["<none>" if p is None else p for p in predicted]
    # rows: labels; each 2x2 is [[tn, fp], [fn, tp]]
    matrices = multilabel_confusion_matrix(gold, predicted, labels=directed)
    rows = []
    for kind in RELATION_TYPES:
        picked = [i for i, label in enumerate(directed) if label.startswith(kind + "(")]
        tp = int(sum(matrices[i][1, 1] for i in picked))
        n_predicted = tp + int(sum(matrices[i][0, 1] for i in picked))
        n_gold = tp + int(sum(matrices[i][1, 0] for i in picked))
        precision = tp / n_predicted if n_predicted else 0.0
        recall = tp / n_gold if n_gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        rows.append((kind, tp, n_predicted, n_gold, precision, recall, f1))
    table = pd.DataFrame(rows, columns=["type", "tp", "predicted", "gold", "precision", "recall", "f1"])
    return float(table["f1"].mean()), table


def zero_shot_scores(rows: pd.DataFrame, task: str) -> dict:
    """Scores of :func:`zero_shot` rows (one model). Unparseable answers count as wrong and are counted.

    Returns:
        RE: ``n, accuracy`` (19-way), ``macro_f1`` (:func:`semeval_macro_f1`), ``majority_accuracy`` (share of the
        most frequent gold label), ``unparseable`` (answers naming no single label), ``unparseable_share``,
        ``outside_label_set`` (among those: a relation without direction or a label-shaped answer outside the 19),
        ``statuses`` (count per status). NER: ``n, f1, precision, recall`` (seqeval, entity level), ``unparseable``
        (answers with no readable line), ``unparseable_share``, ``partial``, ``outside_type``, ``not_in_sentence``,
        ``gold_entities``, ``predicted_entities``, ``statuses``. Shares and scores in [0, 1].

    Raises:
        ValueError: unknown task, empty rows, or rows of several models.
    """
    if task not in PROMPTS:
        raise ValueError(f"unknown zero-shot task {task!r}; choose 're' or 'ner'")
    if len(rows) == 0:
        raise ValueError("no rows to score")
    if rows["model"].nunique() > 1:
        raise ValueError(f"rows of several models ({', '.join(rows['model'].unique())}); score one model at a time")
    n = len(rows)
    statuses = {k: int(v) for k, v in rows["status"].value_counts().items()}
    if task == "re":
        macro, _ = semeval_macro_f1(rows["gold"], [x if isinstance(x, str) else None for x in rows["label"]])
        unparseable = int((rows["status"] != "ok").sum())
        return {"n": n, "accuracy": float((rows["label"] == rows["gold"]).mean()), "macro_f1": macro,
                "majority_accuracy": float(rows["gold"].value_counts().iloc[0] / n),
                "unparseable": unparseable, "unparseable_share": unparseable / n,
                "outside_label_set": int(rows["status"].isin(["outside", "no_direction"]).sum()),
                "statuses": statuses}
    from seqeval.metrics import f1_score, precision_score, recall_score

    gold, predicted = [list(t) for t in rows["gold"]], [list(t) for t in rows["tags"]]
    unparseable = int(rows["status"].isin(["unparseable", "empty"]).sum())
    return {"n": n, "f1": float(f1_score(gold, predicted, zero_division=0)),
            "precision": float(precision_score(gold, predicted, zero_division=0)),
            "recall": float(recall_score(gold, predicted, zero_division=0)),
            "unparseable": unparseable, "unparseable_share": unparseable / n,
            "partial": int((rows["status"] == "partial").sum()),
            "outside_type": int(rows["outside_type"].sum()), "not_in_sentence": int(rows["not_in_sentence"].sum()),
            "gold_entities": int(sum(sum(t.startswith("B-") for t in g) for g in gold)),
            "predicted_entities": int(rows["entities"].sum()), "statuses": statuses}
