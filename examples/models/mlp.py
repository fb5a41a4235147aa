"""A two-layer MLP: the smallest complete train step (forward, loss, backward, AdamW)."""

import torch
from torch import nn


class TinyMLP(nn.Module):
    """Linear -> GELU -> Linear; returns the output tensor (opscan sums it for a loss)."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.up = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        return self.down(self.act(self.up(x)))


class RegressionMLP(nn.Module):
    """TinyMLP with an MSE loss: returns the scalar loss itself."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.mlp = TinyMLP(width)

    def forward(self, x, target):
        return nn.functional.mse_loss(self.mlp(x), target)


def make_mlp(batch: int = 4):
    """Factory returning (module, example inputs as a dict of keyword arguments)."""
    return RegressionMLP(16), {"x": torch.randn(batch, 16), "target": torch.randn(batch, 16)}
