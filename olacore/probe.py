"""A CPU-sized dependency probe over word-level OLA maps (the book's first syntax experiment).

Paper section 4.3 trains a biaffine parser whose only input is the OLA of a frozen language
model. This probe is the small stand-in the syntax chapter started with: for dependent ``i``
and candidate head ``j``, word features are the map's row ``i`` and column ``i`` (every channel,
truncated / zero-padded to ``max_len``), pair features are ``M[i, j]`` and ``M[j, i]`` raw and
relative to their row's and column's largest entry; each word encoding is mixed with its
neighbours by a width-5 convolution. A biaffine arc scorer (Dozat & Manning, 2017) and a label
classifier, loss CE(arc) + CE(label); a separate UPOS classifier reads the same features.
Heads are decoded greedily. Model selection is by dev LAS after each epoch; test is scored
once. Trained probes are kept in the store (:func:`olacore.training.run_cached`).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from olacore.maps import Maps
from olacore.settings import resolve_device
from olacore.sinks import clean_sinks
from olacore.store import TensorStore
from olacore.timing import progress as progress_bar
from olacore.training import run_cached
from olacore.ud import UD_RELATIONS, UPOS_TAGS, UDSentence, universal_relation, _REL_INDEX, _UPOS_INDEX

__all__ = [
    "attachment_scores", "ProbeConfig", "BiaffineProbe", "ProbeRun", "Prediction", "train_probe", "predict",
    "evaluate", "positional_maps", "ProbeJob", "probe_rows",
]

def attachment_scores(
    gold_heads: Sequence[Sequence[int]],
    gold_labels: Sequence[Sequence[str]],
    pred_heads: Sequence[Sequence[int]],
    pred_labels: Sequence[Sequence[str]],
    upos: Sequence[Sequence[str]],
    pred_upos: Sequence[Sequence[str]] | None = None,
) -> dict[str, float]:
    """UAS / LAS (with and without punctuation) and UPOS accuracy, in percent, over all words.

    Args:
        gold_heads, pred_heads: per sentence, per word head (1-based, 0 = root).
        gold_labels, pred_labels: per sentence, per word relation (compared as given; pass
            universal relations for the CoNLL 2018 convention).
        upos: gold UPOS per word; ``PUNCT`` words are left out of the ``*_nopunct`` scores.
        pred_upos: predicted UPOS, for ``upos_acc`` (omitted when ``None``).

    Returns:
        dict with ``uas``, ``las``, ``uas_nopunct``, ``las_nopunct`` (and ``upos_acc``), each
        in ``[0, 100]``, plus ``words`` and ``words_nopunct`` counts.

    Raises:
        ValueError: sentence or word counts disagree, or there is no word.
    """
    if not (len(gold_heads) == len(gold_labels) == len(pred_heads) == len(pred_labels) == len(upos)):
        raise ValueError("gold and predicted lists must have one entry per sentence")
    head_ok, label_ok, keep, upos_ok = [], [], [], []
    for s, (gh, gl, ph, pl, up) in enumerate(zip(gold_heads, gold_labels, pred_heads, pred_labels, upos)):
        if not (len(gh) == len(gl) == len(ph) == len(pl) == len(up)):
            raise ValueError(f"sentence {s}: word counts disagree")
        for w in range(len(gh)):
            head_ok.append(gh[w] == ph[w])
            label_ok.append(gh[w] == ph[w] and gl[w] == pl[w])
            keep.append(up[w] != "PUNCT")
            if pred_upos is not None:
                upos_ok.append(up[w] == pred_upos[s][w])
    if not head_ok:
        raise ValueError("no word to score")
    head_ok, label_ok, keep = np.array(head_ok), np.array(label_ok), np.array(keep)
    scores = {
        "uas": 100.0 * head_ok.mean(),
        "las": 100.0 * label_ok.mean(),
        "uas_nopunct": 100.0 * head_ok[keep].mean() if keep.any() else float("nan"),
        "las_nopunct": 100.0 * label_ok[keep].mean() if keep.any() else float("nan"),
        "words": int(len(head_ok)),
        "words_nopunct": int(keep.sum()),
    }
    if pred_upos is not None:
        scores["upos_acc"] = 100.0 * float(np.mean(upos_ok))
    return scores


@dataclass
class ProbeConfig:
    """Sizes and training settings of :class:`BiaffineProbe` (small enough for a CPU).

    Attributes:
        max_len: entries of a word's row and column kept as features (``L``; longer
            sentences are truncated there, shorter ones zero-padded). Pair features are
            never truncated.
        hidden: width of the word encoder MLP.
        arc_dim, label_dim: biaffine projection sizes.
        pair_hidden: width of the pair-feature MLP.
        dropout: dropout on word representations.
        epochs, batch_size, lr, weight_decay: Adam training; the epoch with the best dev LAS is kept.
        clean_sinks: add the sink-cleaned copy of every channel (:func:`olacore.sinks.clean_sinks`
            at word level, statistics over the causal part of a causal map as the official TOA
            path does (``stats="causal"``; ``OLAModel.forward`` in the official
            ``models/ola_model.py``), and as that input adds cleaned maps); still OLA only.
        context: mix each word encoding with its two neighbours on either side (a residual
            width-5 convolution) before scoring. The official adapter mixes the map across
            positions with an axial transformer (``AxialTransformerDPAdapter`` in the official
            ``models/adapters.py``); this is the cheap stand-in. The positional
            baseline gets the same layer.
        relative_position: add one-hot relative offsets ``j - i`` (clipped to ``+-max_len/2``)
            to the pair features. Only for the positional baseline.
        seed: seeds torch, numpy and the batch order.
        device: where to train (``None``: CUDA when available). Worker processes train on
            one thread each (:func:`olacore.training.run_cached`).
    """

    max_len: int = 64
    hidden: int = 256
    arc_dim: int = 128
    label_dim: int = 64
    pair_hidden: int = 32
    dropout: float = 0.2
    epochs: int = 15
    batch_size: int = 16
    lr: float = 3e-3
    weight_decay: float = 0.0
    relative_position: bool = False
    clean_sinks: bool = True
    context: bool = True
    seed: int = 0
    device: str | None = None


def _feature(values: torch.Tensor) -> torch.Tensor:
    """Map attention probabilities (in [0, 1], typically ~1/W) to well-scaled inputs."""
    return torch.log1p(100.0 * values.clamp_min(0.0))


class BiaffineProbe(nn.Module):
    """Biaffine arc scorer + label classifier + UPOS classifier over OLA-only features.

    Input: padded maps ``(B, C', W, W)`` float32 and a word mask ``(B, W)`` bool, where
    ``C' = 2C`` (maps, then their sink-cleaned copies) when ``config.clean_sinks`` and ``C``
    otherwise; :func:`train_probe` and :func:`predict` build these batches.

    - word features ``x_i = [row_i, col_i]`` of every channel, truncated/padded to
      ``max_len``: ``(B, W, 2 C L)``;
    - pair features ``[M[i, j], M[j, i]]`` of every channel (plus relative offset in the
      positional baseline): ``(B, W, W, P)``;
    - arc scores ``s[b, i, j]`` for head ``j`` in ``0..W`` (0 = a learned ROOT):
      ``dep_i^T U head_j + u^T head_j + mlp(pair_ij)``, shape ``(B, W, W + 1)``;
    - label scores for a (dependent, head) pair ``(B, W, R)``; UPOS scores ``(B, W, 17)``.
    """

    def __init__(self, channels: int, config: ProbeConfig, num_labels: int = len(UD_RELATIONS), num_upos: int = len(UPOS_TAGS)):
        super().__init__()
        self.config = config
        self.channels = channels
        L = config.max_len
        channels = channels * (2 if config.clean_sinks else 1)
        in_dim = 2 * channels * L
        self.rel_bins = (L // 2) * 2 + 1 if config.relative_position else 0
        pair_dim = 6 * channels + 1 + self.rel_bins  # +1: "is ROOT" indicator
        self.encoder = nn.Sequential(nn.Linear(in_dim, config.hidden), nn.GELU(), nn.Dropout(config.dropout))
        self.context = nn.Conv1d(config.hidden, config.hidden, 5, padding=2) if config.context else None
        self.upos_encoder = nn.Sequential(
            nn.Linear(in_dim, config.hidden), nn.GELU(), nn.Dropout(config.dropout), nn.Linear(config.hidden, num_upos)
        )
        self.root = nn.Parameter(torch.zeros(config.hidden))
        self.arc_dep = nn.Linear(config.hidden, config.arc_dim)
        self.arc_head = nn.Linear(config.hidden, config.arc_dim)
        self.arc_u = nn.Parameter(torch.zeros(config.arc_dim, config.arc_dim))
        self.arc_bias = nn.Linear(config.arc_dim, 1, bias=False)
        self.pair = nn.Sequential(nn.Linear(pair_dim, config.pair_hidden), nn.GELU(), nn.Linear(config.pair_hidden, 1))
        self.lab_dep = nn.Linear(config.hidden, config.label_dim)
        self.lab_head = nn.Linear(config.hidden, config.label_dim)
        self.lab_u = nn.Parameter(torch.zeros(config.label_dim, num_labels * config.label_dim))
        self.lab_linear = nn.Linear(2 * config.label_dim + pair_dim, num_labels)

    def features(self, maps: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Word features ``(B, W, 2CL)`` and pair features ``(B, W, W+1, P)`` (head 0 = ROOT)."""
        B, C, W, _ = maps.shape
        L = self.config.max_len
        f = _feature(maps)
        rows = f.permute(0, 2, 1, 3)  # (B, W, C, W): row i of every channel
        cols = f.permute(0, 3, 1, 2)  # (B, W, C, W): column i of every channel
        if W >= L:
            rows, cols = rows[..., :L], cols[..., :L]
        else:
            rows, cols = F.pad(rows, (0, L - W)), F.pad(cols, (0, L - W))
        words = torch.cat([rows, cols], -1).reshape(B, W, 2 * C * L)
        # relative strength: M_ij against the largest entry of row i and of column j
        row_rel = maps / maps.amax(-1, keepdim=True).clamp_min(1e-9)
        col_rel = maps / maps.amax(-2, keepdim=True).clamp_min(1e-9)
        pair = torch.cat([
            f.permute(0, 2, 3, 1), f.permute(0, 3, 2, 1),  # [M_ij, M_ji]
            row_rel.permute(0, 2, 3, 1), row_rel.permute(0, 3, 2, 1),
            col_rel.permute(0, 2, 3, 1), col_rel.permute(0, 3, 2, 1),
        ], -1)  # (B, W, W, 6C)
        pair = torch.cat([pair.new_zeros(B, W, 1, pair.shape[-1]), pair], 2)  # head 0 = ROOT
        is_root = pair.new_zeros(B, W, W + 1, 1)
        is_root[:, :, 0] = 1.0
        parts = [pair, is_root]
        if self.rel_bins:
            half = self.rel_bins // 2
            pos = torch.arange(W, device=maps.device)
            offset = (pos[None, :] - pos[:, None]).clamp(-half, half) + half  # (W, W): j - i
            onehot = F.one_hot(offset, self.rel_bins).to(maps.dtype)
            onehot = torch.cat([onehot.new_zeros(W, 1, self.rel_bins), onehot], 1)
            parts.append(onehot[None].expand(B, -1, -1, -1))
        return words * mask[..., None], torch.cat(parts, -1)

    def forward(self, maps: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """Scores: ``arc`` ``(B, W, W+1)`` (masked with -inf), plus tensors for :meth:`label_scores`."""
        words, pair = self.features(maps, mask)
        B, W = mask.shape
        h = self.encoder(words)  # (B, W, H)
        if self.context is not None:  # mix each word with its +-2 neighbours (padding is zero)
            h = h * mask[..., None]
            h = h + F.gelu(self.context(h.transpose(1, 2))).transpose(1, 2)
        heads_h = torch.cat([self.root.expand(B, 1, -1), h], 1)  # (B, W+1, H)
        dep = self.arc_dep(h)
        head = self.arc_head(heads_h)
        arc = torch.einsum("bid,de,bje->bij", dep, self.arc_u, head) + self.arc_bias(head).transpose(1, 2)
        arc = arc + self.pair(pair).squeeze(-1)
        valid = torch.cat([mask.new_ones(B, 1), mask], 1)[:, None, :].expand(B, W, W + 1).clone()
        valid[:, torch.arange(W), torch.arange(W) + 1] = False  # no self-loop
        arc = arc.masked_fill(~valid, float("-inf"))
        return {
            "arc": arc,
            "upos": self.upos_encoder(words),
            "lab_dep": self.lab_dep(h),
            "lab_head": self.lab_head(heads_h),
            "pair": pair,
        }

    def label_scores(self, out: dict[str, torch.Tensor], heads: torch.Tensor) -> torch.Tensor:
        """Relation scores ``(B, W, R)`` for the given heads ``(B, W)`` (0 = ROOT)."""
        dep = out["lab_dep"]
        index = heads.clamp_min(0)
        head = out["lab_head"].gather(1, index[..., None].expand(-1, -1, dep.shape[-1]))
        pair = out["pair"].gather(2, index[..., None, None].expand(-1, -1, 1, out["pair"].shape[-1])).squeeze(2)
        B, W, D = dep.shape
        bilinear = ((dep @ self.lab_u).view(B, W, -1, D) * head[:, :, None, :]).sum(-1)  # dep^T U_r head
        return bilinear + self.lab_linear(torch.cat([dep, head, pair], -1))


@dataclass
class _Batch:
    maps: torch.Tensor  # (B, C, W, W)
    mask: torch.Tensor  # (B, W) bool
    heads: torch.Tensor  # (B, W) long, -1 at padding
    labels: torch.Tensor  # (B, W) long, -1 at padding
    upos: torch.Tensor  # (B, W) long, -1 at padding
    index: list[int]  # sentence indices

    def to(self, device) -> "_Batch":
        return _Batch(self.maps.to(device), self.mask.to(device), self.heads.to(device), self.labels.to(device), self.upos.to(device), self.index)


def _batches(words: Maps, sentences: Sequence[UDSentence], batch_size: int, clean: bool = False) -> list[_Batch]:
    """Length-bucketed padded batches (sentences sorted by length, cut into ``batch_size``)."""
    maps = words.tensors
    if len(maps) != len(sentences):
        raise ValueError(f"{len(maps)} maps for {len(sentences)} sentences")
    channels = {m.shape[0] for m in maps}
    if len(channels) != 1:
        raise ValueError(f"all maps must have the same number of channels; got {sorted(channels)}")
    for m, s in zip(maps, sentences):
        if m.ndim != 3 or m.shape[1:] != (len(s), len(s)):
            raise ValueError(f"map of sentence {s.sent_id} has shape {tuple(m.shape)}; expected (C, {len(s)}, {len(s)})")
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    out = []
    C = channels.pop() * (2 if clean else 1)
    for start in range(0, len(order), batch_size):
        index = order[start : start + batch_size]
        W = max(len(sentences[i]) for i in index)
        B = len(index)
        batch = _Batch(torch.zeros(B, C, W, W), torch.zeros(B, W, dtype=torch.bool),
                       torch.full((B, W), -1, dtype=torch.long), torch.full((B, W), -1, dtype=torch.long),
                       torch.full((B, W), -1, dtype=torch.long), index)
        for b, i in enumerate(index):
            s, n = sentences[i], len(sentences[i])
            batch.maps[b, :, :n, :n] = torch.cat([maps[i], clean_sinks(maps[i], causal=words.causal, stats="causal")]) if clean else maps[i]
            batch.mask[b, :n] = True
            batch.heads[b, :n] = torch.tensor(s.heads)
            batch.labels[b, :n] = torch.tensor([_REL_INDEX[universal_relation(r)] for r in s.deprels])
            batch.upos[b, :n] = torch.tensor([_UPOS_INDEX.get(u, _UPOS_INDEX["X"]) for u in s.upos])
        out.append(batch)
    return out


def _loss(probe: BiaffineProbe, batch: _Batch) -> torch.Tensor:
    out = probe(batch.maps, batch.mask)
    arc = F.cross_entropy(out["arc"][batch.mask], batch.heads[batch.mask])
    labels = probe.label_scores(out, batch.heads)  # gold heads while training
    lab = F.cross_entropy(labels[batch.mask], batch.labels[batch.mask])
    upos = F.cross_entropy(out["upos"][batch.mask], batch.upos[batch.mask])
    return arc + lab + upos  # upos has its own parameters: it does not steer the parser


@dataclass
class Prediction:
    """Predicted heads (1-based, 0 = root), universal relations and UPOS of one sentence."""

    heads: list[int]
    deprels: list[str]
    upos: list[str]
    arc_probs: np.ndarray  # (W, W + 1): softmax over candidate heads, column 0 = ROOT


@torch.no_grad()
def predict(probe: BiaffineProbe, maps: Maps, sentences: Sequence[UDSentence], batch_size: int = 64) -> list[Prediction]:
    """Greedy decoding: each word's highest-scoring head, then the best relation for that arc.

    Args:
        probe: a trained :class:`BiaffineProbe`.
        maps: word-level :class:`olacore.maps.Maps` of the sentences, same channels as in training.
        sentences: the sentences (gold fields are not used).

    Returns:
        one :class:`Prediction` per sentence, in the input order.
    """
    probe.eval()
    device = next(probe.parameters()).device
    preds: list[Prediction | None] = [None] * len(sentences)
    for batch in _batches(maps, sentences, batch_size, probe.config.clean_sinks):
        batch = batch.to(device)
        out = probe(batch.maps, batch.mask)
        heads = out["arc"].argmax(-1)
        labels = probe.label_scores(out, heads).argmax(-1)
        upos = out["upos"].argmax(-1)
        probs = out["arc"].softmax(-1)
        for b, i in enumerate(batch.index):
            n = len(sentences[i])
            preds[i] = Prediction(
                heads=heads[b, :n].tolist(),
                deprels=[UD_RELATIONS[k] for k in labels[b, :n].tolist()],
                upos=[UPOS_TAGS[k] for k in upos[b, :n].tolist()],
                arc_probs=probs[b, :n, : n + 1].cpu().numpy(),
            )
    return preds  # type: ignore[return-value]


def evaluate(probe: BiaffineProbe, maps: Maps, sentences: Sequence[UDSentence]) -> dict[str, float]:
    """:func:`attachment_scores` of the probe's predictions on ``sentences`` (universal relations)."""
    preds = predict(probe, maps, sentences)
    return attachment_scores(
        [s.heads for s in sentences],
        [[universal_relation(r) for r in s.deprels] for s in sentences],
        [p.heads for p in preds],
        [p.deprels for p in preds],
        [s.upos for s in sentences],
        [p.upos for p in preds],
    )


@dataclass
class ProbeRun:
    """A trained probe with its training record.

    Attributes:
        probe: weights of the epoch with the best dev LAS (in eval mode, on the training device).
        best_epoch: that epoch (1-based).
        dev: dev scores of that epoch (:func:`attachment_scores`).
        history: per epoch ``{"epoch", "loss", "dev_uas", "dev_las"}``.
        config: the :class:`ProbeConfig` used.
        seconds: training wall-clock time.
    """

    probe: BiaffineProbe
    best_epoch: int
    dev: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    config: ProbeConfig | None = None
    seconds: float = 0.0

    def test(self, maps: Maps, sentences: Sequence[UDSentence]) -> dict[str, float]:
        """Score held-out sentences once with the chosen weights."""
        return evaluate(self.probe, maps, sentences)


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train_probe(
    train_maps: Maps,
    train_sentences: Sequence[UDSentence],
    dev_maps: Maps,
    dev_sentences: Sequence[UDSentence],
    config: ProbeConfig | None = None,
    progress: bool = False,
) -> ProbeRun:
    """Train a :class:`BiaffineProbe` on train, keep the epoch with the best dev LAS (paper section 4.3).

    Args:
        train_maps, dev_maps: word-level :class:`olacore.maps.Maps` of the sentences (same channels).
        train_sentences, dev_sentences: the gold sentences.
        config: sizes and training settings (default :class:`ProbeConfig`).
        progress: show a tqdm bar over epochs.

    Returns:
        a :class:`ProbeRun`; score test with :meth:`ProbeRun.test` exactly once.

    Raises:
        ValueError: empty data, or maps that do not match their sentences.
    """

    config = config or ProbeConfig()
    if not train_sentences or not dev_sentences:
        raise ValueError("train and dev must hold at least one sentence each")
    start = time.perf_counter()
    device = resolve_device(config.device)
    _seed_everything(config.seed)
    probe = BiaffineProbe(train_maps.tensors[0].shape[0], config).to(device)
    optimiser = torch.optim.Adam(probe.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    batches = _batches(train_maps, train_sentences, config.batch_size, config.clean_sinks)
    rng = random.Random(config.seed)
    best_state, best_epoch, best_dev, best_key = None, 0, None, -math.inf
    history = []
    for epoch in progress_bar(range(1, config.epochs + 1), enabled=progress, desc="probe epochs"):
        probe.train()
        rng.shuffle(batches)
        total = 0.0
        for batch in batches:
            batch = batch.to(device)
            loss = _loss(probe, batch)
            optimiser.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(probe.parameters(), 5.0)
            optimiser.step()
            total += float(loss.detach())
        dev = evaluate(probe, dev_maps, dev_sentences)
        history.append({"epoch": epoch, "loss": total / len(batches), "dev_uas": dev["uas"], "dev_las": dev["las"]})
        if dev["las"] > best_key:
            best_key, best_epoch, best_dev = dev["las"], epoch, dev
            best_state = copy.deepcopy(probe.state_dict())
    probe.load_state_dict(best_state)
    probe.eval()
    return ProbeRun(probe=probe, best_epoch=best_epoch, dev=best_dev, history=history, config=config,
                    seconds=time.perf_counter() - start)


def positional_maps(sentences: Sequence[UDSentence]) -> Maps:
    """The positional baseline's "maps": the identity (order-0 OLA), ``(1, W, W)`` per sentence.

    Its rows and columns are one-hot positions, so with ``ProbeConfig(relative_position=True)``
    the probe sees word positions, sentence length and relative offsets and nothing else.
    """
    return Maps(tensors=tuple(torch.eye(len(s), dtype=torch.float32)[None] for s in sentences), channels=("order0",),
                causal=False, model="(positions only)", align="words", sinks="raw", size=None,
                texts=tuple(s.text for s in sentences))


# Bump when train_probe gives other results for the same inputs: every cached probe is then ignored.
# 3: the sink rule became the official one (models/ola_utils.py: sample std, every tie with the row maximum flagged).
PROBE_VERSION = 3


def _digest_sentences(sentences: Sequence[UDSentence]) -> str:
    payload = [dataclasses.astuple(s) for s in sentences]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass
class ProbeJob:
    """One probe to train on ``train`` and select on ``dev`` (a :class:`olacore.training.TrainingJob`).

    Attributes:
        maps: word-level :class:`olacore.maps.Maps` per split (``train``, ``dev``, ``test``, and
            optionally ``test_long``), all with the same channels.
        splits: the gold sentences per split (:func:`olacore.ud.ewt_splits`).
        config: probe settings.
        channels: channel names to keep (``None``: all of them).
        labels: extra columns of the row (model, pooling, input, ...).
    """

    maps: dict[str, Maps]
    splits: dict[str, Sequence[UDSentence]]
    config: ProbeConfig
    channels: Sequence[str] | None = None
    labels: dict[str, Any] = field(default_factory=dict)

    def inputs(self, split: str) -> Maps:
        """The maps of one split, restricted to the job's channels."""
        maps = self.maps[split]
        return maps if self.channels is None else maps.select(*self.channels)

    def key(self) -> str:
        settings = {k: v for k, v in dataclasses.asdict(self.config).items() if k != "device"}
        return TensorStore.key(
            kind="syntax-probe", probe_version=PROBE_VERSION, config=settings,
            device=resolve_device(self.config.device).type,
            train=[self.inputs("train").digest(), _digest_sentences(self.splits["train"])],
            dev=[self.inputs("dev").digest(), _digest_sentences(self.splits["dev"])],
        )

    def train(self):
        run = train_probe(self.inputs("train"), self.splits["train"], self.inputs("dev"), self.splits["dev"], self.config)
        record = {"best_epoch": run.best_epoch, "dev": run.dev, "history": run.history, "seconds": run.seconds}
        return run.probe.state_dict(), record

    def without_unused_splits(self) -> "ProbeJob":
        """A copy carrying only what training needs (lighter to send to a worker process)."""
        keep = ("train", "dev")
        return dataclasses.replace(self, maps={k: self.maps[k] for k in keep}, splits={k: self.splits[k] for k in keep})


def probe_rows(jobs: Sequence[ProbeJob], *, workers: int = 1, progress: bool = True,
               store: TensorStore | None = None) -> list[tuple[dict[str, Any], ProbeRun]]:
    """Train (or read back) every probe, then score ``test`` (and ``test_long``) once each: one row per job.

    Args:
        jobs: what to train and score.
        workers: processes training at once (:func:`olacore.settings.cpu_workers`).
        progress: a tqdm bar over the probes being trained.
        store: where probes are kept (default: ``$OLACORE_CACHE/tensors``).

    Returns:
        ``(row, run)`` per job, in order. The row holds the job's labels, ``seed``, ``epoch``
        (chosen on dev), ``dev_uas``, ``dev_las``, ``uas``, ``las``, ``uas_nopunct``,
        ``las_nopunct``, ``upos_acc`` (test), ``long_uas``, ``long_las`` (test sentences > 30
        words) and ``seconds`` (training time of the run that trained it).

    Raises:
        ValueError: ``workers < 1``, or as :func:`train_probe`.
    """
    stored = run_cached([job.without_unused_splits() for job in jobs], workers=workers, store=store,
                        progress=progress, desc="probes")
    out = []
    for job, (weights, record) in zip(jobs, stored):
        probe = BiaffineProbe(job.inputs("train").tensors[0].shape[0], job.config)
        probe.load_state_dict(weights)
        run = ProbeRun(probe=probe.to(resolve_device(job.config.device)).eval(), config=job.config, **record)
        test = run.test(job.inputs("test"), job.splits["test"])
        row = dict(job.labels)
        row.update(seed=job.config.seed, epoch=run.best_epoch, dev_uas=run.dev["uas"], dev_las=run.dev["las"],
                   uas=test["uas"], las=test["las"], uas_nopunct=test["uas_nopunct"],
                   las_nopunct=test["las_nopunct"], upos_acc=test["upos_acc"])
        if job.splits.get("test_long"):
            long = run.test(job.inputs("test_long"), job.splits["test_long"])
            row.update(long_uas=long["uas"], long_las=long["las"])
        row["seconds"] = run.seconds
        out.append((row, run))
    return out
