"""A small classifier: token embeddings, a transformer encoder layer, a linear head."""

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, vocab: int = 512, dim: int = 64, classes: int = 10) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.block = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=128, batch_first=True)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(self.embed(tokens)).mean(dim=1))
