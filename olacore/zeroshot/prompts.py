"""The fixed zero-shot prompts (RE and NER), and which form each model gets: chat template or plain text.

The paper's only baseline for TOA transfer is zero-shot prompting of the target LM (paper section
4.4, its RE table). Our prompts are written for this book (not taken from the official code) and
fixed: any change of wording must bump :data:`PROMPT_VERSION` (the answers are cached per rendered
prompt anyway, so an unbumped change is still never served stale answers).

Two forms:

- ``"chat"``: the instructions are the user turn of the tokenizer's own chat template
  (``tokenizer.apply_chat_template(..., add_generation_prompt=True)``); the template's default
  system turn is kept. Used for every model whose tokenizer has a chat template: in our zoo
  ``smollm2-135m`` (SmolLM2-135M-Instruct) and ``qwen2.5-0.5b`` (Qwen2.5-Coder-0.5B-Instruct).
- ``"plain"``: the same instructions as plain text, ending in an answer cue (``Label:`` /
  ``Entities:``) that a base model completes; the tokenizer adds its special tokens (Gemma's
  ``<bos>``). Used for models without a chat template: in our zoo ``gemma-3-270m`` (a base
  model). The official zero-shot scripts (``rel_zeroshot.py``, ``ner_zeroshot.py``) feed their
  instruct models plain text too, with no chat template; ``form="plain"`` reproduces that.

Decoding (both forms): greedy, at most ``max_new_tokens`` new tokens (RE 20, NER 40), ending at
the model's end-of-turn tokens and at the task's stop strings: an RE answer is one line (the
models otherwise go on reciting the label list); a plain NER answer ends at a blank line or a
new ``Sentence:`` (a base model otherwise writes the next example).

The wordings were chosen on the dev splits, never on test: for RE, the 19 labels each with a
one-line meaning (which direction is which) against a bare list of the labels (with the bare
list Qwen2.5 answered every one of 40 dev examples with a relation name without direction;
with the meanings 37 of 40 answers were labels); for Gemma's plain form the cue ``Label:``
against ``Answer:`` and ``The relation between e1 and e2 is`` (40 dev examples each; only
``Label:`` gave any label at all). For NER, the ``<type>: <entity text>`` list against a
version with a one-line description per type (Qwen2.5 then answered ``none`` to 26 of 30 dev
sentences) and one without the ``none`` option (30 dev sentences; Qwen2.5 entity F1 0.20,
0.00 and 0.18).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from olacore.corpora import SEMEVAL_LABELS, NERSentence, RelationExample

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = ["TASKS", "FORMS", "PROMPT_VERSION", "PromptSpec", "PROMPTS", "RELATION_GLOSSES", "prompt_form", "build_prompt",
           "instructions", "prompt_forms", "example_prompt"]

TASKS = ("re", "ner")
FORMS = ("chat", "plain")
#: Bump the task's version whenever its wording, cue, stop strings or token budget change.
PROMPT_VERSION = {"re": "re-v1", "ner": "ner-v1"}

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
        task: ``"re"`` or ``"ner"``.
        version: :data:`PROMPT_VERSION` of the task.
        head: the instructions shared by every example (the cached prompt prefix).
        cue: the answer cue appended in the plain form (the chat form ends with the template's
            assistant turn instead).
        max_new_tokens: the most tokens generated per answer.
        plain_stop: strings that end a plain-form answer (first occurrence after the first
            non-blank character), besides the end-of-turn token.
        chat_stop: the same for chat-form answers.
    """

    task: str
    version: str
    head: str
    cue: str
    max_new_tokens: int
    plain_stop: tuple[str, ...]
    chat_stop: tuple[str, ...]

    def stop(self, form: str) -> tuple[str, ...]:
        """The stop strings of ``form`` (``"chat"`` or ``"plain"``)."""
        return self.plain_stop if form == "plain" else self.chat_stop


PROMPTS = {
    "re": PromptSpec("re", PROMPT_VERSION["re"], _RE_HEAD, "\nLabel:", 20, ("\n",), ("\n",)),
    "ner": PromptSpec("ner", PROMPT_VERSION["ner"], _NER_HEAD, "\nEntities:\n", 40, ("\n\n", "\nSentence:"), ()),
}


def _check_task(task: str) -> PromptSpec:
    if task not in PROMPTS:
        raise ValueError(f"unknown zero-shot task {task!r}; choose one of {', '.join(TASKS)}")
    return PROMPTS[task]


def _span_text(example: RelationExample, span: tuple[int, int]) -> str:
    return " ".join(example.words[span[0]:span[1]])


def instructions(task: str, example: RelationExample | NERSentence) -> str:
    """The user message of ``example``: the task's fixed head, then the example.

    RE: ``Sentence: <text>`` (entity markers removed, as the models read it), ``e1: <entity 1>``,
    ``e2: <entity 2>``. NER: ``Sentence: <text>``.

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
        ValueError: ``form`` is not ``"auto"``, ``"chat"`` or ``"plain"``, or ``"chat"`` for a
            tokenizer without a chat template.
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
    """The full prompt text of one example in ``form`` (``"chat"`` or ``"plain"``).

    Chat: the instructions as the single user turn, rendered by ``apply_chat_template`` with the
    generation prompt (tokenize it with ``add_special_tokens=False``: the template holds them).
    Plain: instructions + the task's cue (tokenize with the tokenizer's special tokens).

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
    """Which prompt form each model gets: ``model, form, reason`` (one row per model).

    Args:
        models: model names (zoo, folder or Hugging Face id).
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


def example_prompt(model: str, task: str, example, form: str = "auto") -> str:
    """The exact prompt text ``model`` is given for ``example`` (for a chapter to print).

    Raises:
        ValueError: unknown model or task, an encoder, a wrong example type or form.
    """
    from olacore.zeroshot.generate import load_tokenizer

    tokenizer = load_tokenizer(model)
    return build_prompt(tokenizer, task, example, prompt_form(tokenizer, form))
