"""olacore: Order-Level Attention (OLA) for the companion book of Liang et al., NeurIPS 2025.

The data flows one way, one module per step:

texts (:mod:`olacore.data`) -> model zoo and attention extraction (:mod:`olacore.models`)
-> disk cache (:mod:`olacore.cache`) -> OLA and rollout (:mod:`olacore.ola`)
-> comparable maps: resize, word pooling, sink cleaning (:mod:`olacore.maps`)
-> experiments (:mod:`olacore.similarity`, :mod:`olacore.proxy`, :mod:`olacore.controls`,
:mod:`olacore.syntax`) -> notebooks -> book.
"""

from olacore import profiles
from olacore.cache import CacheCorruptionWarning, OLAResult, TensorStore, cached_attention, cached_ola
from olacore.models import (
    ZOO,
    Extraction,
    LoadedModel,
    ModelSpec,
    extract_attention,
    load_model,
    model_fingerprint,
    model_kind,
)
from olacore.ola import (
    attention_rollout,
    order_level_attention,
    order_level_attention_bruteforce,
    rollout_from_orders,
)
from olacore.similarity import hits_at_k, pairwise_ssim

__version__ = "0.1.0"

__all__ = [
    # the mathematics (olacore.ola)
    "attention_rollout",
    "order_level_attention",
    "order_level_attention_bruteforce",
    "rollout_from_orders",
    # model zoo and extraction (olacore.models)
    "ZOO",
    "Extraction",
    "LoadedModel",
    "ModelSpec",
    "extract_attention",
    "load_model",
    "model_fingerprint",
    "model_kind",
    # cache of attention and OLA (olacore.cache)
    "CacheCorruptionWarning",
    "OLAResult",
    "TensorStore",
    "cached_attention",
    "cached_ola",
    # similarity (olacore.similarity)
    "pairwise_ssim",
    "hits_at_k",
    "profiles",
]
