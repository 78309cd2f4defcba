"""What a TOA adapter reads and predicts (paper section 4.4): input maps, task labels in each model's tokens, batches.

**Input** (official ``use_orders=[1, 2]``, ``remove_outliers=True``): ``[raw 1, raw 2, clean 1, clean 2]``
(``preprocess_ola`` in ``models/ola_model.py``; clean: the sink entries of :func:`olacore.maps.sink_flags` with
``stats="causal"`` zeroed, as ``cal_maskes`` in ``models/ola_utils.py``), rows divided by ``row sum + 1e-10``, causal
maps then mirrored.

**Task data** (``data_utils/ola_dataset.py``, ``data_utils/dp_utils.py``): word-level labels brought to the model's
tokens by character offsets. ``pos`` (EWT XPOS; special tokens: :data:`SPECIAL`), ``ner`` (UNER English-EWT) and
``wnut`` (WNUT-17) BIO tags per sub-token (every sentence kept; the official NER data keeps only those with an
entity); ``re`` (SemEval-2010 Task 8) entity token spans; ``dp`` (EWT) a word and its head are their first
sub-tokens, the root word heads itself. ``grid="tokens"`` (official): every token is a row; ``grid="words"``: each
word's first sub-token only. The length cut (official ``cutoff_len`` 64) keeps the first
``max_tokens`` tokens; :class:`TaskReport` counts what it loses. :data:`IGNORE` marks what the loss and scores skip.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np
import torch

from olacore.channels import channel as lookup_channel
from olacore.maps import mirror_causal, sink_flags
from olacore.texts import first_tokens, word_assignment

if TYPE_CHECKING:  # pragma: no cover
    from olacore.store import TensorStore

__all__ = ["DISTANCE", "InputSpec", "stack_channels",
           "raw_maps", "build_input", "distance_input", "DISTANCE_CHANNELS", "SYNTAX_GRID", "TOA_INPUT",
           "input_spec", "SPECIAL", "TASKS", "ENTITY_TASKS", "GRIDS", "TaskItem", "TaskReport", "TaskData", "task_kind",
           "build_task_data", "IGNORE", "LabelVocab", "encode_items", "collate",
           "length_batches", "syntax_data"]

#: The pseudo-channel name of the distance-only baseline (no attention: relative positions).
DISTANCE = "distance"
#: Offsets ``j - i`` that get an indicator channel in :func:`distance_input`.
_NEAR = (-2, -1, 0, 1, 2)
DISTANCE_CHANNELS = len(_NEAR) + 3


def stack_channels(maps: torch.Tensor, causal: bool) -> torch.Tensor:
    """The official preprocessing of one sentence's ``(K, T, T)`` maps (module docstring): ``(2K, T, T)`` float32,
    all channels raw, then all clean; rows sum to 1 (or 0)."""
    maps = maps.float()
    clean = maps.masked_fill(sink_flags(maps, causal, stats="causal"), 0.0)
    stacked = torch.cat([maps, clean], 0)
    stacked = stacked / (stacked.sum(-1, keepdim=True) + 1e-10)
    return mirror_causal(stacked) if causal else stacked


@dataclass(frozen=True)
class InputSpec:
    """What the adapter reads: ``channels`` (:mod:`olacore.channels` names, or ``("distance",)`` alone), each raw
    and sink-cleaned (:func:`stack_channels`)."""

    channels: tuple[str, ...] = ("order1", "order2")

    @property
    def is_distance(self) -> bool:
        return self.channels == (DISTANCE,)

    @property
    def num_channels(self) -> int:
        return DISTANCE_CHANNELS if self.is_distance else 2 * len(self.channels)

    @property
    def label(self) -> str:
        """A short display label: ``"order 1+2"``, ``"rollout"``, ``"distance"``."""
        if self.is_distance:
            return DISTANCE
        orders = [lookup_channel(n).order for n in self.channels]
        if all(k is not None for k in orders):
            return "order " + "+".join(str(k) for k in orders)
        return "+".join(lookup_channel(n).label for n in self.channels)


def raw_maps(record: Any, spec: InputSpec, size: int) -> torch.Tensor:
    """The spec's channels of one record, cut to the top-left ``(K, T', T')``, ``T' = min(T, size)``; ``(0, T',
    T')`` for the distance input. Departure: the official code runs an encoder on the cut input."""
    keep = min(len(record.offsets), size)
    if spec.is_distance:
        return torch.zeros(0, keep, keep)
    maps = torch.stack([lookup_channel(name).take(record) for name in spec.channels]).float()
    return maps[:, :keep, :keep]


def build_input(raw: torch.Tensor, spec: InputSpec, causal: bool) -> torch.Tensor:
    """The adapter input ``(spec.num_channels, T', T')`` of one sentence from its :func:`raw_maps`."""
    if spec.is_distance:
        return distance_input(raw.shape[-1])
    return stack_channels(raw, causal)


def distance_input(size: int) -> torch.Tensor:
    """The distance-only baseline's ``(8, T, T)`` input, in ``[0, 1]``: indicators of ``j - i`` in -2..2,
    ``j > i``, ``exp(-|j - i| / 4)``, ``|j - i| / T``."""
    positions = torch.arange(size, dtype=torch.float32)
    offset = positions[None, :] - positions[:, None]
    channels = [(offset == k).float() for k in _NEAR]
    channels += [(offset > 0).float(), torch.exp(-offset.abs() / 4.0), offset.abs() / size]
    return torch.stack(channels)


#: The inputs of the syntax grid by display name: the paper's table (1st, 2nd, 3rd order, rollout), ALTI (the
#: paper's second baseline), 1+2 (the official TOA input), distance-only; also ``"layer <n>"`` (:func:`input_spec`).
SYNTAX_GRID: dict[str, InputSpec] = {
    "order 1": InputSpec(("order1",)),
    "order 2": InputSpec(("order2",)),
    "order 3": InputSpec(("order3",)),
    "rollout": InputSpec(("rollout",)),
    "ALTI": InputSpec(("alti",)),
    "order 1+2": InputSpec(("order1", "order2")),
    "distance": InputSpec(("distance",)),
}
_LAYER = re.compile(r"^layer (\d+)$")


def input_spec(name: str) -> InputSpec:
    """The :class:`InputSpec` of a key of :data:`SYNTAX_GRID` or of ``"layer <n>"`` (raw attention of layer ``n``).

    Raises:
        KeyError: an unknown name.
    """
    if name in SYNTAX_GRID:
        return SYNTAX_GRID[name]
    match = _LAYER.match(str(name))
    if match and int(match.group(1)) > 0:
        return InputSpec((f"layer{int(match.group(1))}",))
    raise KeyError(f"unknown input {name!r}; known: {list(SYNTAX_GRID)} and 'layer <n>'")


#: The input of every transfer adapter: the official one (orders 1 and 2, raw and clean).
TOA_INPUT = "order 1+2"


#: The class of special tokens in the POS task (official: one extra class).
SPECIAL = "<special>"
#: task name -> (kind of head, what the labels are).
TASKS: dict[str, tuple[str, str]] = {
    "pos": ("tokens", "xpos"),
    "ner": ("tokens", "bio"),
    "wnut": ("tokens", "bio"),
    "re": ("relation", "semeval"),
    "dp": ("dependency", "full"),
}


#: The named-entity tasks (BIO tags, scored by entity F1): UNER English-EWT and WNUT-17.
ENTITY_TASKS = ("ner", "wnut")


#: What the adapter's image holds: every token (official) or each word's first sub-token.
GRIDS = ("tokens", "words")


def task_kind(task: str) -> str:
    """The head a task needs: ``"tokens"``, ``"relation"`` or ``"dependency"``.

    Raises:
        ValueError: unknown task.
    """
    if task not in TASKS:
        raise ValueError(f"unknown TOA task {task!r}; choose one of {', '.join(TASKS)}")
    return TASKS[task][0]


@dataclass(frozen=True)
class TaskItem:
    """One example of a task in one model's tokenisation (after the length cut).

    Attributes:
        token_labels: a label per kept token (``None``: not trained on; ``tokens`` tasks).
        word_tokens, word_labels: the first sub-token and the gold label of each scored word.
        heads, gold_heads, punct: DP: gold head token (``-1``: beyond the cut), head word (1-based, 0 = root),
            punctuation flag of each scored word.
        spans, label: RE: ``(e1_start, e1_end, e2_start, e2_end)`` (end exclusive) and the directed relation.
        positions: ``grid="words"``: the token index of each image row (other indices then count words).
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
    """What the alignment and the length cut did to one task split: ``unaligned`` ``(sent_id, reason)``, and
    counts of words, DP heads and entities beyond the cut and RE examples dropped for it."""

    sentences: int = 0
    kept: int = 0
    unaligned: list[tuple[str, str]] = field(default_factory=list)
    cut_sentences: int = 0
    words: int = 0
    words_beyond_cut: int = 0
    heads_beyond_cut: int = 0
    entities_beyond_cut: int = 0
    dropped_beyond_cut: int = 0


@dataclass
class TaskData:
    """The examples of one task split for one model: items, their OLA ``records``, the report; ``sources``:
    records of other channel sources (``"alti"``, ``"attention"``) for the same items."""

    task: str
    model: str
    split: str
    items: list[TaskItem]
    records: list[Any]
    causal: bool
    report: TaskReport
    grid: str = "tokens"
    sources: dict[str, list[Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.items)

    def source_records(self, spec: InputSpec) -> list[Any]:
        """The records ``spec`` reads (of its channels' source).

        Raises:
            ValueError: its source's records are missing (build the data with that source).
        """
        source = "ola" if spec.is_distance else lookup_channel(spec.channels[0]).source
        if source == "ola":
            return self.records
        if source not in self.sources:
            raise ValueError(f"{self.model} {self.split}: no {source!r} records for the input {spec.label!r} "
                             f"(have: {['ola', *self.sources]}); build the data with that source "
                             f"(olacore.toa.data.syntax_data(..., sources=('ola', {source!r})))")
        return self.sources[source]

    @property
    def kind(self) -> str:
        return task_kind(self.task)

    def raw(self, spec: InputSpec) -> list[torch.Tensor]:
        """The spec's raw ``(K, T_i, T_i)`` maps of every item, cut (and on the word grid)."""
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
        """The adapter input ``(spec.num_channels, T_i, T_i)`` of every item."""
        return [build_input(m, spec, bool(r.is_causal)) for r, m in zip(self.source_records(spec), self.raw(spec))]

    def labels(self) -> list[str]:
        """Every gold label the items carry."""
        if self.kind == "relation":
            return [item.label for item in self.items]
        if self.kind == "tokens":
            return [label for item in self.items for label in item.token_labels if label is not None]
        return [label for item in self.items for label in item.word_labels]


def _tokens_item(source, share, offsets, keep, task, report) -> TaskItem:
    field = "xpos" if task == "pos" else "tags"  # the entity tasks read NERSentence.tags
    tags = getattr(source, field, ())
    if len(tags) != len(source.words):
        raise ValueError(f"{source.sent_id}: {len(tags)} tags for {len(source.words)} words (no {TASKS[task][1]} tags?)")
    special = SPECIAL if task == "pos" else "O"
    owners, covered = share.argmax(0).tolist(), (share.sum(0) > 0).tolist()  # a token's word: most characters
    token_labels = []
    for t in range(keep):
        start, end = offsets[t]
        if covered[t]:
            token_labels.append(tags[owners[t]])
        else:
            token_labels.append(special if end <= start else None)
    first = first_tokens(share)
    scored = [w for w, t in enumerate(first) if t < keep]
    report.words += len(first)
    report.words_beyond_cut += len(first) - len(scored)
    if task in ENTITY_TASKS:
        from seqeval.metrics.sequence_labeling import get_entities

        report.entities_beyond_cut += sum(1 for _, start, _ in get_entities(list(tags)) if first[start] >= keep)
    return TaskItem(source.sent_id, source.text, keep, token_labels=tuple(token_labels),
                    word_tokens=tuple(first[w] for w in scored), word_labels=tuple(tags[w] for w in scored))


def _dependency_item(source, share, keep, report) -> TaskItem:
    first = first_tokens(share)
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
        labels.append(source.deprels[w])
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


def build_task_data(task: str, model: Any, sources: Sequence[Any], split: str = "train", *, records: Sequence[Any],
                    max_tokens: int | None = 64, grid: str = "tokens") -> TaskData:
    """A task split in one model's tokenisation.

    Args:
        model: names the model (``name`` of a loaded one).
        sources: word-level examples (:class:`olacore.corpora.UDSentence`, ``NERSentence``, ``RelationExample``).
        records: the OLA records of ``sources``.
        max_tokens: the length cut in tokens (official 64; ``None``: none).

    Raises:
        ValueError: unknown task, or sources without the labels the task needs.
    """
    kind = task_kind(task)
    sources = list(sources)
    name = getattr(model, "name", model)
    report = TaskReport(sentences=len(sources))
    items, kept_records = [], []
    for source, record in zip(sources, records):
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
            item = _dependency_item(source, share, keep, report)
        else:
            item = _relation_item(source, share, keep, report)
        if item is None:
            continue
        if grid == "words":
            item = _to_words(item, first_tokens(share), kind)
        items.append(item)
        kept_records.append(record)
    report.kept = len(items)
    causal = bool(kept_records[0].is_causal) if kept_records else False
    return TaskData(task, str(name), split, items, kept_records, causal, report, grid)


IGNORE = -100


@dataclass(frozen=True)
class LabelVocab:
    """The label classes of a trained adapter (index = class id), from the training labels."""

    labels: tuple[str, ...]

    @classmethod
    def from_labels(cls, labels: Sequence[str]) -> "LabelVocab":
        """The sorted distinct labels."""
        return cls(tuple(sorted(set(labels))))

    def __len__(self) -> int:
        return len(self.labels)

    def index(self, label: str | None) -> int:
        """Class id of ``label``; :data:`IGNORE` for ``None`` or an unknown label."""
        return IGNORE if label is None else self._ids.get(label, IGNORE)

    @cached_property
    def _ids(self) -> dict[str, int]:
        return {label: i for i, label in enumerate(self.labels)}


def encode_items(items: Sequence[TaskItem], kind: str, vocab: LabelVocab) -> tuple[list[dict[str, np.ndarray]], int]:
    """``(targets, unknown)``: per item int64 arrays (``labels`` (T,); ``spans`` (4,), ``label`` (1,); or ``words``,
    ``heads``, ``rels`` (W,)), unknown labels and heads beyond the cut :data:`IGNORE`; and the unknown count."""
    targets, unknown = [], 0
    for item in items:
        if kind == "tokens":
            labels = np.array([vocab.index(label) for label in item.token_labels], dtype=np.int64)
            unknown += sum(1 for label in item.token_labels if label is not None and vocab.index(label) == IGNORE)
            targets.append({"labels": labels})
        elif kind == "relation":
            label = vocab.index(item.label)
            unknown += label == IGNORE
            targets.append({"spans": np.array(item.spans, dtype=np.int64), "label": np.array([label], dtype=np.int64)})
        else:
            rels = np.array([vocab.index(label) for label in item.word_labels], dtype=np.int64)
            unknown += int((rels == IGNORE).sum())
            heads = np.array([h if h >= 0 else IGNORE for h in item.heads], dtype=np.int64)
            targets.append({"words": np.array(item.word_tokens, dtype=np.int64), "heads": heads, "rels": rels})
    return targets, unknown


def collate(maps: Sequence[torch.Tensor], targets: Sequence[dict[str, np.ndarray]], kind: str
            ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Pad a batch: ``(maps (B, C, T, T), lengths (B,), targets)``, targets padded with :data:`IGNORE`
    (``labels`` (B, T); ``spans`` (B, 4), ``label`` (B,); or ``words``, ``heads``, ``rels`` (B, W))."""
    lengths = torch.tensor([m.shape[-1] for m in maps])
    size, channels = int(lengths.max()), maps[0].shape[0]
    batch = torch.zeros(len(maps), channels, size, size)
    for b, m in enumerate(maps):
        batch[b, :, : m.shape[-1], : m.shape[-1]] = m
    out: dict[str, torch.Tensor] = {}
    if kind == "tokens":
        labels = torch.full((len(maps), size), IGNORE, dtype=torch.long)
        for b, t in enumerate(targets):
            labels[b, : len(t["labels"])] = torch.from_numpy(t["labels"])
        out["labels"] = labels
    elif kind == "relation":
        out["spans"] = torch.from_numpy(np.stack([t["spans"] for t in targets]))
        out["label"] = torch.from_numpy(np.concatenate([t["label"] for t in targets]))
    else:
        words = max(1, max(len(t["words"]) for t in targets))
        for name, fill in (("words", 0), ("heads", IGNORE), ("rels", IGNORE)):
            padded = torch.full((len(maps), words), fill, dtype=torch.long)
            for b, t in enumerate(targets):
                padded[b, : len(t[name])] = torch.from_numpy(t[name])
            out[name] = padded
    return batch, lengths, out


def length_batches(lengths: Sequence[int], batch_size: int, generator: torch.Generator | None = None
                   ) -> Iterator[list[int]]:
    """Indices in batches of similar length: shuffled by ``generator`` in pools of ``20 * batch_size``, sorted
    within a pool, batches shuffled; without a generator sorted by length."""
    pool = 20
    count = len(lengths)
    if generator is None:
        order = sorted(range(count), key=lambda i: lengths[i])
        yield from (order[i : i + batch_size] for i in range(0, count, batch_size))
        return
    order = torch.randperm(count, generator=generator).tolist()
    batches = []
    for start in range(0, count, pool * batch_size):
        chunk = sorted(order[start : start + pool * batch_size], key=lambda i: lengths[i])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    for index in torch.randperm(len(batches), generator=generator).tolist():
        yield batches[index]


def syntax_data(model: Any, splits: Mapping[str, Sequence[Any]], settings: Any, *, task: str = "dp",
                sources: Sequence[str] = ("ola",), max_order: int = 3, workers: int = 1, device: str | None = None,
                progress: bool = False, store: TensorStore | None = None) -> dict[str, TaskData]:
    """``{split: TaskData}`` of one model, its maps computed once (cached) for every split.

    Args:
        model: zoo name, id / folder, or :class:`olacore.loading.LoadedModel`.
        splits: ``{"train": [...], "dev": [...], "test": [...]}`` of word-level sources.
        settings: gives ``max_tokens`` and ``grid`` (a :class:`olacore.profiles.SyntaxSettings`).
        sources: channel sources (``"ola"`` always; ``"alti"``, ``"attention"``) whose records the data carries.
    """
    from olacore.pipeline import cached_ola, source_records

    unique = list({s.text: s for split in splits.values() for s in split}.values())
    texts = [s.text for s in unique]
    options = dict(workers=workers, device=device, progress=progress, store=store)
    # ALTI first: its forward pass also stores the attention OLA is made of (one pass per text for both)
    extra = {source: dict(zip(texts, source_records(source, model, texts, **options)))
             for source in sorted(dict.fromkeys(sources), key=lambda s: s != "alti") if source != "ola"}
    by_text = dict(zip(texts, cached_ola(model, texts, max_order, **options)))
    out = {}
    for name, split in splits.items():
        data = build_task_data(task, model, split, name, max_tokens=settings.max_tokens, grid=settings.grid,
                               records=[by_text[s.text] for s in split])
        data.sources = {source: [found[item.text] for item in data.items] for source, found in extra.items()}
        out[name] = data
    return out
