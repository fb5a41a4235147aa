"""Held-out: a tiny mixture-of-experts layer with top-1 routing by boolean masks, compiled whole."""
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class MoE(nn.Module):
    def __init__(self, dim=32, experts=4):
        super().__init__()
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(dim, 2 * dim), nn.SiLU(), nn.Linear(2 * dim, dim))
                                     for _ in range(experts))

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        choice = self.router(flat).argmax(dim=-1)
        out = torch.zeros_like(flat)
        for i, expert in enumerate(self.experts):
            picked = (choice == i).nonzero(as_tuple=True)[0]
            if picked.numel() == 0:
                continue
            out[picked] = expert(flat[picked])
        return out.reshape(x.shape)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 32)
        self.moe = MoE()
        self.head = nn.Linear(32, 50)

    def forward(self, tokens):
        return self.head(self.moe(self.embed(tokens)))


torch.manual_seed(7)
model = torch.compile(Model().to(device))
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(2):
    tokens = torch.randint(0, 50, (2, 10), device=device)
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 50), tokens.reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad()
