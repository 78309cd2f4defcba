"""The visual proxy of OLAS: a classifier of OLA images trained on some models, tested on another.

Paper section 4.1: each similarity text is one class; a CIFAR-style ResNet-18 (3x3 stride-1 stem, no max-pool,
not pretrained, one input channel per order used) learns the texts from the OLA maps of the *source* models and
is tested on the maps of a *target* model it never saw.

Departures from the official ``olas_visual_model.py``:

- The official script evaluates the target every 100 steps and reports the best target accuracy seen (its
  "restore the best weights" line is a no-op: ``model.state_dict()`` keeps references, not a copy). Here the
  checkpoint is chosen on **held-out source maps** and the target is evaluated **once**, for every seed. The
  official protocol, each quirk a named switch, is :mod:`olacore.proxy.official`.
- Validation (:func:`split_sources`): with ``S >= 2`` source models, the map of text ``i`` from source
  ``i mod S`` is held out, so training sees ``(S - 1) / S`` of the source maps (the official script: all). With
  one source, validation is a fixed augmented view of its maps, which only detects divergence.
- ``width`` scales the channels of every ResNet stage (64 = torchvision's ResNet-18; the CPU profile is narrower).

Both protocols train through one loop, :func:`olacore.proxy.loop.fit`. Runs are kept on disk (:class:`ProxyJob`, one
per run); :func:`proxy_experiment` trains the missing ones in worker processes.
"""

from olacore.proxy.experiment import (
    ProxyJob,
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
from olacore.proxy.loop import accuracy, fit
from olacore.proxy.train import ProxyConfig, ProxyRun, split_sources, train_proxy

__all__ = [
    "make_resnet18", "fit", "ProxyConfig", "ProxyRun", "split_sources", "train_proxy", "accuracy",
    "ProxyJob", "leave_one_out", "channel_set_label", "proxy_experiment", "proxy_summary",
    "OfficialQuirks", "OfficialRun", "OFFICIAL_OPTIMISER", "BATCHNORM_FREEZE_FRACTION", "batchnorm_freeze_step",
    "official_view", "family_splits",
    "train_official", "OfficialProxyJob", "official_proxy_experiment",
]
