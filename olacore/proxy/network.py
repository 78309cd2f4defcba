"""The visual proxy's network: a CIFAR-style ResNet-18 for OLA images (paper section 4.1)."""

from __future__ import annotations

import torch.nn as nn
import torchvision
from torchvision.models.resnet import BasicBlock, ResNet

__all__ = ["make_resnet18"]


class _NarrowResNet18(ResNet):
    """torchvision's ResNet-18 with every stage's channels scaled by ``width / 64``."""

    def __init__(self, width: int, num_classes: int) -> None:
        object.__setattr__(self, "_width", width)
        super().__init__(BasicBlock, [2, 2, 2, 2], num_classes=num_classes)
        self.fc = nn.Linear(8 * width, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):  # noqa: D401 - torchvision hook
        if planes == 64:  # first stage: the stem gives `width` channels, not 64
            self.inplanes = self._width
        return super()._make_layer(block, planes * self._width // 64, blocks, stride, dilate)


def make_resnet18(in_channels: int, num_classes: int, width: int = 64) -> nn.Module:
    """CIFAR-style ResNet-18 for OLA images (paper section 4.1), randomly initialised.

    torchvision's ``resnet18(weights=None)`` with a 3x3 stride-1 stem over ``in_channels`` maps (one per order) and
    no max-pool: ``(B, in_channels, S, S)`` float32 -> ``(B, num_classes)`` logits (one class per text). ``width``,
    a positive multiple of 4, scales the four stages' channels (``width, 2w, 4w, 8w``; 64 is exactly ResNet-18).
    """
    if width == 64:
        net = torchvision.models.resnet18(weights=None, num_classes=num_classes)
    else:
        net = _NarrowResNet18(width, num_classes)
    net.conv1 = nn.Conv2d(in_channels, width, kernel_size=3, stride=1, padding=1, bias=False)
    net.bn1 = nn.BatchNorm2d(width)
    net.maxpool = nn.Identity()
    return net
