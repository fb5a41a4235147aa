"""A language model with an optional cache (litgpt-style): its training forward needs no setup."""
from typing import Optional

import torch
import torch.nn as nn


class CachedLM(nn.Module):
    def __init__(self, vocab_size=128, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab_size)
        self.cache: Optional[torch.Tensor] = None

    def set_cache(self, batch_size):
        self.cache = torch.zeros(batch_size, 1)

    def forward(self, idx):
        x = torch.relu(self.mix(self.embed(idx)))
        if self.cache is not None:
            x = x + self.cache[:, :, None]
        return self.head(x)
