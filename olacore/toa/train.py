"""Training and scoring TOA adapters (paper section 4.4): the loss, one epoch, a cached seeded job per adapter (the
checkpoint chosen on *dev*; the official ``configs/train_*.json`` evaluate on test), greedy prediction and metrics.

Decoding is greedy, as officially (DP: the arg-max head of each word, no tree constraint). Scores, in percent:
``pos`` accuracy per word and per sub-token; ``ner`` / ``wnut`` entity F1 (``seqeval``); ``re`` accuracy and the
official SemEval-2010 Task 8 macro F1; ``dp`` UAS / LAS with and without punctuation. Gold labels a model could
never predict count as errors.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import time
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Hashable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import AfterValidator

from olacore.augment import Augmentation, augment
from olacore.settings import Fraction, NonNegativeFloat, PositiveFloat, PositiveInt, Str, resolve_device, settings_class
from olacore.store import TensorStore, code_digest
from olacore.toa.data import (ENTITY_TASKS, IGNORE, InputSpec, LabelVocab, SPECIAL, TaskData, TaskItem, build_input,
                              collate, encode_items, length_batches, task_kind)
from olacore.toa.model import AdapterConfig, ToaModel
from olacore.training import run_cached

__all__ = ["predict", "score", "word_tags", "attachment_words", "SELECTION", "TRANSFER_TASKS", "METRICS", "TrainConfig",
           "adapter_loss", "optimiser_for", "train_epoch", "AdapterJob", "TrainedAdapter", "make_job",
           "train_adapters", "token_accuracy", "entity_f1", "paired_bootstrap_se", "semeval_scores",
           "semeval_relation_type", "attachment_scores"]


#: The dev score each task selects its checkpoint on (higher is better).
SELECTION = {"pos": "accuracy", "ner": "f1", "wnut": "f1", "re": "macro_f1", "dp": "las"}
#: The transfer tasks in the transfer chapter's order (the paper's table first): ``ner`` is UNER
#: English-EWT (the EWT sentences of ``dp`` / ``pos``), ``wnut`` WNUT-17 (tweets, out of domain).
TRANSFER_TASKS = ("re", "dp", "pos", "ner", "wnut")
#: The headline score of each transfer task (percent), as the official evaluation reports it.
METRICS = {"re": "accuracy", "ner": "f1", "pos": "accuracy", "dp": "uas", "wnut": "f1"}


@torch.no_grad()
def predict(model: torch.nn.Module, maps: Sequence[torch.Tensor], targets: Sequence[dict[str, np.ndarray]],
            kind: str, batch_size: int = 16) -> list[dict[str, np.ndarray]]:
    """Greedy predictions for ``(C, T_i, T_i)`` inputs and their encoded ``targets`` (spans, word positions).

    Returns:
        Per item, class ids: ``{"labels": (T,)}`` (tokens), ``{"label": (1,)}`` (relation) or ``{"heads": (W,),
        "rels": (W,)}`` (dependency: head token and relation of each scored word).
    """
    model.eval()  # train_epoch turns training mode back on
    device = next(model.parameters()).device
    out: list[dict[str, np.ndarray] | None] = [None] * len(maps)
    for index in length_batches([m.shape[-1] for m in maps], batch_size):
        batch, lengths, extra = collate([maps[i] for i in index], [targets[i] for i in index], kind)
        inputs = {"spans": extra["spans"].to(device)} if kind == "relation" else {}
        result = model(batch.to(device), lengths.to(device), **inputs)
        for b, i in enumerate(index):
            size = int(lengths[b])
            if kind == "tokens":
                out[i] = {"labels": result["logits"][b, :size].argmax(-1).cpu().numpy()}
            elif kind == "relation":
                out[i] = {"label": result["logits"][b : b + 1].argmax(-1).cpu().numpy()}
            else:
                words = torch.from_numpy(targets[i]["words"]).to(device)
                heads = result["arc"][b, words, :size].argmax(-1)
                rels = result["rel"][b, words, heads].argmax(-1)
                out[i] = {"heads": heads.cpu().numpy(), "rels": rels.cpu().numpy()}
    return out  # type: ignore[return-value]


def score(task: str, items: Sequence[TaskItem], predictions: Sequence[dict[str, np.ndarray]],
          vocab: LabelVocab) -> dict[str, float]:
    """The task's metrics (percent) of ``predictions`` against the items' gold labels."""
    kind = task_kind(task)
    names = vocab.labels
    if kind == "tokens":
        gold_words, pred_words = word_tags(items, predictions, vocab)
        if task in ENTITY_TASKS:
            return entity_f1(gold_words, pred_words)
        gold_tokens, pred_tokens = [], []
        for item, p in zip(items, predictions):
            keep = [t for t, label in enumerate(item.token_labels) if label is not None and label != SPECIAL]
            gold_tokens.append([item.token_labels[t] for t in keep])
            pred_tokens.append([names[int(p["labels"][t])] for t in keep])
        return {"accuracy": token_accuracy(gold_words, pred_words),
                "subtoken_accuracy": token_accuracy(gold_tokens, pred_tokens),
                "words": sum(len(g) for g in gold_words)}
    if kind == "relation":
        return semeval_scores([item.label for item in items], [names[int(p["label"][0])] for p in predictions])
    return attachment_scores(*attachment_words(items, predictions, vocab))


def word_tags(items: Sequence[TaskItem], predictions: Sequence[dict[str, np.ndarray]], vocab: LabelVocab
              ) -> tuple[list[list[str]], list[list[str]]]:
    """Per sentence of a ``tokens`` task, the gold and predicted tag of each scored word (first sub-token)."""
    names = vocab.labels
    gold = [list(item.word_labels) for item in items]
    return gold, [[names[int(p["labels"][t])] for t in item.word_tokens] for item, p in zip(items, predictions)]


def attachment_words(items: Sequence[TaskItem], predictions: Sequence[dict[str, np.ndarray]], vocab: LabelVocab
                     ) -> tuple[list[list], list[list], list[list], list[list], list[list]]:
    """Per DP sentence, the arguments of :func:`attachment_scores` for its scored words (gold head within the cut)."""
    names = vocab.labels
    gold_heads, gold_rels, pred_heads, pred_rels, punct = [], [], [], [], []
    for item, p in zip(items, predictions):
        scored = [w for w, head in enumerate(item.heads) if head != -1 and head != IGNORE]
        gold_heads.append([item.heads[w] for w in scored])
        gold_rels.append([item.word_labels[w] for w in scored])
        pred_heads.append([int(p["heads"][w]) for w in scored])
        pred_rels.append([names[int(p["rels"][w])] for w in scored])
        punct.append([item.punct[w] for w in scored])
    return gold_heads, gold_rels, pred_heads, pred_rels, punct


def _torch_device(name: str) -> str:
    """``name`` if torch knows it as a device."""
    try:
        torch.device(name)
    except RuntimeError:
        raise ValueError(f"{name!r} is no torch device; give \"cpu\", \"cuda\", \"cuda:0\", \"mps\" or null (CUDA when "
                         "available)") from None
    return name


@settings_class
class TrainConfig:
    """How an adapter is trained (official: AdamW, batch 2, 15 epochs for encoders / 5 for CLMs).

    Attributes:
        epochs: passes over the training sentences.
        lr: AdamW peak learning rate (official 1e-5, 3e-5 for DP, for a 768-wide adapter).
        batch_size: sentences per step.
        warmup: share of the steps with a linearly rising rate (then linear decay to 0).
        clip: gradient-norm clipping (``0``: none).
        augment: the official augmentations (``None``: none).
        ner_o_weight: loss weight of the ``O`` tag in NER (official 0.5).
        device: ``None`` (CUDA if available) or a torch device name.

    Raises:
        olacore.settings.SettingsError: (a ValueError naming the field) a non-positive size or rate, a negative
            weight, ``warmup`` outside [0, 1), a ``device`` torch does not know.
    """

    epochs: PositiveInt = 10
    lr: PositiveFloat = 2e-3
    batch_size: PositiveInt = 8
    warmup: Fraction = 0.1
    clip: NonNegativeFloat = 1.0
    augment: Augmentation | None = None
    ner_o_weight: NonNegativeFloat = 0.5
    device: Annotated[Str, AfterValidator(_torch_device)] | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form, less the device."""
        out = dataclasses.asdict(self)
        out.pop("device")
        return out


def adapter_loss(kind: str, outputs: dict[str, torch.Tensor], targets: dict[str, torch.Tensor],
                 class_weight: torch.Tensor | None = None) -> torch.Tensor:
    """The training loss of a TOA head (official ``models/adapters.py``), a scalar cross-entropy: per labelled
    token (weighted by ``(classes,)`` ``class_weight``), per relation, or DP arc CE plus relation CE on the gold arc."""
    if kind == "tokens":
        logits, labels = outputs["logits"].flatten(0, 1), targets["labels"].flatten()
        losses = F.cross_entropy(logits, labels, ignore_index=IGNORE, reduction="none")
        keep = labels != IGNORE
        weight = class_weight[labels.clamp_min(0)] * keep if class_weight is not None else keep.float()
        return (losses * weight).sum() / keep.sum().clamp_min(1)
    if kind == "relation":
        return F.cross_entropy(outputs["logits"], targets["label"], ignore_index=IGNORE)
    rows = torch.arange(targets["words"].shape[0], device=targets["words"].device)[:, None]
    arc = outputs["arc"][rows, targets["words"]]  # (B, W, T)
    heads = targets["heads"]
    arc_loss = F.cross_entropy(arc.flatten(0, 1), heads.flatten(), ignore_index=IGNORE)
    rel = outputs["rel"][rows, targets["words"], heads.clamp_min(0)]  # (B, W, classes) at the gold head
    rels = targets["rels"].masked_fill(heads == IGNORE, IGNORE)
    if bool((rels != IGNORE).any()):
        return arc_loss + F.cross_entropy(rel.flatten(0, 1), rels.flatten(), ignore_index=IGNORE)
    return arc_loss


def optimiser_for(model: torch.nn.Module, config: TrainConfig, steps: int
                  ) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW (weight decay 0.01) with a linear warm-up over ``config.warmup`` of the ``steps``, then linear decay."""
    warm = max(1, int(config.warmup * steps))
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    return optimiser, schedule


def train_epoch(model: torch.nn.Module, inputs: Sequence[torch.Tensor], targets: Sequence[dict[str, np.ndarray]],
                optimiser: torch.optim.Optimizer, schedule: torch.optim.lr_scheduler.LambdaLR, config: TrainConfig,
                generator: torch.Generator, class_weight: torch.Tensor | None = None) -> float:
    """One pass over ``(C, T_i, T_i)`` inputs in batches of similar length (order from ``generator``); the mean loss."""
    device = next(model.parameters()).device
    model.train()
    total, batches = 0.0, 0
    for index in length_batches([m.shape[-1] for m in inputs], config.batch_size, generator):
        maps, size, batch = collate([inputs[i] for i in index], [targets[i] for i in index], model.task)
        batch = {k: v.to(device) for k, v in batch.items()}
        extra = {"spans": batch["spans"]} if model.task == "relation" else {}
        loss = adapter_loss(model.task, model(maps.to(device), size.to(device), **extra), batch, class_weight)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        if config.clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        optimiser.step()
        schedule.step()
        total, batches = total + float(loss.detach()), batches + 1
    return total / max(1, batches)


@dataclass
class AdapterJob:
    """One adapter training run (a :class:`olacore.training.TrainingJob`, numpy inside; :func:`make_job`).
    ``labels`` go into the record only, not the key."""

    task: str
    spec: InputSpec
    adapter: AdapterConfig
    training: TrainConfig
    vocab: tuple[str, ...]
    causal: bool
    train_raw: list[np.ndarray]
    train_targets: list[dict[str, np.ndarray]]
    dev_raw: list[np.ndarray]
    dev_targets: list[dict[str, np.ndarray]]
    dev_items: list[TaskItem]
    seed: int = 0
    labels: dict[str, Any] = field(default_factory=dict)
    grid: str = "tokens"

    def key(self) -> str:
        def data_digest(raw, targets):
            digest = hashlib.sha256()
            for array in list(raw) + [a for t in targets for _, a in sorted(t.items())]:
                array = np.ascontiguousarray(array)
                digest.update(f"{array.dtype}{array.shape}".encode())
                digest.update(array.tobytes())
            return digest.hexdigest()

        return TensorStore.key(
            kind="toa-adapter", code=code_digest(__name__), task=self.task, spec=dataclasses.asdict(self.spec),
            adapter=dataclasses.asdict(self.adapter), training=self.training.as_dict(), vocab=list(self.vocab),
            causal=self.causal, seed=self.seed, device=(torch.device(self.training.device).type if self.training.device
                                                       else resolve_device(None).type),
            train=data_digest(self.train_raw, self.train_targets), dev=data_digest(self.dev_raw, self.dev_targets),
        )

    def train(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """Train, keep the best dev checkpoint: ``(weights, record)``."""
        torch.manual_seed(self.seed)
        generator = torch.Generator().manual_seed(self.seed)
        device = resolve_device(self.training.device)
        kind, config = task_kind(self.task), self.training
        vocab = LabelVocab(tuple(self.vocab))
        model = ToaModel(kind, self.spec.num_channels, len(vocab), self.adapter).to(device)
        train_raw = [torch.from_numpy(m) for m in self.train_raw]
        augmentation = config.augment if config.augment and config.augment.active else None
        fixed = None if augmentation else [build_input(m, self.spec, self.causal) for m in train_raw]  # else anew per epoch
        dev_inputs = [build_input(torch.from_numpy(m), self.spec, self.causal) for m in self.dev_raw]
        class_weight = None
        if self.task in ENTITY_TASKS and "O" in vocab.labels:
            class_weight = torch.ones(len(vocab), device=device)
            class_weight[vocab.index("O")] = config.ner_o_weight
        steps = config.epochs * -(-len(train_raw) // config.batch_size)
        optimiser, schedule = optimiser_for(model, config, steps)
        metric = SELECTION[self.task]
        history, best, best_state, train_seconds = [], None, None, 0.0
        start = time.perf_counter()
        for epoch in range(1, config.epochs + 1):
            tick = time.perf_counter()
            inputs = fixed if fixed is not None else [
                build_input(augment(m, self.causal, augmentation, generator), self.spec, self.causal) for m in train_raw]
            loss = train_epoch(model, inputs, self.train_targets, optimiser, schedule, config, generator, class_weight)
            train_seconds += time.perf_counter() - tick
            dev = score(self.task, self.dev_items,
                        predict(model, dev_inputs, self.dev_targets, kind, 32), vocab)
            history.append({"epoch": epoch, "loss": loss, **{f"dev_{k}": v for k, v in dev.items()}})
            if best is None or dev[metric] > best[metric]:
                best, best_epoch = dev, epoch
                best_state = copy.deepcopy(model.state_dict())
        record = {
            "task": self.task, "spec": dataclasses.asdict(self.spec), "adapter": dataclasses.asdict(self.adapter),
            "training": self.training.as_dict(), "vocab": list(self.vocab), "causal": self.causal,
            "seed": self.seed, "grid": self.grid, "in_channels": self.spec.num_channels, "labels": self.labels,
            "best_epoch": best_epoch, "dev": best, "selected_on": f"dev {metric}", "history": history,
            "seconds": time.perf_counter() - start, "train_seconds": train_seconds,
            "sentences_per_second": config.epochs * len(train_raw) / max(train_seconds, 1e-9),
            "train_size": len(train_raw), "dev_size": len(self.dev_raw),
        }
        return {name: t.detach().cpu() for name, t in best_state.items()}, record


@dataclass
class TrainedAdapter:
    """A trained adapter and its record."""

    model: ToaModel
    record: dict[str, Any]

    @classmethod
    def from_stored(cls, tensors: dict[str, torch.Tensor], record: dict[str, Any]) -> "TrainedAdapter":
        """Rebuild from what :meth:`AdapterJob.train` stored (on CUDA when available, in eval mode)."""
        adapter = AdapterConfig(**record["adapter"])
        model = ToaModel(task_kind(record["task"]), record["in_channels"], len(record["vocab"]), adapter)
        model.load_state_dict(tensors)
        return cls(model.to(resolve_device(None)).eval(), record)

    @property
    def task(self) -> str:
        return self.record["task"]

    @property
    def vocab(self) -> LabelVocab:
        return LabelVocab(tuple(self.record["vocab"]))

    @property
    def spec(self) -> InputSpec:
        return InputSpec(tuple(self.record["spec"]["channels"]))

    def predict(self, data: TaskData) -> list[dict[str, np.ndarray]]:
        """Greedy predictions (:func:`predict`) on any model's task data of this task.

        Raises:
            ValueError: ``data`` is for another task or grid, or from a model of the other kind.
        """
        if data.task != self.task:
            raise ValueError(f"this adapter was trained for {self.task!r}, the data is for {data.task!r}")
        if data.grid != self.record["grid"]:
            raise ValueError(f"this adapter was trained on the {self.record['grid']} grid, the data is on the "
                             f"{data.grid} grid; build the data with grid={self.record['grid']!r}")
        if bool(data.causal) != bool(self.record["causal"]):
            kinds = {True: "a causal LM", False: "an encoder"}
            raise ValueError(f"this adapter was trained on {kinds[bool(self.record['causal'])]} and the data comes "
                             f"from {kinds[bool(data.causal)]}; TOA transfers between models of one kind only")
        targets, _ = encode_items(data.items, data.kind, self.vocab)
        return predict(self.model, data.inputs(self.spec), targets, data.kind, 32)

    def evaluate(self, data: TaskData, predictions: Sequence[dict[str, np.ndarray]] | None = None) -> dict[str, float]:
        """Scores on ``data`` (any model's), plus ``unknown_labels``; ``predictions`` (of :meth:`predict`) when
        already made.

        Raises:
            ValueError: as :meth:`predict`.
        """
        scores = score(self.task, data.items, self.predict(data) if predictions is None else predictions, self.vocab)
        scores["unknown_labels"] = encode_items(data.items, data.kind, self.vocab)[1]
        return scores


def make_job(train: TaskData, dev: TaskData, spec: InputSpec, adapter: AdapterConfig | None = None,
             training: TrainConfig | None = None, seed: int = 0, **labels: Any) -> AdapterJob:
    """An :class:`AdapterJob` from a model's train and dev task data (classes: the training labels); ``labels``:
    columns for the record; ``seed``: initialisation, batch order, dropout and augmentation.

    Raises:
        ValueError: train and dev differ in task or grid, or a split is empty.
    """
    if train.task != dev.task or train.grid != dev.grid:
        raise ValueError(f"train is {train.task!r} on the {train.grid} grid but dev {dev.task!r} on the {dev.grid} grid")
    if not len(train) or not len(dev):
        raise ValueError(f"train ({len(train)}) and dev ({len(dev)}) need at least one example each")
    vocab = LabelVocab.from_labels(train.labels())
    train_raw, dev_raw = train.raw(spec), dev.raw(spec)
    train_targets, _ = encode_items(train.items, train.kind, vocab)
    dev_targets, _ = encode_items(dev.items, dev.kind, vocab)
    return AdapterJob(train.task, spec, adapter or AdapterConfig(), training or TrainConfig(), vocab.labels,
                      train.causal, [m.numpy() for m in train_raw], train_targets, [m.numpy() for m in dev_raw],
                      dev_targets, list(dev.items), seed, dict(labels), train.grid)


def train_adapters(jobs: Sequence[AdapterJob], *, workers: int = 1, store: TensorStore | None = None,
                   progress: bool = True) -> list[TrainedAdapter]:
    """Every job's adapter, from the store or trained now in ``workers`` processes."""
    results = run_cached(jobs, workers=workers, store=store, progress=progress, desc="TOA adapters")
    return [TrainedAdapter.from_stored(tensors, record) for tensors, record in results]


def token_accuracy(gold: Sequence[Sequence[Hashable]], pred: Sequence[Sequence[Hashable]]) -> float:
    """Share of labels predicted exactly, in percent; per sentence one label per unit (word or sub-token).

    Raises:
        ValueError: there is no label to count.
    """
    hits = [g == p for gs, ps in zip(gold, pred) for g, p in zip(gs, ps)]
    if not hits:
        raise ValueError("token_accuracy: no label to score")
    return 100.0 * float(np.mean(hits))


def entity_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, float]:
    """Entity-level precision, recall and F1 (percent) of per-word BIO tags (``seqeval``, CoNLL chunking), and
    ``"entities"``, the gold entity count.

    Raises:
        ValueError: no gold entity (F1 undefined).
    """
    from seqeval.metrics.sequence_labeling import get_entities, precision_recall_fscore_support

    gold, pred = [list(s) for s in gold], [list(s) for s in pred]
    if not get_entities(gold):
        raise ValueError(f"entity_f1: no entity in gold ({sum(map(len, gold))} words, all 'O'), so recall and F1 "
                         "are undefined; score a set with at least one gold entity")
    precision, recall, f1, _ = precision_recall_fscore_support(gold, pred, average="micro", zero_division=0)
    return {"precision": 100.0 * float(precision), "recall": 100.0 * float(recall), "f1": 100.0 * float(f1),
            "entities": len(get_entities(gold))}


def paired_bootstrap_se(ours: np.ndarray, theirs: np.ndarray, score: Callable[[np.ndarray], np.ndarray],
                        draws: int = 2000, seed: int = 0) -> float:
    """Standard error (points) of ``score(ours) - score(theirs)`` by a paired bootstrap over sentences.

    ``ours``, ``theirs``: ``(N, k)`` per-sentence counts of the same sentences; ``score``: ``(..., k) -> (...)`` of
    summed counts (e.g. :func:`chapter_code.transfer.f1_of_counts`); ``draws`` resamples; NaN for fewer than two
    sentences.
    """
    if len(ours) < 2:
        return float("nan")
    picks = np.random.default_rng(seed).integers(0, len(ours), (draws, len(ours)))
    return float(np.std(score(ours[picks].sum(1)) - score(theirs[picks].sum(1))))


def semeval_relation_type(label: str) -> str:
    """The relation type of a directed SemEval label: ``"Cause-Effect(e2,e1)" -> "Cause-Effect"``."""
    return label.split("(", 1)[0]


def semeval_scores(gold: Sequence[str], pred: Sequence[str]) -> dict[str, float]:
    """Accuracy and the official SemEval-2010 Task 8 score of directed relation labels, in percent.

    The official score (``semeval2010_task8_scorer-v1.2.pl``, evaluation (iii), "(9+1)-way, directionality taken
    into account"): the macro F1 over the relation types in gold, ``Other`` excluded; per type, exact directed
    matches over the predictions and the gold labels of that type (either direction).

    Args:
        gold, pred: one directed label per example (``"Message-Topic(e1,e2)"``, ``"Other"``).

    Returns:
        ``{"accuracy", "macro_f1", "macro_precision", "macro_recall", "examples"}`` (accuracy 19-way).

    Raises:
        ValueError: no label, or lists of unequal length.
    """
    gold, pred = list(gold), list(pred)
    if not gold or len(gold) != len(pred):
        raise ValueError(f"semeval_scores: {len(gold)} gold and {len(pred)} predicted labels; need as many, at least one")
    types = sorted({semeval_relation_type(g) for g in gold if g != "Other"})
    precisions, recalls, f1s = [], [], []
    for kind in types:
        exact = sum(g == p and semeval_relation_type(g) == kind for g, p in zip(gold, pred))
        predicted = sum(semeval_relation_type(p) == kind for p in pred)
        actual = sum(semeval_relation_type(g) == kind for g in gold)
        p = 100.0 * exact / predicted if predicted else 0.0
        r = 100.0 * exact / actual if actual else 0.0
        precisions.append(p)
        recalls.append(r)
        f1s.append(2 * p * r / (p + r) if p + r else 0.0)
    mean = (lambda values: float(np.mean(values)) if values else 0.0)
    return {
        "accuracy": 100.0 * float(sum(g == p for g, p in zip(gold, pred))) / len(gold),
        "macro_f1": mean(f1s),
        "macro_precision": mean(precisions),
        "macro_recall": mean(recalls),
        "examples": len(gold),
    }


def attachment_scores(gold_heads: Sequence[Sequence[int]], gold_rels: Sequence[Sequence[str]],
                      pred_heads: Sequence[Sequence[int]], pred_rels: Sequence[Sequence[str]],
                      punct: Sequence[Sequence[bool]]) -> dict[str, float]:
    """Unlabelled and labelled attachment scores (percent), with punctuation and, by the ``punct`` flags per word,
    without it.

    Returns:
        ``{"uas", "las", "words", "uas_nopunct", "las_nopunct", "words_nopunct"}`` (NaN when no word is left).

    Raises:
        ValueError: there is no word at all.
    """
    head_ok = np.array([g == p for gs, ps in zip(gold_heads, pred_heads) for g, p in zip(gs, ps)], dtype=bool)
    rel_ok = np.array([g == p for gs, ps in zip(gold_rels, pred_rels) for g, p in zip(gs, ps)], dtype=bool)
    if head_ok.size == 0:
        raise ValueError("attachment_scores: no word to score")
    label_ok = head_ok & rel_ok
    scores: dict[str, float] = {"uas": 100.0 * head_ok.mean(), "las": 100.0 * label_ok.mean(), "words": int(head_ok.size)}
    keep = ~np.array([bool(x) for xs in punct for x in xs], dtype=bool)
    scores["uas_nopunct"] = 100.0 * head_ok[keep].mean() if keep.any() else float("nan")
    scores["las_nopunct"] = 100.0 * label_ok[keep].mean() if keep.any() else float("nan")
    scores["words_nopunct"] = int(keep.sum())
    return scores
