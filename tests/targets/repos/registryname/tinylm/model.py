"""The model takes a Config; the class default (n_head 7 for n_embd 4096) cannot build it."""

import torch
from torch import nn

from tinylm.config import Config


class GPT(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        assert config.n_embd % config.n_head == 0, "n_embd must be divisible by n_head"
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.h = nn.ModuleList(nn.TransformerEncoderLayer(config.n_embd, config.n_head, 2 * config.n_embd,
                                                          batch_first=True) for _ in range(config.n_layer))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx)
        for block in self.h:
            x = block(x)
        return self.lm_head(x)
