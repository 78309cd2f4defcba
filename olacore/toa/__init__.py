"""The Transferable OLA Adapter (TOA, paper section 4.4): a small network that reads nothing but OLA.

An adapter trained on one model's OLA maps of a sentence predicts its POS tags, entities, relation or dependency
tree; applied unchanged to another model's maps, it measures how much the two models' OLA share (official code:
``models/adapters.py``, ``models/ola_model.py``, ``data_utils/``). Data flows down the list:

- :mod:`olacore.toa.data`: the input maps ``(C, T, T)`` (official: orders 1 and 2, raw and sink-cleaned,
  row-normalised, causal maps mirrored), the POS / NER / RE / DP labels in each model's own tokens, padded batches.
- :mod:`olacore.toa.model`: the axial-attention backbone (padding-masked) and the token, relation and DP heads.
- :mod:`olacore.toa.train`: the loss, a cached seeded job per adapter (checkpoint chosen on dev), prediction, metrics.

The syntax and transfer chapters' own readings are in ``notebooks/chapter_code/`` (``syntax``, ``transfer``).

Sizes are set by :mod:`olacore.profiles`, verdicts by :mod:`olacore.report`, the official augmentation by
:mod:`olacore.augment`.
"""
