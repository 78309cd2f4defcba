"""The Transferable OLA Adapter (TOA, paper section 4.4): an adapter that reads nothing but OLA.

Five modules, by idea, data flowing down the list (the chapters import from each directly):

- :mod:`olacore.toa.data`: what an adapter reads and predicts: its input maps (official: orders
  1 and 2, raw and sink-cleaned, row-normalised, causal maps mirrored; any channel of the
  vocabulary; the distance-only input), the POS / NER / RE / DP labels in each model's own
  tokens, padded batches.
- :mod:`olacore.toa.model`: the network: the axial-attention backbone (padding-masked) and the
  token, relation and biaffine dependency heads.
- :mod:`olacore.toa.train`: the loss, one epoch, a cached seeded job per adapter (checkpoint
  chosen on dev), greedy prediction and the task metrics.
- :mod:`olacore.toa.syntax`: the syntax chapter's data sets and the readings of its grid.
- :mod:`olacore.toa.transfer`: the transfer chapter's data, bounds (random init, majority,
  zero-shot prompting) and readings (gaps, verdicts, the paper's table, similarity vs transfer).

Every size (adapter, training, data) is in :mod:`olacore.profiles` (``settings("syntax", ...)``,
``settings("transfer", ...)``); every verdict rule in :mod:`olacore.verdicts`; the official
augmentation in :mod:`olacore.augment`.
"""
