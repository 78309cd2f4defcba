"""The fixed zero-shot prompts (RE and NER), and which form each model gets: chat template or plain text.

The paper's only baseline for TOA transfer is zero-shot prompting of the target LM (paper section 4.4, its RE
table). Our prompts are written for this book (not taken from the official code), chosen on the dev splits,
never on test, and fixed (a change of wording changes the code digest in every answer's key:
:func:`olacore.zeroshot.answer_keys`).

- ``"chat"``: the instructions are the user turn of the tokenizer's own chat template (its default system turn
  kept); for every tokenizer that has one (in our zoo ``smollm2-135m`` and ``qwen2.5-0.5b``).
- ``"plain"``: the same instructions as plain text, ending in an answer cue (``Label:`` / ``Entities:``) that a
  base model completes (in our zoo ``gemma-3-270m``). The official ``rel_zeroshot.py`` and ``ner_zeroshot.py``
  feed their instruct models plain text too, with no chat template; ``form="plain"`` reproduces that.

Decoding: greedy, at most ``max_new_tokens`` (RE 20, NER 40), ending at the model's end-of-turn tokens and at the
task's stop strings (an RE answer is one line; a plain NER answer ends at a blank line or a new ``Sentence:``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from olacore.corpora import SEMEVAL_LABELS, NERSentence, RelationExample

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = ["TASKS", "FORMS", "PromptSpec", "PROMPTS", "RELATION_GLOSSES", "prompt_form", "build_prompt",
           "instructions", "prompt_forms"]

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
    from olacore.zeroshot.generate import load_tokenizer

    rows = []
    for name in models:
        tokenizer = (tokenizers or {}).get(name) or load_tokenizer(name)
        form = prompt_form(tokenizer)
        reason = ("its tokenizer has a chat template (instruct checkpoint): instructions as the user turn"
                  if form == "chat" else "no chat template (base model): plain-text completion prompt")
        rows.append((name, form, reason))
    return pd.DataFrame(rows, columns=["model", "form", "reason"])
