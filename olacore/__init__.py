"""olacore: Order-Level Attention (OLA) for the companion book of Liang et al., NeurIPS 2025.

The data flows one way, one module per step:

texts (:mod:`olacore.data`) -> model zoo and attention extraction (:mod:`olacore.models`)
-> disk cache (:mod:`olacore.cache`) -> OLA and rollout (:mod:`olacore.ola`)
-> comparable maps: resize, word pooling, sink cleaning (:mod:`olacore.maps`)
-> experiments (:mod:`olacore.similarity`, :mod:`olacore.proxy`, :mod:`olacore.controls`,
:mod:`olacore.syntax`) -> notebooks -> book.
"""

from olacore.ola import (
    attention_rollout,
    order_level_attention,
    order_level_attention_bruteforce,
    rollout_from_orders,
)
from olacore.similarity import hits_at_k, pairwise_ssim

from olacore import profiles

__version__ = "0.1.0"

__all__ = [
    "attention_rollout",
    "order_level_attention",
    "order_level_attention_bruteforce",
    "rollout_from_orders",
    "pairwise_ssim",
    "hits_at_k",
]

# Model zoo, attention extraction and the attention/OLA cache (DESIGN.md sections 2, 4 and 7).
from olacore.models import (  # noqa: E402
    ZOO,
    Extraction,
    LoadedModel,
    ModelSpec,
    extract_attention,
    load_model,
    model_fingerprint,
    model_kind,
)
from olacore.cache import (  # noqa: E402
    CacheCorruptionWarning,
    OLAResult,
    TensorStore,
    cached_attention,
    cached_ola,
)

__all__ += [
    "ZOO",
    "Extraction",
    "LoadedModel",
    "ModelSpec",
    "extract_attention",
    "load_model",
    "model_fingerprint",
    "model_kind",
    "CacheCorruptionWarning",
    "OLAResult",
    "TensorStore",
    "cached_attention",
    "cached_ola",
]
