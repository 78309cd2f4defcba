"""The TOA adapter's input: OLA maps as a ``(C, T, T)`` image, built as the official code does.

Paper section 4.4 (TOA) feeds an adapter nothing but OLA. The official preprocessing, read
from its code, for the default input ``use_orders=[1, 2]`` with ``remove_outliers=True``
(``utils/arguments.py``: ``remove_outliers`` defaults to True, the TOA configs
``configs/train_*_udewt_dp.json`` etc. set ``use_orders`` ``[1, 2]``):

1. **Sink mask** (``models/ola_utils.py``, ``cal_maskes`` / ``get_outliers_mask``): per row,
   over the *interested* entries (the unpadded ones and, for a causal LM, ``j <= i`` only),
   mean and **sample** standard deviation (divisor ``n - 1``, floored at ``1e-10``) are
   taken, the entries outside the interested part being set to zero first; an entry is
   flagged when it exceeds ``mean + 3 std``, and **every** entry equal to the row maximum is
   flagged too (ties included). The first row of a causal map has one entry (``n - 1 = 0``):
   its only entry is the maximum and is flagged.
2. **Stack** (``models/ola_model.py``, ``preprocess_ola``, ``result_type='cat'``): the raw
   orders, then the same orders with the flagged entries zeroed: ``[raw 1, raw 2, clean 1,
   clean 2]``.
3. **Row normalisation**: every row of every channel divided by ``row sum + 1e-10`` (an
   all-zero row stays zero).
4. **Mirror** (causal LMs only): the strictly upper triangle receives the transposed lower
   one, ``M[i, j] = M[j, i]`` for ``j > i``, after the normalisation.

The flags are :func:`olacore.sinks.sink_flags` with statistics over the causal part (the
similarity chapters take them over the whole row, as the official similarity scripts do).

Beyond the official input, :func:`build_input` builds the same kind of stack from any channels
of :mod:`olacore.channels` (``"order3"``, ``"rollout"``, later ``"alti"``), raw and/or clean, so
the syntax grid feeds every kind of map through one adapter; and :func:`distance_input`
gives the *distance-only* baseline: the same adapter given relative positions ``j - i`` and
no attention at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from olacore.channels import channel as lookup_channel
from olacore.sinks import sink_flags

__all__ = [
    "DISTANCE",
    "VARIANTS",
    "InputSpec",
    "official_sink_mask",
    "stack_channels",
    "toa_channels",
    "raw_maps",
    "build_input",
    "distance_input",
    "DISTANCE_CHANNELS",
]

#: The pseudo-channel name of the distance-only baseline (no attention: relative positions).
DISTANCE = "distance"
#: The two variants of a channel in the stack: as extracted, and sink-cleaned.
VARIANTS = ("raw", "clean")
#: Offsets ``j - i`` that get an indicator channel in :func:`distance_input`.
_NEAR = (-2, -1, 0, 1, 2)
DISTANCE_CHANNELS = len(_NEAR) + 3


def official_sink_mask(maps: torch.Tensor, causal: bool, num_std: float = 3.0) -> torch.Tensor:
    """The official TOA sink flags: the official rule with statistics over the causal part.

    :func:`olacore.sinks.sink_flags` with ``stats="causal"``: the official TOA path
    (``OLAModel.forward`` in ``models/ola_model.py``) passes the causal flag to ``cal_maskes``
    (``models/ola_utils.py``), unlike the official similarity scripts.

    Args:
        maps: ``(..., T, T)`` float maps (rows: queries), one sentence each, unpadded.
        causal: a causal LM's maps: only ``j <= i`` is looked at.
        num_std: the threshold in sample standard deviations (official: 3).

    Returns:
        ``(..., T, T)`` bool tensor, ``True`` where an entry is flagged as a sink.

    Raises:
        ValueError: the maps are not square.
    """
    return sink_flags(maps, causal, num_std, stats="causal")


def _row_normalise(maps: torch.Tensor) -> torch.Tensor:
    return maps / (maps.sum(-1, keepdim=True) + 1e-10)


def _mirror(maps: torch.Tensor) -> torch.Tensor:
    upper = torch.ones(maps.shape[-2:], dtype=torch.bool, device=maps.device).triu(1)
    return torch.where(upper, maps.transpose(-1, -2), maps)


def stack_channels(maps: torch.Tensor, causal: bool, variants: Sequence[str] = VARIANTS,
                   mirror: bool = True) -> torch.Tensor:
    """The official preprocessing of a stack of maps: variants, row normalisation, mirroring.

    Args:
        maps: ``(K, T, T)`` maps of one sentence (``K`` channels, e.g. OLA orders 1 and 2).
        causal: the maps come from a causal LM (sink statistics over ``j <= i``; mirrored).
        variants: which of ``"raw"`` and ``"clean"`` to stack, in that order of blocks.
        mirror: mirror causal maps into their upper triangle (official: yes).

    Returns:
        ``(len(variants) * K, T, T)`` float32: all channels raw, then all channels clean
        (for the default variants), each row summing to 1 (or all zero), CLM maps mirrored.

    Raises:
        ValueError: not ``(K, T, T)``, or an unknown / repeated / missing variant.
    """
    if maps.ndim != 3 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(f"maps must be (K, T, T); got shape {tuple(maps.shape)}")
    variants = tuple(variants)
    if not variants or len(set(variants)) != len(variants) or any(v not in VARIANTS for v in variants):
        raise ValueError(f"variants must be a non-empty selection of {VARIANTS} without repeats; got {variants}")
    maps = maps.float()
    blocks = []
    for variant in variants:
        block = maps if variant == "raw" else maps.masked_fill(official_sink_mask(maps, causal), 0.0)
        blocks.append(block)
    stacked = _row_normalise(torch.cat(blocks, 0))
    return _mirror(stacked) if causal and mirror else stacked


def toa_channels(orders: torch.Tensor, causal: bool, use_orders: Sequence[int] = (1, 2)) -> torch.Tensor:
    """The official TOA input from OLA orders (paper section 4.4; the official preprocessing, module docstring).

    Args:
        orders: ``(K + 1, T, T)`` output of :func:`olacore.ola.order_level_attention` for one
            sentence (``orders[k]`` = order ``k``), or an :class:`~olacore.pipeline.OLAResult`'s
            ``orders``.
        causal: the model is a causal LM.
        use_orders: the orders to stack (official: 1 and 2).

    Returns:
        ``(2 * len(use_orders), T, T)`` float32: ``[raw o_1, raw o_2, clean o_1, clean o_2]``,
        each row normalised, mirrored for a causal LM.

    Raises:
        ValueError: an order outside ``1..K``, or maps not ``(K + 1, T, T)``.
    """
    if orders.ndim != 3:
        raise ValueError(f"orders must be (K + 1, T, T); got shape {tuple(orders.shape)}")
    available = orders.shape[0] - 1
    for k in use_orders:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= available:
            raise ValueError(f"use_orders must be ints in 1..{available} (orders computed); got {list(use_orders)}")
    return stack_channels(orders[list(use_orders)], causal)


@dataclass(frozen=True)
class InputSpec:
    """What the adapter reads: channels by vocabulary name, their variants, the grid.

    Attributes:
        channels: names from :mod:`olacore.channels` (``"order1"``, ``"rollout"``, ...), or
            ``("distance",)`` alone for the distance-only baseline.
        variants: ``("raw", "clean")`` (official), ``("raw",)`` or ``("clean",)``; ignored
            for the distance input.
        mirror: mirror causal maps (official: yes).

    The length cut is not part of the spec: it belongs to the task data (labels and maps
    must be cut alike, :mod:`olacore.toa.tasks`), which passes each sentence's kept length.
    """

    channels: tuple[str, ...] = ("order1", "order2")
    variants: tuple[str, ...] = VARIANTS
    mirror: bool = True

    def __post_init__(self) -> None:
        channels = (self.channels,) if isinstance(self.channels, str) else tuple(self.channels)
        object.__setattr__(self, "channels", channels)
        object.__setattr__(self, "variants", tuple(self.variants))
        if not channels:
            raise ValueError("InputSpec needs at least one channel, e.g. ('order1',) or ('distance',)")
        if DISTANCE in channels and len(channels) > 1:
            raise ValueError(f"the {DISTANCE!r} input stands alone (it is the no-attention baseline); got {channels}")
        if DISTANCE not in channels:
            for name in channels:
                lookup_channel(name)  # raises on an unknown name, listing the vocabulary
            if len(set(channels)) != len(channels):
                raise ValueError(f"channels repeated: {channels}")
        if not self.variants or any(v not in VARIANTS for v in self.variants) or len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants must be a non-empty selection of {VARIANTS}; got {self.variants}")

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
    """The spec's channels of one OLA record, before preprocessing: ``(K, T', T')`` float32.

    ``T' = min(T, size)`` (``size=None``: every token, ``T = len(record.offsets)``): the length
    cut keeps the top-left block, the first tokens. ``record`` is the record of the channels'
    source (:mod:`olacore.channels`): an OLA record for orders and the rollout, an ALTI record
    for ``"alti"``, an attention record for ``"layer<n>"``. For a causal LM this block is
    exactly what the model gives a cut input; for an encoder, whose tokens also attend to later
    ones, the block misses that mass (rows are renormalised by :func:`stack_channels`); the
    official code instead runs the model on the cut input. The distance input has no raw maps: ``(0, T', T')``.
    """
    full = len(record.offsets)
    keep = full if size is None else min(full, size)
    if spec.is_distance:
        return torch.zeros(0, keep, keep)
    maps = torch.stack([lookup_channel(name).take(record) for name in spec.channels]).float()
    return maps[:, :keep, :keep]


def build_input(record: Any, spec: InputSpec, size: int | None = None, raw: torch.Tensor | None = None) -> torch.Tensor:
    """The adapter input of one sentence for any channels of the vocabulary.

    Args:
        record: an :class:`~olacore.pipeline.OLAResult` (``orders``, ``rollout``, ``is_causal``)
            or any record the channels' ``take`` accepts, with ``is_causal``.
        spec: the channels and variants.
        size: the length cut (tokens kept; ``None``: all).
        raw: ``(K, T', T')`` maps to use instead of the record's (e.g. augmented ones, see
            :mod:`olacore.augment`); default :func:`raw_maps`.

    Returns:
        ``(spec.num_channels, T', T')`` float32: for OLA channels, :func:`stack_channels` of the
        spec's maps (all channels raw, then all clean); for the distance spec, :func:`distance_input`.
    """
    maps = raw_maps(record, spec, size) if raw is None else raw
    if spec.is_distance:
        return distance_input(maps.shape[-1])
    return stack_channels(maps, bool(record.is_causal), spec.variants, spec.mirror)


def distance_input(size: int) -> torch.Tensor:
    """The distance-only baseline's input: relative positions ``j - i`` and nothing else.

    Channels (``DISTANCE_CHANNELS = 8``), all in ``[0, 1]`` like attention: indicators of
    ``j - i`` equal to -2, -1, 0, 1, 2; ``j > i``; ``exp(-|j - i| / 4)``; ``|j - i| / T``. Like
    the OLA input it carries no token identity, so the adapter given it can only learn
    length- and offset-based attachment rules (e.g. "attach to the next word").

    Args:
        size: ``T``, the number of tokens.

    Returns:
        ``(8, T, T)`` float32.

    Raises:
        ValueError: ``size`` < 1.
    """
    if size < 1:
        raise ValueError(f"size must be at least 1; got {size}")
    positions = torch.arange(size, dtype=torch.float32)
    offset = positions[None, :] - positions[:, None]
    channels = [(offset == k).float() for k in _NEAR]
    channels += [(offset > 0).float(), torch.exp(-offset.abs() / 4.0), offset.abs() / size]
    return torch.stack(channels)
