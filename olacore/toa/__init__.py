"""The Transferable OLA Adapter (TOA, paper section 4.4): an adapter that reads nothing but OLA.

One module per job, data flowing down the list:

- :mod:`olacore.toa.inputs`: the adapter input (official: orders 1 and 2, raw and sink-cleaned,
  row-normalised, CLM maps mirrored), any channel of the vocabulary, the distance-only input.
- :mod:`olacore.augment` (outside this package): the official training augmentations (fake sinks, noise).
- :mod:`olacore.toa.tasks`: POS / NER / RE / DP data in each model's own tokenisation.
- :mod:`olacore.toa.adapter`: the axial-attention backbone (padding-masked) and its config.
- :mod:`olacore.toa.heads`: token, relation and biaffine dependency heads.
- :mod:`olacore.toa.batching`, :mod:`olacore.toa.evaluate`: batches, predictions, scores.
- :mod:`olacore.toa.train`: cached training jobs, trained adapters, evaluation on any model.
- :mod:`olacore.toa.config`: profile settings; :mod:`olacore.toa.experiments`: chapter-level
  functions (syntax grid, tables, POS, transfer).
- :mod:`olacore.toa.transfer_settings`: the transfer chapter's sizes per profile;
  :mod:`olacore.toa.transfer`: its matrices (every adapter on every model of its kind, the
  random-init control); :mod:`olacore.toa.transfer_bounds`: its lower bounds (majority class,
  zero-shot prompting); :mod:`olacore.toa.transfer_report`: gaps, verdicts, the paper's table
  and figures; :mod:`olacore.toa.transfer_similarity`: similarity vs transfer.
"""

from olacore.toa.adapter import AdapterConfig
from olacore.augment import Augmentation
from olacore.toa.config import SYNTAX_GRID, ToaSettings, toa_settings
from olacore.toa.inputs import InputSpec, build_input, distance_input, official_sink_mask, toa_channels
from olacore.toa.tasks import TaskData, build_task_data
from olacore.toa.train import AdapterJob, TrainConfig, TrainedAdapter, make_job, train_adapters

__all__ = [
    "AdapterConfig",
    "Augmentation",
    "InputSpec",
    "toa_channels",
    "build_input",
    "distance_input",
    "official_sink_mask",
    "TaskData",
    "build_task_data",
    "TrainConfig",
    "AdapterJob",
    "TrainedAdapter",
    "make_job",
    "train_adapters",
    "ToaSettings",
    "toa_settings",
    "SYNTAX_GRID",
]
