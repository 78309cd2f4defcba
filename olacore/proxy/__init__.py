"""The visual proxy of OLAS: a classifier of OLA images trained on some models, tested on another.

Paper section 4.1: each similarity text is one class; a CIFAR-style ResNet-18 (3x3 stride-1
stem, no max-pool, not pretrained, one input channel per order used) learns to tell the
texts apart from the OLA maps of the *source* models, and is tested on the maps of a
*target* model it never saw. High target accuracy means the maps of different models
share what identifies a text.

Where we depart from the official script ``olas_visual_model.py`` (and why):

- The official script (``olas_visual_model.py``) evaluates the target every 100 steps and
  reports the best target accuracy seen; its "restore the best weights" line is a no-op (it
  keeps ``model.state_dict()``, references to the live tensors, not a copy). Here the
  checkpoint is chosen on **held-out source maps** and the target is evaluated **once**, for
  every seed. The official protocol itself, with each of its quirks a named switch, is
  :mod:`olacore.proxy.official` (its runs cached there too, :func:`olacore.proxy.official.official_proxy_experiment`).
  Validation split (:func:`split_sources`): with two or more source models, the map of
  text ``i`` from source ``i mod S`` is held out, so every class keeps ``S - 1`` training
  maps, each source model contributes to training, and validation asks the same question
  as the test (recognise a text in a model not seen for that text). The price: training sees
  ``(S - 1) / S`` of the source maps (half of them with two sources), where the official
  script trains on all of them. With one source
  model no such split exists; validation then uses one fixed augmented view of the
  source maps (which only detects divergence, and says so in :class:`ProxyRun`).
- ``width`` scales the channels of every ResNet stage (64 = torchvision's ResNet-18);
  the CPU profile uses a narrower net and far fewer iterations.

A finished run is kept on disk (:class:`ProxyJob` through :func:`olacore.training.run_cached`,
keyed by the bytes of its maps, the whole :class:`ProxyConfig`, the seed and the device type),
so a re-executed chapter reads its runs back instead of training again;
:func:`proxy_experiment` spreads the runs it still has to train over worker processes.
"""

from olacore.proxy.experiment import (
    ProxyJob,
    cached_train_proxy,
    channel_set_label,
    leave_one_out,
    proxy_experiment,
    proxy_summary,
)
from olacore.proxy.network import make_resnet18
from olacore.proxy.official import (
    BATCHNORM_FREEZE_FRACTION,
    OFFICIAL_OPTIMISER,
    OfficialProxyJob,
    OfficialQuirks,
    OfficialRun,
    batchnorm_freeze_step,
    family_splits,
    official_proxy_experiment,
    official_view,
    train_official,
)
from olacore.proxy.train import ProxyConfig, ProxyRun, accuracy, split_sources, train_proxy

__all__ = [
    "make_resnet18", "ProxyConfig", "ProxyRun", "split_sources", "train_proxy", "accuracy",
    "ProxyJob", "cached_train_proxy", "leave_one_out", "channel_set_label", "proxy_experiment", "proxy_summary",
    "OfficialQuirks", "OfficialRun", "OFFICIAL_OPTIMISER", "BATCHNORM_FREEZE_FRACTION", "batchnorm_freeze_step",
    "official_view", "family_splits",
    "train_official", "OfficialProxyJob", "official_proxy_experiment",
]
