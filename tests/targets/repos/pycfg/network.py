"""A decoder-only language model configured by configs/default.py."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width, heads, ratio):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, ratio * width), nn.GELU(),
                                 nn.Linear(ratio * width, width))

    def forward(self, x):
        h = self.norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(x)


class LanguageModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        cfg = config.model
        self.embed = nn.Embedding(config.model.vocab_size, config.model.width)
        self.blocks = nn.ModuleList([Block(cfg.width, cfg.num_heads, cfg.mlp_ratio) for _ in range(config.model.depth)])
        self.out = nn.Linear(config.model.width, config.model.vocab_size)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.out(x)
