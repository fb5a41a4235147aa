"""Activations with a common interface, so that they can be swapped (the timm/geffnet pattern).

Every one takes `inplace`, even where it is not used. None holds a parameter.
"""

import torch
from torch import nn


def swish(x, inplace: bool = False):
    """Swish, also known as SiLU: x * sigmoid(x)."""
    return x.mul_(x.sigmoid()) if inplace else x.mul(x.sigmoid())


class Swish(nn.Module):
    """The module form of `swish`.

    Kept apart from torch.nn.SiLU for its `inplace` argument, which every activation of this
    repository takes, so that a model's config can name any of them the same way. The docstring is
    long, as real ones are, which makes the class look longer than the model it is a part of.
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return swish(x, self.inplace)

    def extra_repr(self):
        return f"inplace={self.inplace}"


class HardTanh(nn.Module):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return torch.clamp(x, -1.0, 1.0)
