"""A small transformer-style block that compiles into one graph: no graph break."""
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class Block(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


torch.manual_seed(4)
model = torch.compile(Block().to(device), backend="inductor")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    x = torch.randn(2, 8, 32, device=device)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
