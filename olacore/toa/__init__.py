"""The Transferable OLA Adapter (TOA, paper section 4.4): an adapter that reads nothing but OLA.

One module per job, data flowing down the list (the chapters import from each directly):

- :mod:`olacore.toa.data`: the adapter input (official: orders 1 and 2, raw and sink-cleaned,
  row-normalised, CLM maps mirrored), any channel of the vocabulary, the distance-only input,
  the syntax grid's named inputs.
- :mod:`olacore.toa.data`: POS / NER / RE / DP data in each model's own tokenisation.
- :mod:`olacore.toa.model`: the axial-attention backbone (padding-masked) and its config.
- :mod:`olacore.toa.model`: token, relation and biaffine dependency heads.
- :mod:`olacore.toa.data`, :mod:`olacore.toa.train`: batches, predictions, scores.
- :mod:`olacore.toa.train`: the loss, one epoch, cached training jobs, trained adapters.
- :mod:`olacore.toa.experiments`: the syntax chapter's data; :mod:`olacore.toa.analysis`: its readings.
- :mod:`olacore.toa.transfer`: the transfer chapter's data, scores and random-init control;
  :mod:`olacore.toa.transfer_bounds`: its lower bounds (majority class, zero-shot prompting);
  :mod:`olacore.toa.transfer_report`: gaps, verdicts, the paper's table and figures;
  :mod:`olacore.toa.transfer_similarity`: similarity vs transfer.

Every size (adapter, training, data) is in :mod:`olacore.profiles` (``settings("syntax", ...)``,
``settings("transfer", ...)``).
"""
