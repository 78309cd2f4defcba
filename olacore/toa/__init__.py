"""The Transferable OLA Adapter (TOA, paper section 4.4): an adapter that reads nothing but OLA.

Three modules, data flowing down the list (the chapters import from each directly):

- :mod:`olacore.toa.data`: the input maps (official: orders 1 and 2, raw and sink-cleaned, row-normalised, causal
  maps mirrored; any channel; the distance-only input), the POS / NER / RE / DP labels in each model's own tokens,
  padded batches.
- :mod:`olacore.toa.model`: the axial-attention backbone (padding-masked) and the token, relation and DP heads.
- :mod:`olacore.toa.train`: the loss, a cached seeded job per adapter (checkpoint chosen on dev), prediction, metrics.

The syntax and transfer chapters' own readings are in ``notebooks/chapter_code/`` (``syntax``, ``transfer``).

Sizes are in :mod:`olacore.profiles`, verdict rules in :mod:`olacore.report`, the official augmentation in
:mod:`olacore.augment`.
"""
