"""Base classes of the repository's models, configured by nested dataclasses (the torchtitan pattern)."""

from dataclasses import dataclass

import torch
from torch import nn

from tinytitan import kernels  # noqa: F401 - GPU kernels, unused on this path


class BaseModel(nn.Module):
    @dataclass(kw_only=True)
    class Config:
        pass


@dataclass(kw_only=True)
class LayerConfig:
    dim: int
    hidden: int


class Layer(nn.Module):
    def __init__(self, config: LayerConfig):
        super().__init__()
        self.up = nn.Linear(config.dim, config.hidden)
        self.down = nn.Linear(config.hidden, config.dim)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


class Decoder(BaseModel):
    @dataclass(kw_only=True)
    class Config(BaseModel.Config):
        dim: int
        vocab_size: int
        layers: list

    def __init__(self, config: Config):
        super().__init__()
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList([Layer(c) for c in config.layers])
        self.output = nn.Linear(config.dim, config.vocab_size)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.output(h)
