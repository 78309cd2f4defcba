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

__version__ = "0.1.0"

__all__ = [
    "attention_rollout",
    "order_level_attention",
    "order_level_attention_bruteforce",
    "rollout_from_orders",
]
