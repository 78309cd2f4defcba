"""Comparable maps: one model's aligned maps of some texts (:class:`Maps`, from :func:`make_maps`), and the
attention-sink rule they pass through.

Per text: sinks ``"clean"``, ``"raw"`` or ``"raw+clean"``, then alignment (:mod:`olacore.texts`) ``"resize"`` (the
paper), ``"words"`` or ``"first"``. The official sink rule (``get_outliers_mask``, ``cal_maskes`` in
``models/ola_utils.py``) zeroes every entry equal to its row's maximum or above ``mean + 3 std`` and renormalises;
the statistics run over the whole row (``"row"``: ``olas_retrieval.py``, ``is_casual=False``) or over ``j <= i``
(``"causal"``: the official TOA path).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence, TYPE_CHECKING

import torch

from olacore.channels import label
from olacore.texts import first_subtoken_maps, pool_to_words, resize_maps

if TYPE_CHECKING:
    from olacore.pipeline import TokenMaps

__all__ = ["Maps", "ALIGNMENTS", "SINKS", "make_maps", "model_maps", "SINK_STATS", "stats_mask", "clean_sinks",
           "sink_flags", "mirror_causal"]


ALIGNMENTS = ("resize", "words", "first")
SINKS = ("raw", "clean", "raw+clean")


@dataclass(frozen=True)
class Maps:
    """One model's comparable maps for a list of texts.

    Attributes:
        tensors: one ``(C, S, S)`` float32 CPU tensor per text; ``S``: ``size`` for ``"resize"``, else the word count.
        channels: the channel names (the axis holds them twice with ``sinks="raw+clean"``: raw, then cleaned).
    """

    tensors: tuple[torch.Tensor, ...]
    channels: tuple[str, ...]
    causal: bool
    model: str
    align: str
    sinks: str
    size: int | None
    texts: tuple[str, ...] = field(repr=False)
    sink_stats: str = "row"

    def __len__(self) -> int:
        return len(self.tensors)

    def layout(self) -> list[tuple[str, str]]:
        """``(channel, sink handling)`` of every entry of the channel axis."""
        if self.sinks == "raw+clean":
            return [(c, "raw") for c in self.channels] + [(c, "clean") for c in self.channels]
        return [(c, self.sinks) for c in self.channels]

    def labels(self) -> list[str]:
        """Display labels of the channel axis: ``"order 1"``, or ``"order 1 (clean)"`` with both sinks."""
        if self.sinks == "raw+clean":
            return [f"{label(c)} ({s})" for c, s in self.layout()]
        return [label(c) for c in self.channels]

    def panels(self, index: int) -> dict[str, torch.Tensor]:
        """The maps of text ``index`` by display label (``{"order 1": (S, S), ...}``), for figures."""
        return dict(zip(self.labels(), self.tensors[index]))

    def stack(self) -> torch.Tensor:
        """All maps as one ``(N, C, S, S)`` tensor.

        Raises:
            ValueError: the maps differ in size (word-level maps of texts of unequal length).
        """
        shapes = {tuple(t.shape) for t in self.tensors}
        if len(shapes) != 1:
            raise ValueError(f"{self.model}: maps of different sizes {sorted(shapes)[:3]}: give texts of equal "
                             "word count, or align='resize'")
        return torch.stack(self.tensors)

    def select(self, *names: str) -> "Maps":
        """The same maps with only the channels ``names``, in that order (both sink copies kept).

        Raises:
            ValueError: a name these maps do not hold.
        """
        missing = [n for n in names if n not in self.channels]
        if missing or not names:
            raise ValueError(f"{self.model} maps hold channels {list(self.channels)}; asked for {list(names)}")
        picks = [self.channels.index(n) for n in names]
        if self.sinks == "raw+clean":
            picks += [len(self.channels) + i for i in picks]
        index = torch.tensor(picks)
        return replace(self, tensors=tuple(t.index_select(0, index) for t in self.tensors), channels=tuple(names))


def _spans_of(item: Any) -> Sequence[tuple[int, int]]:
    spans = getattr(item, "spans", None)
    if spans is None:
        raise ValueError("word alignments need the word spans of every text: pass texts with .spans "
                         "(olacore.texts.WordText, olacore.corpora.UDSentence)")
    return spans


def make_maps(token_maps: Sequence["TokenMaps"], *, align: str = "resize", sinks: str = "clean", size: int = 50,
              words: Sequence[Any] | None = None, sink_stats: str = "row") -> Maps:
    """Build comparable :class:`Maps` from one model's :class:`olacore.pipeline.TokenMaps`.

    Args:
        align: ``"resize"`` (paper), ``"words"`` (ours) or ``"first"`` (first sub-tokens).
        sinks: ``"raw"``, ``"clean"`` (official) or ``"raw+clean"``.
        size: side of resized maps (paper: 50).
        words: for ``"words"`` and ``"first"``: per text an object with ``.spans``.
        sink_stats: ``"row"`` (the official similarity scripts) or ``"causal"`` (the official TOA path).

    Raises:
        ValueError: unknown ``align``, ``sinks`` or ``sink_stats``; missing or mismatched ``words``.
    """
    for name, value, allowed in (("align", align, ALIGNMENTS), ("sinks", sinks, SINKS),
                                 ("sink_stats", sink_stats, SINK_STATS)):
        if value not in allowed:
            raise ValueError(f"{name} must be one of {allowed}; got {value!r}")
    first = token_maps[0]
    if align != "resize" and (words is None or len(words) != len(token_maps)):
        raise ValueError(f"align={align!r} needs the words (with .spans) of every text: words=[...] of length "
                         f"{len(token_maps)}")
    tensors = []
    for index, item in enumerate(token_maps):
        maps = item.maps.float()
        if sinks == "clean":
            maps = clean_sinks(maps, causal=item.causal, stats=sink_stats)
        elif sinks == "raw+clean":
            maps = torch.cat([maps, clean_sinks(maps, causal=item.causal, stats=sink_stats)])
        if align == "resize":
            maps = resize_maps(maps, size)
        elif align == "words":
            maps = pool_to_words(maps, item.offsets, _spans_of(words[index]))
        else:
            maps = first_subtoken_maps(maps, item.offsets, _spans_of(words[index]))
        tensors.append(maps)
    return Maps(tensors=tuple(tensors), channels=first.channels, causal=first.causal, model=first.model,
                align=align, sinks=sinks, size=size if align == "resize" else None,
                texts=tuple(t.text for t in token_maps), sink_stats=sink_stats)


def model_maps(model: Any, texts: Sequence[Any], channels: Sequence[str], *, align: str = "resize",
               sinks: str = "clean", size: int = 50, workers: int = 1, device: str | torch.device | None = None,
               progress: bool = True, sink_stats: str = "row") -> Maps:
    """:func:`olacore.pipeline.token_maps` then :func:`make_maps`; ``texts``: strings, or objects with ``.text`` (and
    ``.spans`` for word alignments).

    Raises:
        ValueError: as :func:`olacore.pipeline.token_maps` and :func:`make_maps`.
    """
    from olacore.pipeline import token_maps

    strings = [t if isinstance(t, str) else t.text for t in texts]
    items = token_maps(model, strings, channels, workers=workers, device=device, progress=progress)
    words = None if align == "resize" else list(texts)
    return make_maps(items, align=align, sinks=sinks, size=size, words=words, sink_stats=sink_stats)


SINK_STATS = ("row", "causal")


def stats_mask(size: int, causal: bool, stats: str = "row", device: torch.device | str | None = None) -> torch.Tensor:
    """The entries a row's statistics cover: ``(T, T)`` bool, ``j <= i`` for a causal map with ``stats="causal"``.

    Raises:
        ValueError: an unknown ``stats``.
    """
    if stats not in SINK_STATS:
        raise ValueError(f"stats must be one of {SINK_STATS} ('row': the official similarity scripts, 'causal': "
                         f"the official TOA path); got {stats!r}")
    valid = torch.ones(size, size, dtype=torch.bool, device=device)
    return valid.tril() if causal and stats == "causal" else valid


def sink_flags(maps: torch.Tensor, causal: bool, num_std: float = 3.0, stats: str = "row") -> torch.Tensor:
    """The entries the official rule flags as sinks (``get_outliers_mask``): ``(..., T, T)`` bool, entries equal to
    their row's maximum or above ``mean + num_std * std`` (sample std; paper: 3).

    Raises:
        ValueError: an unknown ``stats``.
    """
    valid = stats_mask(maps.shape[-1], causal, stats, maps.device)
    count = valid.sum(-1, keepdim=True).to(maps.dtype)
    values = maps * valid
    mean = values.sum(-1, keepdim=True) / count
    variance = (((maps - mean) * valid) ** 2).sum(-1, keepdim=True) / (count - 1).clamp_min(1e-10)
    above = values > mean + num_std * variance.sqrt()
    at_max = values == values.amax(-1, keepdim=True)
    return (above | at_max) & valid


def clean_sinks(maps: torch.Tensor, causal: bool, num_std: float = 3.0, stats: str = "row") -> torch.Tensor:
    """Remove attention sinks by the official rule (``models/ola_utils.py``): zero the flagged entries and those
    outside :func:`stats_mask`, renormalise each row; ``(..., T, T)`` (a row whose whole mass was flagged: zeros).

    Raises:
        ValueError: maps are not square, or ``stats`` is unknown.
    """
    flagged = sink_flags(maps, causal, num_std, stats)
    valid = stats_mask(maps.shape[-1], causal, stats, maps.device)
    kept = (maps * valid).masked_fill(flagged, 0.0)
    mass = kept.sum(-1, keepdim=True)
    return kept / torch.where(mass > 0, mass, torch.ones_like(mass))


def mirror_causal(maps: torch.Tensor) -> torch.Tensor:
    """Fill the upper triangle of causal maps with the transpose of the lower one (TOA input).

    ``(..., T, T)`` lower-triangular ``L`` -> symmetric ``L + L^T - diag(L)``.
    """
    lower = maps.tril()
    return lower + lower.transpose(-1, -2).triu(1)
