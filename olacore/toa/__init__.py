"""The Transferable OLA Adapter (TOA, paper section 4.4): a small network that reads nothing but OLA; trained on
one model's maps, applied unchanged to another's (official: ``models/adapters.py``, ``models/ola_model.py``).

:mod:`olacore.toa.data` (inputs, labels, batches), :mod:`olacore.toa.model` (the network), :mod:`olacore.toa.train`
(training, prediction, metrics); the names a chapter needs are re-exported here.
"""

from olacore.toa.data import TOA_INPUT, collate, encode_items, input_spec, syntax_data
from olacore.toa.model import ToaModel
from olacore.toa.train import METRICS, adapter_loss, make_job, optimiser_for, train_adapters, train_epoch, word_tags

__all__ = ["TOA_INPUT", "collate", "encode_items", "input_spec", "syntax_data", "ToaModel", "METRICS", "adapter_loss",
           "make_job", "optimiser_for", "train_adapters", "train_epoch", "word_tags"]
