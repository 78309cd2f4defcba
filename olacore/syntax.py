"""Syntax in OLA: dependency and part-of-speech probes that read nothing but attention maps.

Paper section 4.3 (Liang et al., NeurIPS 2025) trains a biaffine parser whose only input is
the Order-Level Attention (OLA) of a frozen language model and reports unlabelled and labelled
attachment scores (UAS/LAS) on UD English EWT. This module holds that experiment:

1. **Maps per word** (:func:`ola_word_maps`, :func:`layer_word_maps`): the OLA orders
   (and rollout) of each sentence, brought to words in one of two ways, ``pooling="word"``
   (our word pooling, :func:`olacore.maps.pool_to_words`: rows stay stochastic, special
   tokens dropped) or ``pooling="first"`` (the paper's choice: the rows and columns of each
   word's first sub-token, :func:`first_subtoken_maps`, taken from the full token map).
   The result is one ``(C, W, W)`` float32 tensor per sentence, ``C`` channels (orders).
2. **Probe** (:class:`BiaffineProbe`, :func:`train_probe`): for dependent ``i`` and candidate
   head ``j``, word features are the map's row ``i`` and column ``i`` (every channel,
   truncated / zero-padded to ``max_len`` entries) and pair features are ``M[i, j]`` and
   ``M[j, i]`` of every channel, raw and relative to the largest entry of their row and
   column; by default the sink-cleaned maps are added as channels and each word encoding is
   mixed with its neighbours by a width-5 convolution (a CPU-sized stand-in for the official
   axial-transformer adapter). A biaffine arc scorer (Dozat & Manning, 2017) plus a label
   classifier on the (dependent, head) pair, loss CE(arc) + CE(label), as in the official
   parser; a separate UPOS classifier reads the same word features (disjoint parameters, so
   it does not change the parser). Heads are decoded greedily (argmax per word, no tree
   constraint). The probe sees no word form and no position beyond what the map itself
   carries; the positional baseline (:func:`positional_maps`, ``relative_position=True``)
   is the same probe given only positions.
3. **Scores** (:func:`attachment_scores`): UAS and LAS with punctuation (as the paper) and
   without (words whose gold UPOS is ``PUNCT`` left out, as parsing papers do), and UPOS
   accuracy. Labels are universal relations (subtypes stripped, the CoNLL 2018 convention).

Model selection is by dev LAS after each epoch; test is scored once with the chosen weights.
A trained probe is kept on disk (:func:`cached_train_probe`, keyed by the bytes of its maps,
the gold sentences, the whole :class:`ProbeConfig` and the device type), so a re-executed
chapter reads its probes back instead of training them again.
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
from olacore.store import TensorStore, tensor_digest
from olacore.data import UDSentence
from olacore.maps import clean_sinks, pool_to_words, word_assignment
from olacore.timing import progress as progress_bar
from olacore.training import by_value, run_in_processes

__all__ = [
    "UPOS_TAGS",
    "UD_RELATIONS",
    "CHANNELS",
    "universal_relation",
    "first_token_indices",
    "first_subtoken_maps",
    "ola_word_maps",
    "maps_from_results",
    "layer_word_maps",
    "positional_maps",
    "select_channels",
    "attachment_scores",
    "ProbeConfig",
    "BiaffineProbe",
    "ProbeRun",
    "train_probe",
    "cached_train_probe",
    "predict",
    "evaluate",
    "long_sentences",
    "ewt_splits",
    "model_maps",
    "probe_row",
    "ProbeJob",
    "probe_rows",
    "draw_arcs",
]

#: The 17 universal part-of-speech tags (UD v2).
UPOS_TAGS: tuple[str, ...] = (
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM",
    "PART", "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X",
)
#: The 37 universal dependency relations (UD v2); LAS compares these (subtypes stripped).
UD_RELATIONS: tuple[str, ...] = (
    "acl", "advcl", "advmod", "amod", "appos", "aux", "case", "cc", "ccomp", "clf",
    "compound", "conj", "cop", "csubj", "dep", "det", "discourse", "dislocated", "expl",
    "fixed", "flat", "goeswith", "iobj", "list", "mark", "nmod", "nsubj", "nummod", "obj",
    "obl", "orphan", "parataxis", "punct", "reparandum", "root", "vocative", "xcomp",
)
#: Channel names of :func:`ola_word_maps` with ``max_order=3``: orders 1..3, then rollout.
CHANNELS: tuple[str, ...] = ("order1", "order2", "order3", "rollout")

_UPOS_INDEX = {tag: i for i, tag in enumerate(UPOS_TAGS)}
_REL_INDEX = {rel: i for i, rel in enumerate(UD_RELATIONS)}


def universal_relation(deprel: str) -> str:
    """The universal part of a UD relation: ``"nmod:poss" -> "nmod"``; unknown ones -> ``"dep"``."""
    base = deprel.split(":", 1)[0]
    return base if base in _REL_INDEX else "dep"


# ---------------------------------------------------------------------------------------------
# Maps per word
# ---------------------------------------------------------------------------------------------


def first_token_indices(
    token_offsets: Sequence[tuple[int, int]], word_spans: Sequence[tuple[int, int]]
) -> list[int]:
    """Index of each word's first sub-token: the first token overlapping the word's span.

    Args:
        token_offsets: ``T`` character spans of the tokens, ``(0, 0)`` for special tokens.
        word_spans: ``W`` character spans of the words.

    Returns:
        ``W`` token indices (words of one multi-word token share theirs).

    Raises:
        ValueError: a word overlaps no token.
    """
    share = word_assignment(token_offsets, word_spans)  # (W, T), raises on orphan words
    return [int(torch.nonzero(row > 0)[0]) for row in share]


def first_subtoken_maps(
    maps: torch.Tensor,
    token_offsets: Sequence[tuple[int, int]],
    word_spans: Sequence[tuple[int, int]],
) -> torch.Tensor:
    """Word maps as the official parser sees them: rows and columns of each word's first sub-token.

    ``out[..., i, j] = maps[..., t_i, t_j]`` with ``t_i`` the first token of word ``i``
    (:func:`first_token_indices`). Unlike :func:`olacore.maps.pool_to_words` nothing is
    renormalised: attention to special tokens and to later sub-tokens is simply not seen,
    as in the paper.

    Args:
        maps: ``(..., T, T)`` token maps.
        token_offsets: ``T`` token character spans.
        word_spans: ``W`` word character spans.

    Returns:
        ``(..., W, W)`` tensor, same dtype and device.

    Raises:
        ValueError: ``maps`` and ``token_offsets`` disagree on ``T``, or a word has no token.
    """
    if maps.shape[-1] != len(token_offsets) or maps.shape[-2] != len(token_offsets):
        raise ValueError(f"maps are {tuple(maps.shape[-2:])} but there are {len(token_offsets)} token offsets")
    index = torch.tensor(first_token_indices(token_offsets, word_spans), device=maps.device)
    return maps.index_select(-2, index).index_select(-1, index)


def _to_words(maps: torch.Tensor, offsets, spans, pooling: str) -> torch.Tensor:
    if pooling == "word":
        return pool_to_words(maps.double(), offsets, spans).float()
    if pooling == "first":
        return first_subtoken_maps(maps, offsets, spans).float()
    raise ValueError(f"pooling must be 'word' or 'first'; got {pooling!r}")


def maps_from_results(results: Sequence[Any], sentences: Sequence[UDSentence], pooling: str = "word") -> list[torch.Tensor]:
    """Word-level OLA maps from :class:`olacore.cache.OLAResult` items, one per sentence.

    Args:
        results: OLA results for the sentence texts, in order (``orders`` ``(K+1, T, T)``,
            ``rollout`` ``(T, T)``, ``offsets``).
        sentences: the aligned UD sentences (their ``spans`` say where the words are).
        pooling: ``"word"`` (pooled, rows stochastic) or ``"first"`` (first sub-token).

    Returns:
        ``(K + 1, W, W)`` float32 CPU tensors: channels orders ``1..K`` then rollout
        (order 0, the identity, is not kept; see :data:`CHANNELS`).

    Raises:
        ValueError: lengths differ, a text does not match, or ``pooling`` is unknown.
    """
    if len(results) != len(sentences):
        raise ValueError(f"{len(results)} OLA results for {len(sentences)} sentences")
    out = []
    for result, sentence in zip(results, sentences):
        if result.text != sentence.text:
            raise ValueError(f"OLA result is for another text than sentence {sentence.sent_id}")
        stack = torch.cat([torch.as_tensor(result.orders)[1:], torch.as_tensor(result.rollout)[None]], 0)
        out.append(_to_words(stack.float(), result.offsets, sentence.spans, pooling).cpu())
    return out


def ola_word_maps(
    model: Any,
    sentences: Sequence[UDSentence],
    *,
    max_order: int = 3,
    pooling: str = "word",
    batch_size: int = 8,
    device: str | torch.device | None = None,
) -> list[torch.Tensor]:
    """OLA orders ``1..max_order`` and rollout of each sentence, as word maps (paper section 4.3).

    Runs (or reads from the disk cache) :func:`olacore.cache.cached_ola` on the sentences'
    own texts, then brings each map to the UD words (:func:`maps_from_results`).

    Args:
        model: zoo name, Hugging Face id / folder, or a :class:`olacore.models.LoadedModel`
            (a random-init control, say).
        sentences: aligned UD sentences.
        max_order: highest OLA order ``K``.
        pooling: ``"word"`` or ``"first"``.
        batch_size, device: passed to :func:`olacore.cache.cached_ola`.

    Returns:
        ``(K + 1, W, W)`` float32 CPU tensors, channels ``order1..orderK, rollout``.
    """
    from olacore.cache import cached_ola

    results = cached_ola(model, [s.text for s in sentences], max_order, batch_size=batch_size, device=device, progress=False)
    return maps_from_results(results, sentences, pooling)


def layer_word_maps(
    model: Any,
    sentences: Sequence[UDSentence],
    *,
    pooling: str = "word",
    batch_size: int = 8,
    device: str | torch.device | None = None,
) -> list[torch.Tensor]:
    """Raw head-averaged attention of every layer, as word maps (the raw-attention baseline).

    Args:
        model, sentences, pooling, batch_size, device: as :func:`ola_word_maps`.

    Returns:
        ``(N, W, W)`` float32 CPU tensors, channel ``n`` = layer ``n + 1`` (nearest the input first).
        Their channel mean is first-order OLA by definition.
    """
    from olacore.cache import cached_attention

    extractions = cached_attention(model, [s.text for s in sentences], batch_size=batch_size, device=device, progress=False)
    out = []
    for extraction, sentence in zip(extractions, sentences):
        if extraction.text != sentence.text:
            raise ValueError(f"attention is for another text than sentence {sentence.sent_id}")
        out.append(_to_words(torch.as_tensor(extraction.attentions).float(), extraction.offsets, sentence.spans, pooling).cpu())
    return out


def positional_maps(sentences: Sequence[UDSentence]) -> list[torch.Tensor]:
    """The positional baseline's "maps": the identity (order-0 OLA), ``(1, W, W)`` per sentence.

    Its rows and columns are one-hot positions, so with ``ProbeConfig(relative_position=True)``
    the probe sees word positions, sentence length and relative offsets and nothing else.
    """
    return [torch.eye(len(s), dtype=torch.float32)[None] for s in sentences]


def select_channels(maps: Sequence[torch.Tensor], channels: Sequence[int]) -> list[torch.Tensor]:
    """Keep the given channel indices of every ``(C, W, W)`` map (e.g. ``[0, 1]`` = orders 1+2)."""
    index = torch.as_tensor(list(channels))
    return [m.index_select(0, index) for m in maps]


# ---------------------------------------------------------------------------------------------
# Scores
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# The probe
# ---------------------------------------------------------------------------------------------


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
        clean_sinks: add the sink-cleaned copy of every channel (:func:`olacore.maps.clean_sinks`,
            as the official TOA input does); still OLA only.
        context: mix each word encoding with its two neighbours on either side (a residual
            width-5 convolution) before scoring. The official adapter mixes the map across
            positions with an axial transformer; this is the cheap stand-in. The positional
            baseline gets the same layer.
        relative_position: add one-hot relative offsets ``j - i`` (clipped to ``+-max_len/2``)
            to the pair features. Only for the positional baseline.
        seed: seeds torch, numpy and the batch order.
        device: where to train (``None``: CUDA when available).
        num_threads: CPU threads while training (the probe's tensors are small: one thread
            is as fast and does not fight other processes; ``None`` leaves torch's setting).
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
    num_threads: int | None = 1


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


def _with_clean(m: torch.Tensor) -> torch.Tensor:
    """``(C, W, W)`` -> ``(2C, W, W)``: the maps, then their sink-cleaned copies."""
    causal = bool((m.triu(1) == 0).all()) and m.shape[-1] > 1
    return torch.cat([m, clean_sinks(m, causal=causal)], 0)


def _batches(maps: Sequence[torch.Tensor], sentences: Sequence[UDSentence], batch_size: int, clean: bool = False) -> list[_Batch]:
    """Length-bucketed padded batches (sentences sorted by length, cut into ``batch_size``)."""
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
            batch.maps[b, :, :n, :n] = _with_clean(maps[i]) if clean else maps[i]
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
def predict(probe: BiaffineProbe, maps: Sequence[torch.Tensor], sentences: Sequence[UDSentence], batch_size: int = 64) -> list[Prediction]:
    """Greedy decoding: each word's highest-scoring head, then the best relation for that arc.

    Args:
        probe: a trained :class:`BiaffineProbe`.
        maps: ``(C, W, W)`` float32 maps, one per sentence, same channels as in training.
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


def evaluate(probe: BiaffineProbe, maps: Sequence[torch.Tensor], sentences: Sequence[UDSentence]) -> dict[str, float]:
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

    def test(self, maps: Sequence[torch.Tensor], sentences: Sequence[UDSentence]) -> dict[str, float]:
        """Score held-out sentences once with the chosen weights."""
        return evaluate(self.probe, maps, sentences)


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train_probe(
    train_maps: Sequence[torch.Tensor],
    train_sentences: Sequence[UDSentence],
    dev_maps: Sequence[torch.Tensor],
    dev_sentences: Sequence[UDSentence],
    config: ProbeConfig | None = None,
    progress: bool = False,
) -> ProbeRun:
    """Train a :class:`BiaffineProbe` on train, keep the epoch with the best dev LAS (paper section 4.3).

    Args:
        train_maps, dev_maps: ``(C, W, W)`` float32 word maps, one per sentence (same ``C``).
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
    threads = torch.get_num_threads()
    if config.num_threads:
        torch.set_num_threads(config.num_threads)
    try:
        return _train(train_maps, train_sentences, dev_maps, dev_sentences, config, progress)
    finally:
        torch.set_num_threads(threads)


def _train(train_maps, train_sentences, dev_maps, dev_sentences, config: ProbeConfig, progress: bool) -> ProbeRun:

    start = time.perf_counter()
    device = torch.device(config.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    _seed_everything(config.seed)
    probe = BiaffineProbe(train_maps[0].shape[0], config).to(device)
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


# Bump when train_probe gives other results for the same inputs: every cached probe is then ignored.
PROBE_VERSION = 1


def _digest_maps(maps: Sequence[torch.Tensor]) -> str:
    digest = hashlib.sha256()
    for m in maps:
        digest.update(tensor_digest(m).encode())
    return digest.hexdigest()


def _digest_sentences(sentences: Sequence[UDSentence]) -> str:
    payload = [dataclasses.astuple(s) for s in sentences]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()


def _probe_key(train_maps, train_sentences, dev_maps, dev_sentences, config: ProbeConfig) -> str:
    device = torch.device(config.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    settings = {k: v for k, v in dataclasses.asdict(config).items() if k not in ("device", "num_threads")}
    return TensorStore.key(
        kind="syntax-probe", probe_version=PROBE_VERSION, config=settings, device=device.type,
        train=[_digest_maps(train_maps), _digest_sentences(train_sentences)],
        dev=[_digest_maps(dev_maps), _digest_sentences(dev_sentences)],
    )


def cached_train_probe(
    train_maps: Sequence[torch.Tensor],
    train_sentences: Sequence[UDSentence],
    dev_maps: Sequence[torch.Tensor],
    dev_sentences: Sequence[UDSentence],
    config: ProbeConfig | None = None,
    progress: bool = False,
    store: TensorStore | None = None,
) -> ProbeRun:
    """:func:`train_probe`, kept on disk: the same inputs give back the stored probe without training.

    The key holds a sha256 of every train and dev map (dtype, shape, bytes), of the gold
    sentences (text, words, spans, heads, relations, tags), the whole ``config`` except its
    thread count, the device type and :data:`PROBE_VERSION`; the entry holds the chosen
    weights and the training record, written atomically by :class:`olacore.cache.TensorStore`.

    Args:
        train_maps, train_sentences, dev_maps, dev_sentences, config, progress: as
            :func:`train_probe`.
        store: where probes are kept (default: ``$OLACORE_CACHE/tensors``).

    Returns:
        :class:`ProbeRun`; a stored probe is rebuilt on the config's device, in eval mode,
        with the ``seconds`` its training took when it was trained.

    Raises:
        ValueError: as :func:`train_probe`.
    """
    config = config or ProbeConfig()
    if not train_sentences or not dev_sentences:
        raise ValueError("train and dev must hold at least one sentence each")
    device = torch.device(config.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    store = store or TensorStore()
    key = _probe_key(train_maps, train_sentences, dev_maps, dev_sentences, config)
    stored = store.get(key)
    if stored is not None:
        weights, meta = stored
        probe = BiaffineProbe(train_maps[0].shape[0], config)
        probe.load_state_dict(weights)
        return ProbeRun(probe=probe.to(device).eval(), config=config, **meta)
    run = train_probe(train_maps, train_sentences, dev_maps, dev_sentences, config, progress)
    store.put(key, run.probe.state_dict(),
              meta={"best_epoch": run.best_epoch, "dev": run.dev, "history": run.history, "seconds": run.seconds})
    return run


def long_sentences(sentences: Sequence[UDSentence], min_words: int = 30) -> list[int]:
    """Indices of the sentences with more than ``min_words`` words (the length-generalisation split)."""
    return [i for i, s in enumerate(sentences) if len(s) > min_words]


def ewt_splits(num_train: int | None, num_dev: int | None, num_test: int | None, long_min_words: int = 30) -> dict[str, list[UDSentence]]:
    """The EWT sentences of the experiment: ``train``, ``dev``, ``test`` and ``test_long``.

    ``train`` and ``dev`` are the first sentences of their splits; ``test`` is ``num_test``
    sentences spread evenly over the whole test split (EWT is ordered by genre, so the first
    ones would be one genre only); ``test_long`` is every test sentence with more than
    ``long_min_words`` words (the length-generalisation split, whatever ``num_test``).
    ``None`` means the whole split. Unaligned sentences were already counted by
    :func:`olacore.data.read_ewt_syntax` (see its ``report()``).
    """
    from olacore.data import read_ewt_syntax

    train = list(read_ewt_syntax("train").sentences)
    dev = list(read_ewt_syntax("dev").sentences)
    test = list(read_ewt_syntax("test").sentences)
    if num_test is not None and num_test < len(test):
        picked = np.linspace(0, len(test) - 1, num_test).round().astype(int)
        sample = [test[i] for i in sorted(set(picked.tolist()))]
    else:
        sample = test
    return {
        "train": train[:num_train] if num_train else train,
        "dev": dev[:num_dev] if num_dev else dev,
        "test": sample,
        "test_long": [test[i] for i in long_sentences(test, long_min_words)],
    }


def model_maps(
    model: Any,
    splits: dict[str, Sequence[UDSentence]],
    *,
    kind: str = "ola",
    max_order: int = 3,
    poolings: Sequence[str] = ("word", "first"),
    batch_size: int = 8,
    device: str | torch.device | None = None,
) -> dict[str, dict[str, list[torch.Tensor]]]:
    """Word maps of every split, for each pooling: ``maps[pooling][split]`` (one extraction).

    Args:
        model: zoo name, id / folder, or :class:`olacore.models.LoadedModel`.
        splits: as returned by :func:`ewt_splits`.
        kind: ``"ola"`` (channels :data:`CHANNELS`: orders 1..K, rollout) or ``"layers"``
            (raw head-averaged attention of each layer, the raw-attention baseline).
        max_order, batch_size, device: as :func:`ola_word_maps`.
        poolings: any of ``"word"`` and ``"first"``.

    Returns:
        nested dict of lists of ``(C, W, W)`` float32 tensors, aligned with ``splits``.
    """
    unique = {s.text: s for split in splits.values() for s in split}
    sentences = list(unique.values())
    texts = [s.text for s in sentences]
    if kind == "ola":
        from olacore.cache import cached_ola

        items = cached_ola(model, texts, max_order, batch_size=batch_size, device=device, progress=False)
        stacks = [torch.cat([r.orders[1:], r.rollout[None]], 0) for r in items]
    elif kind == "layers":
        from olacore.cache import cached_attention

        items = cached_attention(model, texts, batch_size=batch_size, device=device, progress=False)
        stacks = [e.attentions for e in items]
    else:
        raise ValueError(f"kind must be 'ola' or 'layers'; got {kind!r}")
    out: dict[str, dict[str, list[torch.Tensor]]] = {}
    for pooling in poolings:
        by_text = {
            s.text: _to_words(stack.float(), item.offsets, s.spans, pooling).cpu()
            for s, stack, item in zip(sentences, stacks, items)
        }
        out[pooling] = {name: [by_text[s.text] for s in split] for name, split in splits.items()}
    return out


def probe_row(
    maps: dict[str, Sequence[torch.Tensor]],
    splits: dict[str, Sequence[UDSentence]],
    config: ProbeConfig,
    channels: Sequence[int] | None = None,
    *,
    store: TensorStore | None = None,
    **labels: Any,
) -> tuple[dict[str, Any], ProbeRun]:
    """Train on ``train``, select on ``dev``, score ``test`` and ``test_long``: one table row.

    Args:
        maps: ``maps[split]`` lists of ``(C, W, W)`` tensors for every split of ``splits``.
        splits: sentences per split (:func:`ewt_splits`).
        config: probe settings (its ``seed`` is reported).
        channels: channel indices to keep (``None``: all).
        store: where probes are kept (default: ``$OLACORE_CACHE/tensors``).
        **labels: extra columns for the row (model, maps, pooling, ...).

    Returns:
        ``(row, run)``: the row holds the labels, ``seed``, ``epoch`` (chosen on dev),
        ``dev_uas``, ``dev_las``, ``uas``, ``las``, ``uas_nopunct``, ``las_nopunct``,
        ``upos_acc`` (test), ``long_uas``, ``long_las`` (test sentences > 30 words) and
        ``seconds`` (training time). The probe is trained once and then read from the
        cache (:func:`cached_train_probe`); test is scored on every call.
    """
    pick = (lambda m: m) if channels is None else (lambda m: select_channels(m, channels))
    run = cached_train_probe(pick(maps["train"]), splits["train"], pick(maps["dev"]), splits["dev"], config, store=store)
    test = run.test(pick(maps["test"]), splits["test"])
    row = dict(labels)
    row.update(seed=config.seed, epoch=run.best_epoch, dev_uas=run.dev["uas"], dev_las=run.dev["las"],
               uas=test["uas"], las=test["las"], uas_nopunct=test["uas_nopunct"], las_nopunct=test["las_nopunct"],
               upos_acc=test["upos_acc"])
    if splits.get("test_long"):
        long = run.test(pick(maps["test_long"]), splits["test_long"])
        row.update(long_uas=long["uas"], long_las=long["las"])
    row["seconds"] = run.seconds
    return row, run


@dataclass
class ProbeJob:
    """One :func:`probe_row` call, for :func:`probe_rows`.

    Attributes:
        maps: ``maps[split]`` lists of ``(C, W, W)`` tensors for every split.
        config: probe settings.
        channels: channel indices to keep (``None``: all).
        labels: extra columns of the row (model, pooling, input, ...).
    """

    maps: dict[str, Sequence[torch.Tensor]]
    config: ProbeConfig
    channels: Sequence[int] | None = None
    labels: dict[str, Any] = field(default_factory=dict)


def _train_job(job: tuple) -> None:
    """Train one probe into the cache (top level, so worker processes can import it); maps
    arrive as numpy arrays (:func:`olacore.workers.by_value`)."""
    train_maps, train_sentences, dev_maps, dev_sentences, config, store_root = job
    train_maps, dev_maps = [torch.from_numpy(m) for m in train_maps], [torch.from_numpy(m) for m in dev_maps]
    cached_train_probe(train_maps, train_sentences, dev_maps, dev_sentences, config, store=TensorStore(store_root))


def probe_rows(
    jobs: Sequence[ProbeJob],
    splits: dict[str, Sequence[UDSentence]],
    *,
    workers: int = 1,
    progress: bool = True,
    store: TensorStore | None = None,
) -> list[tuple[dict[str, Any], ProbeRun]]:
    """:func:`probe_row` for every job, training the missing probes in ``workers`` processes.

    With ``workers > 1``, the probes not yet in the cache are trained first in worker
    processes (each one seeded by its config, so the result does not depend on the worker),
    then every row is scored here from the cache. Probes train on one thread each
    (``ProbeConfig.num_threads``), so one worker per core uses the whole CPU.

    Args:
        jobs: what to train and score.
        splits: sentences per split (:func:`ewt_splits`).
        workers: processes training at once (1: train in this process, in order).
        progress: a tqdm bar over jobs.
        store: where probes are kept (default: ``$OLACORE_CACHE/tensors``).

    Returns:
        ``(row, run)`` per job, in order (see :func:`probe_row`).

    Raises:
        ValueError: ``workers < 1``, or as :func:`train_probe`.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    store = store or TensorStore()
    if workers > 1:
        def pick(job: ProbeJob, split: str) -> Sequence[torch.Tensor]:
            return job.maps[split] if job.channels is None else select_channels(job.maps[split], job.channels)

        work = []
        for job in jobs:
            train_maps, dev_maps = pick(job, "train"), pick(job, "dev")
            if _probe_key(train_maps, splits["train"], dev_maps, splits["dev"], job.config) not in store:
                work.append((by_value(train_maps), splits["train"], by_value(dev_maps), splits["dev"], job.config,
                             str(store.root)))
        run_in_processes(_train_job, work, workers, progress=progress, desc="probes")
    return [probe_row(j.maps, splits, j.config, j.channels, store=store, **j.labels)
            for j in progress_bar(jobs, enabled=progress and workers == 1, desc="probes")]


# ---------------------------------------------------------------------------------------------
# Drawing
# ---------------------------------------------------------------------------------------------


def draw_arcs(
    ax,
    word_map: torch.Tensor | np.ndarray,
    sentence: UDSentence,
    predicted_heads: Sequence[int],
    title: str | None = None,
    cmap: str = "Greys",
):
    """Draw gold and predicted dependency arcs over a word-level OLA heatmap.

    The heatmap shows ``word_map[i, j]`` (row: dependent / query ``i``, column: key ``j``).
    For each word ``i`` with head ``h > 0`` a marker sits at cell ``(i, h - 1)``: a green
    circle for the gold head, an orange cross for the predicted head (both on one cell when
    the prediction is right); root attachments are listed in the title. A good OLA parser
    has its crosses in circles; the grey cells show what it had to go on.

    Args:
        ax: a matplotlib Axes.
        word_map: ``(W, W)`` map (one channel).
        sentence: the gold sentence (words, heads).
        predicted_heads: ``W`` predicted heads (1-based, 0 = root).
        title: axes title (the root words are appended).
        cmap: colormap of the heatmap.

    Returns:
        the Axes.
    """
    m = np.asarray(word_map, dtype=float)
    n = len(sentence)
    if m.shape != (n, n) or len(predicted_heads) != n:
        raise ValueError(f"map {m.shape} / {len(predicted_heads)} heads do not fit a {n}-word sentence")
    ax.imshow(m, cmap=cmap, vmin=0, vmax=max(float(np.quantile(m, 0.98)), 1e-9))
    gold = [(i, h - 1) for i, h in enumerate(sentence.heads) if h > 0]
    pred = [(i, h - 1) for i, h in enumerate(predicted_heads) if h > 0]
    if gold:
        ax.scatter([j for _, j in gold], [i for i, _ in gold], s=60, facecolors="none", edgecolors="tab:green", linewidths=1.5, label="gold head")
    if pred:
        ax.scatter([j for _, j in pred], [i for i, _ in pred], s=30, marker="x", color="tab:orange", linewidths=1.5, label="predicted head")
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xticklabels(sentence.words, rotation=90, fontsize=7)
    ax.set_yticklabels(sentence.words, fontsize=7)
    ax.set_xlabel("head (key word)")
    ax.set_ylabel("dependent (query word)")
    gold_root = [sentence.words[i] for i, h in enumerate(sentence.heads) if h == 0]
    pred_root = [sentence.words[i] for i, h in enumerate(predicted_heads) if h == 0]
    ax.set_title(f"{title + ': ' if title else ''}root gold={gold_root} pred={pred_root}", fontsize=8)
    ax.legend(loc="upper right", fontsize=7)
    return ax
