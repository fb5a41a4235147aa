"""Layers holding raw Parameters (used through F.linear), as SIREN networks do: no nn.Linear anywhere."""

import torch
import torch.nn.functional as F
from torch import nn


class Sine(nn.Module):
    def forward(self, x):
        return torch.sin(30.0 * x)


class SineLayer(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.dim_in = dim_in
        self.weight = nn.Parameter(torch.randn(dim_out, dim_in) / dim_in)
        self.bias = nn.Parameter(torch.zeros(dim_out))
        self.act = Sine()

    def forward(self, x):
        return self.act(F.linear(x, self.weight, self.bias))


class SineNet(nn.Module):
    def __init__(self, dim_in, dim_hidden, dim_out, num_layers):
        super().__init__()
        dims = [dim_in] + [dim_hidden] * num_layers
        self.layers = nn.ModuleList(SineLayer(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.last = SineLayer(dim_hidden, dim_out)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.last(x)
