"""A small character-level language model (the project's own)."""
import torch
from torch import nn


class CharLM(nn.Module):
    def __init__(self, vocab_size=65, n_embd=32, n_layer=2, block_size=16):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[nn.Sequential(nn.LayerNorm(n_embd), nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                                    nn.Linear(4 * n_embd, n_embd)) for _ in range(n_layer)])
        self.head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        return self.head(self.blocks(x))
