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
