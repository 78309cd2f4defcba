"""Label vocabularies, numeric targets and padded, length-bucketed batches for TOA training.

Targets travel as numpy arrays (picklable into worker processes, :func:`olacore.training.by_value`);
``IGNORE = -100`` marks what the loss and the scores skip (a token without a word, a label
the vocabulary does not know, a head beyond the length cut).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

from olacore.toa.tasks import TaskItem

__all__ = ["IGNORE", "LabelVocab", "encode_items", "collate", "length_batches"]

IGNORE = -100


@dataclass(frozen=True)
class LabelVocab:
    """The label classes of a trained adapter, in order (index = class id).

    Built from the *training* labels (:meth:`from_labels`); labels met later that it does not
    know (a test label never seen in training) are counted by :func:`encode_items` and
    scored as errors, never a crash.
    """

    labels: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.labels:
            raise ValueError("a label vocabulary needs at least one label (was the training data empty?)")
        if len(set(self.labels)) != len(self.labels):
            raise ValueError("labels repeated in the vocabulary")

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

    Args:
        items: task items (:mod:`olacore.toa.tasks`).
        kind: ``"tokens"``, ``"relation"`` or ``"dependency"``.
        vocab: the label classes.

    Returns:
        ``(targets, unknown)``: per item a dict of int64 arrays, ``tokens``: ``labels`` (T,);
        ``relation``: ``spans`` (4,), ``label`` (1,); ``dependency``: ``words`` (W,) first
        sub-tokens, ``heads`` (W,) head tokens, ``rels`` (W,). Unknown labels and heads beyond
        the cut are :data:`IGNORE`.
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
        elif kind == "dependency":
            rels = np.array([vocab.index(label) for label in item.word_labels], dtype=np.int64)
            unknown += int((rels == IGNORE).sum())
            heads = np.array([h if h >= 0 else IGNORE for h in item.heads], dtype=np.int64)
            targets.append({"words": np.array(item.word_tokens, dtype=np.int64), "heads": heads, "rels": rels})
        else:
            raise ValueError(f"unknown kind {kind!r}")
    return targets, unknown


def collate(maps: Sequence[torch.Tensor], targets: Sequence[dict[str, np.ndarray]] | None, kind: str
            ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Pad a batch: maps into the top-left corner of ``(B, C, T, T)``, targets with :data:`IGNORE`.

    Returns:
        ``(maps, lengths, batch_targets)``; ``batch_targets`` for ``tokens``: ``labels`` (B, T);
        ``relation``: ``spans`` (B, 4), ``label`` (B,); ``dependency``: ``words``, ``heads``,
        ``rels`` (B, W) (``words`` padded with 0, ``heads`` / ``rels`` with IGNORE).
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

    Items are shuffled, cut into pools of ``pool * batch_size``, sorted by length within each
    pool and cut into batches; the batches are shuffled again. Without a generator: sorted
    by length, in order (evaluation).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1; got {batch_size}")
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
