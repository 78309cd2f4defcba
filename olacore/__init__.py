"""olacore: Order-Level Attention (OLA) for the companion book of Liang et al., NeurIPS 2025.

The data flows one way, one module per step:

- texts: :mod:`olacore.texts` (similarity chunks), :mod:`olacore.corpora` (UD English EWT),
  :mod:`olacore.corpora` (UNER English-EWT, WNUT-17, SemEval-2010 Task 8);
- models: :mod:`olacore.zoo` (the offline zoo as data), :mod:`olacore.zoo_build` (building its
  folders), :mod:`olacore.loading` (any model, its fingerprint), :mod:`olacore.loading`
  (checks and fingerprint of a model folder), :mod:`olacore.loading` (random-init twins, saved
  once), :mod:`olacore.extraction` (head-averaged attention per layer, the bits of one text a
  pass, equal-length texts batched where a self-test allows);
- :mod:`olacore.ola`: OLA and rollout, the mathematics, no models; :mod:`olacore.alti` (with
  :mod:`olacore.extraction`, :mod:`olacore.alti`): ALTI from the real layer outputs;
- :mod:`olacore.pipeline`: attention -> OLA / ALTI -> token maps of named channels, cached in
  :mod:`olacore.store`; :mod:`olacore.channels` is the one vocabulary of channel names;
- :mod:`olacore.maps`: the typed :class:`Maps` every experiment consumes, built from token maps
  by :mod:`olacore.maps` (sink cleaning) and :mod:`olacore.texts` (resize, words, first
  sub-token);
- experiments: :mod:`olacore.similarity` (SSIM, Hits@k), :mod:`olacore.similarity`,
  :mod:`olacore.proxy` (the visual proxy, held-out and official protocols),
  :mod:`olacore.toa` (the Transferable OLA Adapter: ``data``, ``model``, ``train``), :mod:`olacore.zeroshot`
  (the prompting baseline), :mod:`olacore.toa.train`; :mod:`olacore.augment` holds the official
  augmentations once; trained networks are cached by :mod:`olacore.training`; work is spread
  over worker processes that live for a chapter by :mod:`olacore.workers` (joblib's loky, or
  Dask);
- reading results: :mod:`olacore.report` (every fixed rule, margin and goal),
  :mod:`olacore.paper` (the published numbers), :mod:`olacore.results` (each chapter's numbers),
  :mod:`olacore.report` (the paper's numbers beside ours: a chapter's ``paper_comparison`` and
  the report page, claim by claim), :mod:`olacore.plots`;
  :mod:`olacore.profiles` sizes every chapter (``settings(chapter, profile, device=...)``, the
  syntax and transfer chapters included), its classes checked by :mod:`olacore.settings`
  (pydantic); :mod:`olacore.settings` says where data, caches and devices are.

Code that only one chapter uses (its controls, order explorer, syntax and transfer readings, official-protocol
tables) is not here: it lives beside the chapters, in ``notebooks/chapter_code/``.

The names below are the small surface a notebook or a reader needs first.
"""

from olacore.channels import label as channel_label, order_channels
from olacore.loading import LoadedModel, load_model, model_fingerprint, model_kind
from olacore.maps import Maps, make_maps, model_maps
from olacore.ola import attention_rollout, mass_profile, order_level_attention, order_level_attention_bruteforce, rollout_from_orders
from olacore.pipeline import OLAResult, TokenMaps, cached_attention, cached_ola, token_maps
from olacore.similarity import hits_at_k, pairwise_ssim
from olacore.store import TensorStore
from olacore.zoo import ZOO

__version__ = "0.2.0"

__all__ = [
    # the mathematics
    "order_level_attention",
    "order_level_attention_bruteforce",
    "attention_rollout",
    "rollout_from_orders",
    "mass_profile",
    # models
    "ZOO",
    "LoadedModel",
    "load_model",
    "model_fingerprint",
    "model_kind",
    # the cached pipeline and the maps experiments consume
    "cached_attention",
    "cached_ola",
    "OLAResult",
    "token_maps",
    "TokenMaps",
    "order_channels",
    "channel_label",
    "Maps",
    "make_maps",
    "model_maps",
    "TensorStore",
    # similarity
    "pairwise_ssim",
    "hits_at_k",
]
