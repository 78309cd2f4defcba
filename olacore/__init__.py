"""olacore: Order-Level Attention (OLA) for the companion book of Liang et al., NeurIPS 2025.

The data flows one way, one module per idea:

- texts and data: :mod:`olacore.texts` (the similarity texts; words and sub-tokens aligned),
  :mod:`olacore.corpora` (UD English EWT, UNER English-EWT, WNUT-17, SemEval-2010 Task 8);
- models: :mod:`olacore.zoo` (the offline zoo as data; ``scripts/build_zoo.py`` builds its folders),
  :mod:`olacore.loading` (any model, its folder checks and fingerprint, random-init twins);
- :mod:`olacore.extraction`: head-averaged attention per layer of real forward passes (equal-length texts batched
  where a self-test allows), with the hooks ALTI reads per architecture;
- :mod:`olacore.ola`: OLA and rollout, the mathematics, no models; :mod:`olacore.alti`: ALTI from the real
  layer outputs;
- :mod:`olacore.pipeline`: attention -> OLA / ALTI -> token maps of named channels (:mod:`olacore.channels`, the
  one vocabulary of channel names), cached in :mod:`olacore.store` (checksummed, atomic, keyed by the code);
- :mod:`olacore.maps`: the typed :class:`Maps` every experiment consumes (sink cleaning, resizing, words);
- experiments: :mod:`olacore.similarity` (SSIM, Hits@k, retrieval), :mod:`olacore.proxy` (the visual proxy,
  held-out and official protocols), :mod:`olacore.augment` (the official augmentations), :mod:`olacore.toa`
  (the Transferable OLA Adapter: ``data``, ``model``, ``train``); trained networks are cached by
  :mod:`olacore.training`, work spread over worker processes that live for a chapter by :mod:`olacore.workers`
  (joblib's loky, or Dask);
- reading results: :mod:`olacore.report` (the published numbers, the chapters' fixed rules, margins and goal, the
  paper beside ours), :mod:`olacore.results` (each chapter's numbers and phase times), :mod:`olacore.plots` (figures
  and tables); :mod:`olacore.profiles` sizes every chapter (``settings(chapter, profile, device=...)``, from the
  tables of ``profiles.json``);
  :mod:`olacore.settings` says where data, caches and devices are, and checks settings classes (pydantic);
- the command line: ``python -m olacore`` (:mod:`olacore.__main__`: a text's orders drawn or printed, the zoo
  listed).

Code that only one chapter uses (its order explorer, retrieval heatmaps, proxy summary, controls, syntax and
transfer readings, the zero-shot prompting baseline, official-protocol tables, the report page's table and
reproduction rule) is not here: it lives beside the chapters, in
``notebooks/chapter_code/``.

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
    "order_level_attention", "order_level_attention_bruteforce", "attention_rollout", "rollout_from_orders",
    "mass_profile",
    # models
    "ZOO", "LoadedModel", "load_model", "model_fingerprint", "model_kind",
    # the cached pipeline and the maps experiments consume
    "cached_attention", "cached_ola", "OLAResult", "token_maps", "TokenMaps", "order_channels", "channel_label",
    "Maps", "make_maps", "model_maps", "TensorStore",
    # similarity
    "pairwise_ssim", "hits_at_k",
]
