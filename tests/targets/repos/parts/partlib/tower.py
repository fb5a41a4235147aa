"""The model: token embeddings, blocks, a head."""

from torch import nn

from partlib.layers.mlp import Mlp


def FeedForward(dim, mult=2):
    return nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * mult), nn.GELU(), nn.Linear(dim * mult, dim))


class Tower(nn.Module):
    def __init__(self, num_tokens, dim, depth):
        super().__init__()
        self.embed = nn.Embedding(num_tokens, dim)
        self.blocks = nn.ModuleList([nn.Sequential(FeedForward(dim), Mlp(dim)) for _ in range(depth)])
        self.head = nn.Linear(dim, num_tokens)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)
