"""A tabular model whose constructor takes a tuple of category counts: no name says its value."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, *, categories, num_continuous, dim=16, activation="relu"):
        super().__init__()
        self.embeds = nn.ModuleList(nn.Embedding(count, dim) for count in categories)
        self.cont = nn.Linear(num_continuous, dim)
        self.act = nn.GELU() if activation == "gelu" else nn.ReLU()
        self.head = nn.Linear(dim * (len(categories) + 1), 1)

    def forward(self, x_categ, x_cont):
        parts = [embed(x_categ[:, i]) for i, embed in enumerate(self.embeds)] + [self.cont(x_cont)]
        return self.head(self.act(torch.cat(parts, dim=-1)))
