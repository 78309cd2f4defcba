"""What a TOA adapter reads and predicts (paper section 4.4): input maps, task labels in each model's tokens, batches.

**Input.** The official preprocessing for the default ``use_orders=[1, 2]``, ``remove_outliers=True``
(``utils/arguments.py``; the TOA configs ``configs/train_*_udewt_dp.json`` etc.):

1. **Sink mask** (``models/ola_utils.py``, ``cal_maskes`` / ``get_outliers_mask``): per row, over the *interested*
   entries (unpadded and, for a causal LM, ``j <= i``; the others set to zero first), an entry above
   ``mean + 3 std`` (sample std, divisor ``n - 1``, floored at ``1e-10``) is flagged, and so is **every** entry equal
   to the row maximum (ties included; the one entry of a causal map's first row is flagged).
2. **Stack** (``models/ola_model.py``, ``preprocess_ola``, ``result_type='cat'``): ``[raw 1, raw 2, clean 1,
   clean 2]``, clean: the flagged entries zeroed.
3. **Row normalisation**: every row divided by ``row sum + 1e-10`` (an all-zero row stays zero).
4. **Mirror** (causal LMs only), after the normalisation: ``M[i, j] = M[j, i]`` for ``j > i``.

The flags are :func:`olacore.maps.sink_flags` with ``stats="causal"``: the official TOA path (``OLAModel.forward``
in ``models/ola_model.py``) passes the causal flag to ``cal_maskes`` (the similarity chapters take the statistics
over the whole row, as the official similarity scripts do).

**Task data.** A sentence's OLA record and its word-level labels brought to the model's tokens by character offsets
(:func:`olacore.texts.word_assignment`); official code ``data_utils/ola_dataset.py``, ``data_utils/dp_utils.py``:

- **POS** (``pos``: EWT XPOS, the Penn Treebank tags of the paper's CoNLL-2000 task): every sub-token takes its
  word's tag, special tokens (BOS/[CLS]/[SEP]) the extra class :data:`SPECIAL`. Scored per word (first sub-token)
  and per sub-token (the official unit; special tokens left out here).
- **NER** (``ner``: UNER English-EWT, PER / LOC / ORG; ``wnut``: WNUT-17, 6 types, out of domain; both BIO; the
  paper used licensed OntoNotes): every sub-token takes its word's tag (a ``B-`` tag repeats, as officially), special
  tokens ``O``; scored at entity level on first sub-tokens. The official data keeps only sentences with an entity;
  here every sentence is kept.
- **RE** (``re``: SemEval-2010 Task 8, 19 directed labels): an entity is the token span ``[first token of its first
  word, last token of its last word]``.
- **DP** (``dp``: EWT, full relations, as the official ``rels``): a word and a head word are their first sub-tokens;
  the root word's head is its own first sub-token (official convention).

**Grid.** ``grid="tokens"`` (official): every token, special tokens included, is a row and a candidate head.
``grid="words"``: only each word's first sub-token (:func:`olacore.texts.first_subtoken_maps`), a ``W x W``
image indexed by word, cheaper and without the special-token sinks; the words of one multi-word token (EWT
"don't") share their first sub-token, so their rows are equal.

**Length cut** (official ``cutoff_len`` 64): the first ``max_tokens`` tokens are kept. Words and heads beyond the
cut are not scored (official ``-100``), NER entities starting beyond it are lost, RE examples with an entity beyond
it dropped; :class:`TaskReport` counts each loss and the sentences that cannot be aligned.

**Batches.** Targets are numpy arrays (picklable, :func:`olacore.training.by_value`); :data:`IGNORE` (``-100``)
marks what the loss and the scores skip.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np
import torch

from olacore.channels import channel as lookup_channel
from olacore.corpora import evenly_spread
from olacore.maps import mirror_causal, sink_flags
from olacore.texts import first_tokens, word_assignment

if TYPE_CHECKING:  # pragma: no cover
    from olacore.store import TensorStore

__all__ = ["DISTANCE", "VARIANTS", "InputSpec", "stack_channels",
           "raw_maps", "build_input", "distance_input", "DISTANCE_CHANNELS", "SYNTAX_GRID", "TOA_INPUT",
           "input_spec", "SPECIAL", "TASKS", "ENTITY_TASKS", "GRIDS", "TaskItem", "TaskReport", "TaskData", "task_kind",
           "build_task_data", "IGNORE", "LabelVocab", "encode_items", "collate",
           "length_batches", "SOURCES", "subset_splits", "syntax_data"]

#: The pseudo-channel name of the distance-only baseline (no attention: relative positions).
DISTANCE = "distance"
#: The two variants of a channel in the stack: as extracted, and sink-cleaned.
VARIANTS = ("raw", "clean")
#: Offsets ``j - i`` that get an indicator channel in :func:`distance_input`.
_NEAR = (-2, -1, 0, 1, 2)
DISTANCE_CHANNELS = len(_NEAR) + 3


def _row_normalise(maps: torch.Tensor) -> torch.Tensor:
    return maps / (maps.sum(-1, keepdim=True) + 1e-10)


def stack_channels(maps: torch.Tensor, causal: bool, variants: Sequence[str] = VARIANTS,
                   mirror: bool = True) -> torch.Tensor:
    """The official preprocessing of a stack of maps: variants, row normalisation, mirroring.

    Args:
        maps: ``(K, T, T)`` maps of one sentence (``K`` channels, e.g. OLA orders 1 and 2).
        causal: the maps come from a causal LM (sink statistics over ``j <= i``; mirrored).
        variants: which of ``"raw"`` and ``"clean"`` to stack, blocks in that order.
        mirror: mirror causal maps into their upper triangle (official: yes).

    Returns:
        ``(len(variants) * K, T, T)`` float32: all channels raw, then all clean; each row sums to 1 (or is all zero).
    """
    maps = maps.float()
    blocks = []
    for variant in variants:
        block = maps if variant == "raw" else maps.masked_fill(sink_flags(maps, causal, stats="causal"), 0.0)
        blocks.append(block)
    stacked = _row_normalise(torch.cat(blocks, 0))
    return mirror_causal(stacked) if causal and mirror else stacked


@dataclass(frozen=True)
class InputSpec:
    """What the adapter reads: channels by vocabulary name, their variants, the grid.

    Attributes:
        channels: names from :mod:`olacore.channels` (``"order1"``, ``"rollout"``, ...), or ``("distance",)`` alone.
        variants: ``("raw", "clean")`` (official), ``("raw",)`` or ``("clean",)``; ignored for the distance input.
        mirror: mirror causal maps (official: yes).

    The length cut is not part of the spec: the task data cuts labels and maps alike.
    """

    channels: tuple[str, ...] = ("order1", "order2")
    variants: tuple[str, ...] = VARIANTS
    mirror: bool = True

    @property
    def is_distance(self) -> bool:
        """Whether this is the distance-only baseline."""
        return self.channels == (DISTANCE,)

    @property
    def num_channels(self) -> int:
        """``C``, the adapter's input channels."""
        return DISTANCE_CHANNELS if self.is_distance else len(self.channels) * len(self.variants)

    @property
    def max_order(self) -> int:
        """The highest OLA order the channels need (1 for the rollout or distance)."""
        orders = [lookup_channel(n).order or 0 for n in self.channels] if not self.is_distance else []
        return max([1, *orders])

    @property
    def label(self) -> str:
        """A short display label: ``"order 1+2"``, ``"rollout"``, ``"distance"``."""
        if self.is_distance:
            return DISTANCE
        orders = [lookup_channel(n).order for n in self.channels]
        if all(k is not None for k in orders):
            text = "order " + "+".join(str(k) for k in orders)
        else:
            text = "+".join(lookup_channel(n).label for n in self.channels)
        return text if self.variants == VARIANTS else f"{text} ({'/'.join(self.variants)})"

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (for cache keys and records)."""
        return {"channels": list(self.channels), "variants": list(self.variants), "mirror": self.mirror}


def raw_maps(record: Any, spec: InputSpec, size: int | None = None) -> torch.Tensor:
    """The spec's channels of one record, before preprocessing: ``(K, T', T')`` float32, ``T' = min(T, size)``.

    ``record`` is the channels' source record (:mod:`olacore.channels`: OLA, ALTI or attention); the cut keeps the
    top-left block (``size=None``: all tokens). Departure: for an encoder that block misses the attention to the cut
    tokens (rows are renormalised by :func:`stack_channels`); the official code runs the model on the cut input.
    The distance input has no raw maps: ``(0, T', T')``.
    """
    full = len(record.offsets)
    keep = full if size is None else min(full, size)
    if spec.is_distance:
        return torch.zeros(0, keep, keep)
    maps = torch.stack([lookup_channel(name).take(record) for name in spec.channels]).float()
    return maps[:, :keep, :keep]


def build_input(raw: torch.Tensor, spec: InputSpec, causal: bool) -> torch.Tensor:
    """The adapter input of one sentence from its :func:`raw_maps` ``(K, T', T')`` (possibly augmented,
    :mod:`olacore.augment`; ``causal``: they come from a causal LM).

    Returns:
        ``(spec.num_channels, T', T')`` float32: :func:`stack_channels` of the maps, or :func:`distance_input`.
    """
    if spec.is_distance:
        return distance_input(raw.shape[-1])
    return stack_channels(raw, causal, spec.variants, spec.mirror)


def distance_input(size: int) -> torch.Tensor:
    """The distance-only baseline's input for ``size`` tokens: relative positions ``j - i`` and nothing else.

    ``(8, T, T)`` float32 (:data:`DISTANCE_CHANNELS`), all in ``[0, 1]`` like attention: indicators of ``j - i`` equal
    to -2, -1, 0, 1, 2; ``j > i``; ``exp(-|j - i| / 4)``; ``|j - i| / T``. Like OLA it carries no token identity.
    """
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
    """The :class:`InputSpec` of a key of :data:`SYNTAX_GRID` or of ``"layer <n>"`` (the head-averaged raw
    attention of layer ``n``, 1 nearest the input: channel ``layer<n>``).

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
        num_tokens: tokens kept (``min(T, max_tokens)``).
        token_labels: ``tokens`` tasks: a label per kept token (``None``: not trained on); empty otherwise.
        word_tokens: ``tokens`` and ``dependency``: the first sub-token of each scored word.
        word_labels: gold label of each scored word (tag, or dependency relation).
        heads: ``dependency``: gold head token of each scored word (``-1``: beyond the cut, not scored).
        gold_heads: ``dependency``: gold head word of each scored word (1-based, 0 = root).
        punct: ``dependency``: whether each scored word is punctuation (UPOS ``PUNCT``).
        spans: ``relation``: ``(e1_start, e1_end, e2_start, e2_end)`` token indices, end exclusive.
        label: ``relation``: the directed relation.
        positions: ``grid="words"``: the token index of each image row / column (empty for the token grid); the item's
            other indices then count words, not tokens.
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
        unaligned: ``(sent_id, reason)`` of sentences whose words overlap no token.
        cut_sentences: kept sentences longer than the cut.
        words, words_beyond_cut: scored words (tokens-task or DP words) and those beyond the cut.
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
        records: the OLA record of each item (same order).
        causal: the model is a causal LM.
        max_tokens: the length cut (``None``: none).
        grid: ``"tokens"`` or ``"words"`` (see the module docstring).
        sources: records of other channel sources for the same items, by source name (``"alti"``, ``"attention"``);
            an input spec reads the records of its channels' one source.
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
            ValueError: its source's records are missing (build the data with that source).
        """
        if spec.is_distance:
            return self.records
        source = lookup_channel(spec.channels[0]).source
        if source == "ola":
            return self.records
        if source not in self.sources:
            raise ValueError(f"{self.model} {self.split}: no {source!r} records for the input {spec.label!r} "
                             f"(have: {['ola', *self.sources]}); build the data with that source "
                             f"(olacore.toa.data.syntax_data(..., sources=('ola', {source!r})))")
        return self.sources[source]

    @property
    def kind(self) -> str:
        """``"tokens"``, ``"relation"`` or ``"dependency"``."""
        return task_kind(self.task)

    def raw(self, spec: InputSpec) -> list[torch.Tensor]:
        """The spec's raw maps of every item, cut (and reduced to the word grid): ``(K, T_i, T_i)``."""
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
        return [build_input(m, spec, bool(r.is_causal)) for r, m in zip(self.source_records(spec), self.raw(spec))]

    def labels(self) -> list[str]:
        """Every gold label string the items carry (to build a label vocabulary)."""
        if self.kind == "relation":
            return [item.label for item in self.items]
        if self.kind == "tokens":
            return [label for item in self.items for label in item.token_labels if label is not None]
        return [label for item in self.items for label in item.word_labels]


def _token_words(share: torch.Tensor) -> list[int | None]:
    """The word of each token (most characters; ``None`` for tokens in no word)."""
    owner = share.argmax(0).tolist()
    covered = (share.sum(0) > 0).tolist()
    return [w if c else None for w, c in zip(owner, covered)]


def _tokens_item(source, share, offsets, keep, task, report) -> TaskItem:
    field = "xpos" if task == "pos" else "tags"  # the entity tasks read NERSentence.tags
    tags = getattr(source, field, ())
    if len(tags) != len(source.words):
        raise ValueError(f"{source.sent_id}: {len(tags)} tags for {len(source.words)} words (no {TASKS[task][1]} tags?)")
    special = SPECIAL if task == "pos" else "O"
    owners = _token_words(share)
    token_labels = []
    for t in range(keep):
        start, end = offsets[t]
        if owners[t] is not None:
            token_labels.append(tags[owners[t]])
        else:
            token_labels.append(special if end <= start else None)
    first = first_tokens(share)
    scored = [w for w, t in enumerate(first) if t < keep]
    report.words += len(first)
    report.words_beyond_cut += len(first) - len(scored)
    if task in ENTITY_TASKS:
        from seqeval.metrics.sequence_labeling import get_entities

        entities = get_entities(list(tags))
        report.entities += len(entities)
        report.entities_beyond_cut += sum(1 for _, start, _ in entities if first[start] >= keep)
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
    """A task split in one model's tokenisation, its OLA cached (:func:`olacore.pipeline.cached_ola`).

    Args:
        task: a key of :data:`TASKS`.
        model: zoo name, Hugging Face id / folder, or a :class:`olacore.loading.LoadedModel`.
        sources: word-level examples with ``sent_id``, ``text``, ``words`` and ``spans``: :class:`olacore.corpora.UDSentence`
            (``pos``, ``dp``), :class:`olacore.corpora.NERSentence` (``ner``, ``wnut``),
            :class:`olacore.corpora.RelationExample` (``re``).
        split: a label for the report.
        max_tokens: the length cut, in tokens for both grids (official 64; ``None``: none).
        grid: ``"tokens"`` (official) or ``"words"``.
        max_order: OLA orders to compute (2 for the official input, 3 for the syntax grid).
        records: OLA records of ``sources`` already at hand (then ``model`` only names them).
        workers, device, progress, store: passed to :func:`olacore.pipeline.cached_ola`.

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
    return TaskData(task, str(name), split, items, kept_records, causal, max_tokens, report, grid)


IGNORE = -100


@dataclass(frozen=True)
class LabelVocab:
    """The label classes of a trained adapter, in order (index = class id).

    Built from the *training* labels (:meth:`from_labels`); labels it does not know are counted by
    :func:`encode_items` and scored as errors, never a crash.
    """

    labels: tuple[str, ...]

    @classmethod
    def from_labels(cls, labels: Sequence[str]) -> "LabelVocab":
        """The sorted distinct labels."""
        return cls(tuple(sorted(set(labels))))

    def __len__(self) -> int:
        return len(self.labels)

    def index(self, label: str | None) -> int:
        """Class id of ``label``; :data:`IGNORE` for ``None`` or an unknown label."""
        if label is None:
            return IGNORE
        return self._lookup().get(label, IGNORE)

    def _lookup(self) -> dict[str, int]:
        cache = self.__dict__.get("_index")
        if cache is None:
            cache = {label: i for i, label in enumerate(self.labels)}
            object.__setattr__(self, "_index", cache)
        return cache


def encode_items(items: Sequence[TaskItem], kind: str, vocab: LabelVocab) -> tuple[list[dict[str, np.ndarray]], int]:
    """Numeric targets of every item, and how many gold labels the vocabulary did not know.

    Returns:
        ``(targets, unknown)``: per item a dict of int64 arrays, ``tokens``: ``labels`` (T,); ``relation``: ``spans``
        (4,), ``label`` (1,); ``dependency``: ``words`` (W,) first sub-tokens, ``heads`` (W,) head tokens, ``rels``
        (W,). Unknown labels and heads beyond the cut are :data:`IGNORE`.
    """
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


def collate(maps: Sequence[torch.Tensor], targets: Sequence[dict[str, np.ndarray]] | None, kind: str
            ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Pad a batch: maps into the top-left corner of ``(B, C, T, T)``, targets with :data:`IGNORE`.

    Returns:
        ``(maps, lengths, batch_targets)``; ``batch_targets`` for ``tokens``: ``labels`` (B, T); ``relation``: ``spans``
        (B, 4), ``label`` (B,); ``dependency``: ``words``, ``heads``, ``rels`` (B, W) (``words`` padded with 0).
    """
    lengths = torch.tensor([m.shape[-1] for m in maps])
    size, channels = int(lengths.max()), maps[0].shape[0]
    batch = torch.zeros(len(maps), channels, size, size)
    for b, m in enumerate(maps):
        batch[b, :, : m.shape[-1], : m.shape[-1]] = m
    out: dict[str, torch.Tensor] = {}
    if targets is None:
        return batch, lengths, out
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


def length_batches(lengths: Sequence[int], batch_size: int, generator: torch.Generator | None = None,
                   pool: int = 20) -> Iterator[list[int]]:
    """Indices in batches of similar length (less padding), in a random order when a generator is given.

    Shuffled, cut into pools of ``pool * batch_size``, sorted by length within each pool, batched; the batches are
    shuffled again. Without a generator: sorted by length, in order (evaluation).
    """
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


#: Channel sources :func:`syntax_data` can attach (:mod:`olacore.channels`).
SOURCES = ("ola", "alti", "attention")


def subset_splits(splits: Mapping[str, Sequence[Any]], num_train: int | None = None, num_dev: int | None = None,
                  num_test: int | None = None) -> dict[str, list[Any]]:
    """Smaller splits: the first ``num_train`` / ``num_dev`` sentences of train / dev, and ``num_test``
    test sentences spread evenly over the chapter's test. ``None`` keeps a split whole; ``test_long`` is dropped when a
    split is cut.
    """
    out = {"train": list(splits["train"])[:num_train], "dev": list(splits["dev"])[:num_dev],
           "test": evenly_spread(splits["test"], num_test)}
    if "test_long" in splits and num_train is None and num_dev is None and num_test is None:
        out["test_long"] = list(splits["test_long"])
    return out


def syntax_data(model: Any, splits: Mapping[str, Sequence[Any]], settings: Any, *, task: str = "dp",
                sources: Sequence[str] = ("ola",), max_order: int = 3, workers: int = 1, device: str | None = None,
                progress: bool = False, store: TensorStore | None = None) -> dict[str, TaskData]:
    """Task data of every split for one model, its maps computed once (cached) for all of them.

    Args:
        model: zoo name, id / folder, or :class:`olacore.loading.LoadedModel` (a control).
        splits: ``{"train": [...], "dev": [...], "test": [...], ...}`` of word-level sources
            (:func:`olacore.corpora.ewt_splits` for EWT).
        settings: the length cut (``max_tokens``) and the ``grid``, read from it (an
            :class:`olacore.profiles.SyntaxSettings`, which this module does not import: the profiles import it).
        task: ``"dp"`` or ``"pos"``.
        sources: channel sources (:data:`SOURCES`): ``"ola"`` (always: orders ``0..max_order`` and the rollout),
            ``"alti"`` (for the ``"ALTI"`` input), ``"attention"`` (for ``"layer <n>"`` inputs).
        max_order: OLA orders to compute (3: the syntax grid needs order 3).
        workers: extraction processes on a miss (a :class:`olacore.loading.LoadedModel` runs in-process).
        device, progress, store: passed to the cached extraction on a miss.

    Returns:
        ``{split: TaskData}``; ``TaskData.sources`` holds the ``"alti"`` / ``"attention"`` records of its items.
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
