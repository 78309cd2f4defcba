"""Predict with a TOA adapter and score the predictions with the task's metrics.

Decoding is greedy, as officially: the arg-max class per token / example, and for DP the
arg-max head of each word (no tree constraint) and then the arg-max relation on that arc.
Scores (:mod:`olacore.metrics`), all in percent:

- ``pos`` / ``upos``: ``accuracy`` per word (at its first sub-token) and ``subtoken_accuracy``
  (every sub-token of a word, the official unit; special tokens left out).
- ``ner``: entity-level ``f1`` (and ``precision``, ``recall``) with ``seqeval`` on the words.
- ``re``: ``accuracy`` (19-way) and ``macro_f1`` (the official SemEval-2010 Task 8 score).
- ``dp``: ``uas``, ``las`` with punctuation (as the paper) and ``uas_nopunct``, ``las_nopunct``;
  words whose head lies beyond the length cut are not scored (official).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from olacore.metrics import attachment_scores, entity_f1, semeval_scores, token_accuracy
from olacore.toa.batching import IGNORE, LabelVocab, collate, length_batches
from olacore.toa.tasks import SPECIAL, TaskItem, task_kind

__all__ = ["predict", "score", "SELECTION", "TRANSFER_TASKS", "METRICS"]

#: The dev score each task selects its checkpoint on (higher is better).
SELECTION = {"pos": "accuracy", "upos": "accuracy", "ner": "f1", "re": "macro_f1", "dp": "las", "dp-universal": "las"}
#: The transfer tasks in the transfer chapter's order (the paper's table first).
TRANSFER_TASKS = ("re", "dp", "pos", "ner")
#: The headline score of each transfer task (percent), as the official evaluation reports it.
METRICS = {"re": "accuracy", "ner": "f1", "pos": "accuracy", "dp": "uas"}


@torch.no_grad()
def predict(model: torch.nn.Module, maps: Sequence[torch.Tensor], targets: Sequence[dict[str, np.ndarray]],
            kind: str, batch_size: int = 16) -> list[dict[str, np.ndarray]]:
    """Greedy predictions of ``model`` (a :class:`~olacore.toa.heads.ToaModel`) for every item.

    Args:
        maps: ``(C, T_i, T_i)`` inputs.
        targets: the encoded items (:func:`olacore.toa.batching.encode_items`); the relation
            head reads the entity spans and the DP head the word positions from them.
        kind: ``"tokens"``, ``"relation"`` or ``"dependency"``.
        batch_size: sentences per forward pass.

    Returns:
        per item: ``tokens``: ``{"labels": (T,)}``; ``relation``: ``{"label": (1,)}``;
        ``dependency``: ``{"heads": (W,), "rels": (W,)}`` (head token and relation class of
        each scored word). Class ids index the adapter's vocabulary.
    """
    was_training = model.training
    model.eval()
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
    model.train(was_training)
    return out  # type: ignore[return-value]


def score(task: str, items: Sequence[TaskItem], predictions: Sequence[dict[str, np.ndarray]],
          vocab: LabelVocab) -> dict[str, float]:
    """The task's metrics (percent) of ``predictions`` against the items' gold labels.

    Gold labels the vocabulary does not know count as errors (they cannot be predicted).

    Raises:
        ValueError: unknown task, or items and predictions differ in number.
    """
    kind = task_kind(task)
    if len(items) != len(predictions):
        raise ValueError(f"{len(items)} items but {len(predictions)} predictions")
    names = vocab.labels
    if kind == "tokens":
        gold_words = [list(item.word_labels) for item in items]
        pred_words = [[names[int(p["labels"][t])] for t in item.word_tokens] for item, p in zip(items, predictions)]
        if task == "ner":
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
    gold_heads, gold_rels, pred_heads, pred_rels, punct = [], [], [], [], []
    for item, p in zip(items, predictions):
        scored = [w for w, head in enumerate(item.heads) if head != -1 and head != IGNORE]
        gold_heads.append([item.heads[w] for w in scored])
        gold_rels.append([item.word_labels[w] for w in scored])
        pred_heads.append([int(p["heads"][w]) for w in scored])
        pred_rels.append([names[int(p["rels"][w])] for w in scored])
        punct.append([item.punct[w] for w in scored])
    return attachment_scores(gold_heads, gold_rels, pred_heads, pred_rels, punct)
