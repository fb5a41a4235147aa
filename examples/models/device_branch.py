"""Code that branches on the device type: the trace follows the device it imitates."""

import torch
from torch import nn


class DeviceBranch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        if y.device.type == "cuda":
            return torch.relu(y)
        if y.device.type == "neuron":
            return torch.tanh(y)
        return torch.sigmoid(y)


def make_device_branch():
    return DeviceBranch(), (torch.randn(2, 8),)
