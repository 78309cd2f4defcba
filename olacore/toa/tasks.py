"""TOA task data in each model's own tokenisation, from word-level annotations (paper section 4.4).

A task example is a sentence's OLA (one :class:`~olacore.pipeline.OLAResult`, token level) and
its labels brought to that model's tokens through the tokenizer's character offsets
(:func:`olacore.alignment.word_assignment`), so the same word-level gold serves every model. What
the official code does (``data_utils/ola_dataset.py``, ``data_utils/dp_utils.py``), and here:

- **POS** (``pos``: EWT XPOS, the Penn Treebank tags of the paper's CoNLL-2000 task; ``upos``:
  the 17 UD tags, a variant): every sub-token takes its word's tag, special tokens
  (BOS/[CLS]/[SEP]) an extra class :data:`SPECIAL`. Scored per word (at its first sub-token)
  and per sub-token (the official unit; special tokens left out here).
- **NER** (``ner``: WNUT-17, 6 types, BIO; the paper used licensed OntoNotes): every sub-token
  takes its word's tag (a ``B-`` tag repeats on a word's later sub-tokens, as officially),
  special tokens ``O``. Scored at entity level on each word's first sub-token. The official
  entity data keeps only sentences with an entity; here every sentence is kept.
- **RE** (``re``: SemEval-2010 Task 8, 19 directed labels): each entity is the token span
  ``[first token of its first word, last token of its last word]``.
- **DP** (``dp``: EWT, full relations with subtypes, as the official ``rels`` of the corpus;
  ``dp-universal``: subtypes stripped): a word is its first sub-token; a head word is its
  first sub-token; the root word's head is its own first sub-token (official convention).

**Grid.** ``grid="tokens"`` (official) keeps every token of the model, special tokens
included: the adapter reads the full ``T x T`` map and every token is a candidate head.
``grid="words"`` keeps only the rows and columns of each word's first sub-token (the maps
the syntax chapter's parser reads, :func:`olacore.alignment.first_subtoken_maps`): a ``W x W``
image, labels indexed by word, every *word* a candidate head; smaller (cheaper) and without
the special-token sinks. Words of one multi-word token (EWT "don't" = do + n't) share their
first sub-token, so their rows are equal.

**Length cut** (official ``cutoff_len`` 64): only the first ``max_tokens`` tokens are kept.
Words whose first sub-token falls beyond the cut are not scored, heads beyond it are not
scored (official ``-100``), NER entities starting beyond it are lost, RE examples with an
entity beyond it are dropped; every such loss is counted in :class:`TaskReport`. Sentences
whose words cannot be aligned to the tokens (a tokenizer that drops characters) are named
and counted there too, never silently lost.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from olacore.alignment import word_assignment
from olacore.channels import channel as lookup_channel
from olacore.toa.inputs import InputSpec, build_input, raw_maps

__all__ = ["SPECIAL", "TASKS", "GRIDS", "TaskItem", "TaskReport", "TaskData", "task_kind", "build_task_data", "universal"]

#: The class of special tokens in the POS task (official: one extra class).
SPECIAL = "<special>"
#: task name -> (kind of head, what the labels are).
TASKS: dict[str, tuple[str, str]] = {
    "pos": ("tokens", "xpos"),
    "upos": ("tokens", "upos"),
    "ner": ("tokens", "bio"),
    "re": ("relation", "semeval"),
    "dp": ("dependency", "full"),
    "dp-universal": ("dependency", "universal"),
}


#: What the adapter's image holds: every token (official) or each word's first sub-token.
GRIDS = ("tokens", "words")


def task_kind(task: str) -> str:
    """The head a task needs: ``"tokens"``, ``"relation"`` or ``"dependency"``.

    Raises:
        ValueError: unknown task (lists the known ones).
    """
    if task not in TASKS:
        raise ValueError(f"unknown TOA task {task!r}; choose one of {', '.join(TASKS)}")
    return TASKS[task][0]


def universal(deprel: str) -> str:
    """The universal part of a UD relation: ``"nmod:poss" -> "nmod"``."""
    return deprel.split(":", 1)[0]


@dataclass(frozen=True)
class TaskItem:
    """One example of a task in one model's tokenisation (after the length cut).

    Attributes:
        sent_id, text: the source sentence.
        num_tokens: tokens kept (``min(T, max_tokens)``).
        token_labels: ``tokens`` tasks: one label per kept token (``None``: not trained on,
            e.g. a whitespace-only token); empty otherwise.
        word_tokens: ``tokens`` and ``dependency``: the first sub-token of each scored word.
        word_labels: gold label of each scored word (tag, or dependency relation).
        heads: ``dependency``: gold head token of each scored word (``-1``: beyond the cut,
            not scored).
        gold_heads: ``dependency``: gold head word of each scored word (1-based, 0 = root).
        punct: ``dependency``: whether each scored word is punctuation (UPOS ``PUNCT``).
        spans: ``relation``: ``(e1_start, e1_end, e2_start, e2_end)`` token indices, end exclusive.
        label: ``relation``: the directed relation.
        positions: ``grid="words"``: the token index of each row / column of the image (each
            kept word's first sub-token); empty for the token grid. All other indices of the
            item then count rows of that image (words), not tokens.
    """

    sent_id: str
    text: str
    num_tokens: int
    token_labels: tuple = ()
    word_tokens: tuple[int, ...] = ()
    word_labels: tuple[str, ...] = ()
    heads: tuple[int, ...] = ()
    gold_heads: tuple[int, ...] = ()
    punct: tuple[bool, ...] = ()
    spans: tuple[int, int, int, int] | None = None
    label: str | None = None
    positions: tuple[int, ...] = ()


@dataclass
class TaskReport:
    """What the alignment and the length cut did to one task split (all counts, nothing hidden).

    Attributes:
        sentences: source sentences offered.
        kept: examples kept.
        unaligned: ``(sent_id, reason)`` of sentences whose words overlap no token.
        cut_sentences: kept sentences longer than the cut.
        words, words_beyond_cut: scored-unit counts (words; tokens-task words or DP words).
        heads_beyond_cut: DP words whose head lies beyond the cut (not scored).
        entities, entities_beyond_cut: NER gold entities and those starting beyond the cut.
        dropped_beyond_cut: RE examples dropped because an entity ends beyond the cut.
    """

    sentences: int = 0
    kept: int = 0
    unaligned: list[tuple[str, str]] = field(default_factory=list)
    cut_sentences: int = 0
    words: int = 0
    words_beyond_cut: int = 0
    heads_beyond_cut: int = 0
    entities: int = 0
    entities_beyond_cut: int = 0
    dropped_beyond_cut: int = 0

    def summary(self) -> str:
        """One line with every count that is not zero (and the first unaligned ids)."""
        parts = [f"{self.kept}/{self.sentences} kept"]
        if self.unaligned:
            shown = ", ".join(sid for sid, _ in self.unaligned[:3])
            parts.append(f"{len(self.unaligned)} not aligned ({shown}{', ...' if len(self.unaligned) > 3 else ''})")
        for name in ("cut_sentences", "words_beyond_cut", "heads_beyond_cut", "entities_beyond_cut", "dropped_beyond_cut"):
            value = getattr(self, name)
            if value:
                parts.append(f"{name.replace('_', ' ')}: {value}")
        if self.words:
            parts.append(f"{self.words} words")
        if self.entities:
            parts.append(f"{self.entities} entities")
        return "; ".join(parts)


@dataclass
class TaskData:
    """The examples of one task split for one model: items, their OLA records, the report.

    Attributes:
        task: a key of :data:`TASKS`.
        model: the model's display name.
        split: ``"train"``, ``"dev"``, ``"test"``...
        items: :class:`TaskItem` per kept example.
        records: the OLA record of each item (same order).
        causal: the model is a causal LM.
        max_tokens: the length cut (``None``: none).
        report: counts of what was lost.
        grid: ``"tokens"`` or ``"words"`` (see the module docstring).
        sources: records of other channel sources for the same items, by source name
            (:mod:`olacore.channels`: ``"alti"`` records for the ``"alti"`` channel,
            ``"attention"`` records for ``"layer<n>"``); ``records`` serve the ``"ola"``
            source. An input spec reads the records of its channels' one source.
    """

    task: str
    model: str
    split: str
    items: list[TaskItem]
    records: list[Any]
    causal: bool
    max_tokens: int | None
    report: TaskReport
    grid: str = "tokens"
    sources: dict[str, list[Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.items)

    def source_records(self, spec: InputSpec) -> list[Any]:
        """The records ``spec`` reads: ``records`` for OLA channels and the distance input, else
        ``sources[name]`` of the channels' source.

        Raises:
            ValueError: the spec mixes channels of several sources, or its source's records
                are missing or not one per item (build the data with that source).
        """
        if spec.is_distance:
            return self.records
        names = sorted({lookup_channel(name).source for name in spec.channels})
        if len(names) > 1:
            raise ValueError(f"the input {spec.label!r} mixes channels of the sources {names}; one input reads one source")
        if names[0] == "ola":
            return self.records
        records = self.sources.get(names[0])
        if records is None or len(records) != len(self.items):
            raise ValueError(f"{self.model} {self.split}: no {names[0]!r} records for the input {spec.label!r} "
                             f"(have: {['ola', *self.sources]}); build the data with that source "
                             f"(olacore.toa.experiments.syntax_data(..., sources=('ola', {names[0]!r})))")
        return records

    @property
    def kind(self) -> str:
        """``"tokens"``, ``"relation"`` or ``"dependency"``."""
        return task_kind(self.task)

    def raw(self, spec: InputSpec) -> list[torch.Tensor]:
        """The spec's raw (unprocessed) maps of every item, cut (and reduced to the word grid):
        ``(K, T_i, T_i)``; the adapter input is their :func:`~olacore.toa.inputs.stack_channels`."""
        out = []
        for record, item in zip(self.source_records(spec), self.items):
            if not item.positions:
                out.append(raw_maps(record, spec, item.num_tokens))
                continue
            full = raw_maps(record, spec, max(item.positions) + 1)
            index = torch.tensor(item.positions)
            out.append(full.index_select(-2, index).index_select(-1, index))
        return out

    def inputs(self, spec: InputSpec) -> list[torch.Tensor]:
        """The adapter input of every item: ``(spec.num_channels, T_i, T_i)`` float32 (cut)."""
        records = self.source_records(spec)
        if self.grid == "tokens":
            return [build_input(r, spec, item.num_tokens) for r, item in zip(records, self.items)]
        return [build_input(r, spec, raw=m) for r, m in zip(records, self.raw(spec))]

    def labels(self) -> list[str]:
        """Every gold label string the items carry (to build a label vocabulary)."""
        if self.kind == "relation":
            return [item.label for item in self.items]
        if self.kind == "tokens":
            return [label for item in self.items for label in item.token_labels if label is not None]
        return [label for item in self.items for label in item.word_labels]

    def digest(self) -> str:
        """sha256 of the items (texts, cut lengths, labels): a cache-key part."""
        payload = json.dumps([dataclasses.astuple(item) for item in self.items], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _token_words(share: torch.Tensor) -> list[int | None]:
    """The word of each token (most characters; ``None`` for tokens in no word)."""
    owner = share.argmax(0).tolist()
    covered = (share.sum(0) > 0).tolist()
    return [w if c else None for w, c in zip(owner, covered)]


def _tokens_item(source, share, offsets, keep, task, report) -> TaskItem:
    tags = {"pos": getattr(source, "xpos", ()), "upos": getattr(source, "upos", ()), "ner": getattr(source, "tags", ())}[task]
    if len(tags) != len(source.words):
        raise ValueError(f"{source.sent_id}: {len(tags)} tags for {len(source.words)} words (no {TASKS[task][1]} tags?)")
    special = SPECIAL if task in ("pos", "upos") else "O"
    owners = _token_words(share)
    token_labels = []
    for t in range(keep):
        start, end = offsets[t]
        if owners[t] is not None:
            token_labels.append(tags[owners[t]])
        else:
            token_labels.append(special if end <= start else None)
    first = [int(torch.nonzero(row > 0)[0]) for row in share]
    scored = [w for w, t in enumerate(first) if t < keep]
    report.words += len(first)
    report.words_beyond_cut += len(first) - len(scored)
    if task == "ner":
        from seqeval.metrics.sequence_labeling import get_entities

        entities = get_entities(list(tags))
        report.entities += len(entities)
        report.entities_beyond_cut += sum(1 for _, start, _ in entities if first[start] >= keep)
    return TaskItem(source.sent_id, source.text, keep, token_labels=tuple(token_labels),
                    word_tokens=tuple(first[w] for w in scored), word_labels=tuple(tags[w] for w in scored))


def _dependency_item(source, share, keep, task, report) -> TaskItem:
    first = [int(torch.nonzero(row > 0)[0]) for row in share]
    words, heads, gold_heads, labels, punct = [], [], [], [], []
    for w, t in enumerate(first):
        report.words += 1
        if t >= keep:
            report.words_beyond_cut += 1
            continue
        head_word = source.heads[w]
        head_token = t if head_word == 0 else first[head_word - 1]
        if head_token >= keep:
            report.heads_beyond_cut += 1
            head_token = -1
        words.append(t)
        heads.append(head_token)
        gold_heads.append(head_word)
        labels.append(source.deprels[w] if task == "dp" else universal(source.deprels[w]))
        punct.append(source.upos[w] == "PUNCT")
    return TaskItem(source.sent_id, source.text, keep, word_tokens=tuple(words), word_labels=tuple(labels),
                    heads=tuple(heads), gold_heads=tuple(gold_heads), punct=tuple(punct))


def _relation_item(source, share, keep, report) -> TaskItem | None:
    members = [torch.nonzero(row > 0).flatten().tolist() for row in share]
    spans = []
    for start_word, end_word in (source.e1, source.e2):
        tokens = [t for w in range(start_word, end_word) for t in members[w]]
        spans += [min(tokens), max(tokens) + 1]
    if max(spans[1], spans[3]) > keep:
        report.dropped_beyond_cut += 1
        return None
    return TaskItem(source.sent_id, source.text, keep, spans=tuple(spans), label=source.label)


def _to_words(item: TaskItem, first: list[int], kind: str) -> TaskItem:
    """The same item on the word grid: rows are the kept words' first sub-tokens."""
    kept = [t for t in first if t < item.num_tokens]
    where = {}
    for w, t in enumerate(kept):
        where.setdefault(t, w)
    count = len(kept)
    if kind == "relation":
        e1s, e1e, e2s, e2e = item.spans
        starts = [where[t] for t in kept if e1s <= t < e1e][:1] + [where[t] for t in kept if e2s <= t < e2e][:1]
        spans = (starts[0], max(w for w, t in enumerate(kept) if t < e1e) + 1,
                 starts[1], max(w for w, t in enumerate(kept) if t < e2e) + 1)
        return dataclasses.replace(item, num_tokens=count, spans=spans, positions=tuple(kept))
    if kind == "tokens":
        return dataclasses.replace(item, num_tokens=count, token_labels=item.word_labels,
                                   word_tokens=tuple(range(count)), positions=tuple(kept))
    heads = tuple(-1 if h < 0 else (w if h0 == 0 else h0 - 1) for w, (h, h0) in enumerate(zip(item.heads, item.gold_heads)))
    return dataclasses.replace(item, num_tokens=count, word_tokens=tuple(range(count)), heads=heads, positions=tuple(kept))


def build_task_data(task: str, model: Any, sources: Sequence[Any], split: str = "train", *,
                    max_tokens: int | None = 64, grid: str = "tokens", max_order: int = 2,
                    records: Sequence[Any] | None = None,
                    workers: int = 1, device: str | torch.device | None = None, progress: bool = False,
                    store=None) -> TaskData:
    """A task split in one model's tokenisation, its OLA cached (:func:`olacore.pipeline.cached_ola`).

    Args:
        task: a key of :data:`TASKS`.
        model: zoo name, Hugging Face id / folder, or a :class:`olacore.loading.LoadedModel`.
        sources: word-level examples: :class:`olacore.ud.UDSentence` (``pos``, ``upos``,
            ``dp``, ``dp-universal``), :class:`olacore.corpora.NERSentence` (``ner``),
            :class:`olacore.corpora.RelationExample` (``re``); each needs ``sent_id``,
            ``text``, ``words`` and ``spans``.
        split: a label for the report.
        max_tokens: the length cut (official 64; ``None``: none), in tokens for both grids.
        grid: ``"tokens"`` (official) or ``"words"`` (see the module docstring).
        max_order: OLA orders to compute (2 for the official input, 3 for the syntax grid).
        records: OLA records of ``sources`` already at hand (then ``model`` only names them).
        workers, device, progress, store: passed to :func:`olacore.pipeline.cached_ola`.

    Returns:
        :class:`TaskData`; ``report`` counts unaligned sentences and what the cut lost.

    Raises:
        ValueError: unknown task, ``max_tokens`` < 2, records not matching the sources, or
            sources without the labels the task needs.
    """
    kind = task_kind(task)
    if grid not in GRIDS:
        raise ValueError(f"grid must be one of {GRIDS}; got {grid!r}")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 2):
        raise ValueError(f"max_tokens must be an int >= 2 or None; got {max_tokens!r}")
    sources = list(sources)
    if records is None:
        from olacore.pipeline import cached_ola

        records = cached_ola(model, [s.text for s in sources], max_order, workers=workers, device=device,
                             progress=progress, store=store) if sources else []
    if len(records) != len(sources):
        raise ValueError(f"{len(records)} OLA records for {len(sources)} examples")
    name = getattr(model, "name", model)
    report = TaskReport(sentences=len(sources))
    items, kept_records = [], []
    for source, record in zip(sources, records):
        if record.text != source.text:
            raise ValueError(f"the OLA record of {source.sent_id} is for another text")
        try:
            share = word_assignment(record.offsets, source.spans)
        except ValueError as error:
            report.unaligned.append((source.sent_id, str(error).split(":")[0]))
            continue
        size = len(record.offsets)
        keep = size if max_tokens is None else min(size, max_tokens)
        report.cut_sentences += keep < size
        if kind == "tokens":
            item = _tokens_item(source, share, record.offsets, keep, task, report)
        elif kind == "dependency":
            item = _dependency_item(source, share, keep, task, report)
        else:
            item = _relation_item(source, share, keep, report)
        if item is None:
            continue
        if grid == "words":
            item = _to_words(item, [int(torch.nonzero(row > 0)[0]) for row in share], kind)
        items.append(item)
        kept_records.append(record)
    report.kept = len(items)
    causal = bool(kept_records[0].is_causal) if kept_records else False
    return TaskData(task, str(name), split, items, kept_records, causal, max_tokens, report, grid)
