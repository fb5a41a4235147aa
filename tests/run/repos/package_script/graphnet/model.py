import torch
from torch import nn


class GraphEncoder(nn.Module):
    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.weight = nn.Linear(features, hidden)

    def forward(self, x, adj):
        return torch.mm(adj, self.weight(x)).relu()
