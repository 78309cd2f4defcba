"""The Transferable OLA Adapter (TOA, paper section 4.4): a small network that reads nothing but OLA.

An adapter trained on one model's OLA maps of a sentence predicts its POS tags, entities, relation or dependency
tree; applied unchanged to another model's maps, it measures how much the two models' OLA share (official code:
``models/adapters.py``, ``models/ola_model.py``, ``data_utils/``). Data flows down the list:

- :mod:`olacore.toa.data`: the input maps ``(C, T, T)`` (official: orders 1 and 2, raw and sink-cleaned,
  row-normalised, causal maps mirrored), the POS / NER / RE / DP labels in each model's own tokens, padded batches.
- :mod:`olacore.toa.model`: the axial-attention backbone (padding-masked) and the token, relation and DP heads.
- :mod:`olacore.toa.train`: the loss, a cached seeded job per adapter (checkpoint chosen on dev), prediction, metrics.

The syntax and transfer chapters' own readings are in ``notebooks/chapter_code/`` (``syntax``, ``transfer``).

The names a chapter needs are re-exported here (``from olacore.toa import make_job, ToaModel``).

Sizes are set by :mod:`olacore.profiles`, verdicts by :mod:`olacore.report`, the official augmentation by
:mod:`olacore.augment`.
"""

from olacore.toa.data import TOA_INPUT, collate, encode_items, input_spec, syntax_data
from olacore.toa.model import ToaModel
from olacore.toa.train import METRICS, adapter_loss, make_job, optimiser_for, train_adapters, train_epoch, word_tags

__all__ = ["TOA_INPUT", "collate", "encode_items", "input_spec", "syntax_data", "ToaModel", "METRICS", "adapter_loss",
           "make_job", "optimiser_for", "train_adapters", "train_epoch", "word_tags"]
