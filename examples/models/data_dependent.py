"""Data-dependent code: `.item()` and `nonzero` in the forward (a token router, MoE style)."""

import torch
from torch import nn


class Router(nn.Module):
    def __init__(self, width: int = 16, experts: int = 4) -> None:
        super().__init__()
        self.gate = nn.Linear(width, experts)
        self.experts = nn.ModuleList(nn.Linear(width, width) for _ in range(experts))

    def forward(self, x):
        choice = self.gate(x).argmax(dim=-1)
        out = torch.zeros_like(x)
        for index, expert in enumerate(self.experts):
            rows = (choice == index).nonzero().squeeze(-1)       # dynamic shape
            if rows.numel() == 0:
                continue
            out = out.index_add(0, rows, expert(x[rows]))
        scale = x.abs().max().item()                            # a Python float from a tensor
        return out / (1.0 + scale)


def make_router(batch: int = 8):
    return Router(), (torch.randn(batch, 16),)


class Halving(nn.Module):
    """A loop whose exit depends on tensor values: stand-ins never end it, the trace says so."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        y = self.proj(x)
        while y.abs().max().item() > 0.5:
            y = y * 0.5
        return y


def make_halving():
    return Halving(), (torch.randn(4, 16),)
