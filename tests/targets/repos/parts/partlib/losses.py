"""The training loss: a scalar from the model's prediction and the target."""

import torch
from torch import nn


class PairLoss(nn.Module):
    """Mean squared error with a margin.

    The margin keeps small errors from counting, as the paper does. Everything here is plain
    arithmetic on the two tensors; nothing is learned. The docstring is long, as real ones are.
    """

    def __init__(self, margin: float = 0.1):
        super().__init__()
        self.margin = margin

    def forward(self, pred, target):
        error = (pred - target).abs()
        error = torch.where(error < self.margin, torch.zeros_like(error), error)
        return (error * error).mean()
