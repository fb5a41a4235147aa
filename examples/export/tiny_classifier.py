"""A tiny text classifier (embedding, one attention block, MLP, head): the model behind tiny_classifier.pt2.

`make_export.py` exports it with torch.export and saves `tiny_classifier.pt2`; `opscan
examples/export/tiny_classifier.pt2` then lists its ops without importing this file.
`build` is also a trace target, so tests compare the exported ops with a trace of the same model.
"""

import torch
from torch import nn
from torch.nn import functional as F


class TinyClassifier(nn.Module):
    def __init__(self, vocab: int = 64, width: int = 32, heads: int = 4, classes: int = 3) -> None:
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, width)
        self.norm = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        self.head = nn.Linear(width, classes)

    def forward(self, tokens):
        x = self.embed(tokens)
        b, t, w = x.shape
        q, k, v = self.qkv(self.norm(x)).split(w, dim=-1)
        q, k, v = (y.view(b, t, self.heads, w // self.heads).transpose(1, 2) for y in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, w))
        x = x + self.mlp(x)
        return self.head(x.mean(dim=1)).softmax(dim=-1)


def build(batch: int = 2, seq_len: int = 8):
    """Factory: the model and the keyword inputs of one forward call."""
    return TinyClassifier(), {"tokens": torch.zeros(batch, seq_len, dtype=torch.long)}
