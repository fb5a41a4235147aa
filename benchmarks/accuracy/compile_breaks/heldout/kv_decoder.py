"""Held-out: greedy decoding with a compiled step that grows a KV cache and logs its time."""
import time

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class Decoder(nn.Module):
    def __init__(self, vocab=64, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, token, cache_k, cache_v):
        h = self.embed(token)
        keys = torch.cat([cache_k, self.k(h)], dim=1)
        values = torch.cat([cache_v, self.v(h)], dim=1)
        started = time.time()
        scores = (self.q(h) @ keys.transpose(1, 2)).softmax(-1)
        self.elapsed = time.time() - started
        return self.out(scores @ values), keys, values


torch.manual_seed(8)
decoder = Decoder().to(device).eval()
step = torch.compile(decoder, fullgraph=False, mode="reduce-overhead")
token = torch.zeros(1, 1, dtype=torch.long, device=device)
cache_k = torch.zeros(1, 0, 32, device=device)
cache_v = torch.zeros(1, 0, 32, device=device)
with torch.no_grad():
    for _ in range(4):
        logits, cache_k, cache_v = step(token, cache_k, cache_v)
        token = logits[:, -1:].argmax(-1)
