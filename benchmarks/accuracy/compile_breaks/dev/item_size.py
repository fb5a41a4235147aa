"""A pooling layer that reads a length with .item() and sizes a tensor from it."""
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class LengthPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 24)
        self.score = nn.Linear(24, 2)

    def forward(self, tokens, lengths):
        h = self.embed(tokens)
        longest = int(lengths.max().item())
        h = h[:, :longest]
        pooled = h.mean(dim=1)
        return self.score(pooled)


torch.manual_seed(2)
model = LengthPool().to(device)
model = torch.compile(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    tokens = torch.randint(0, 100, (4, 12), device=device)
    lengths = torch.tensor([12, 9, 7, 12], device=device)
    labels = torch.tensor([0, 1, 1, 0], device=device)
    loss = nn.functional.cross_entropy(model(tokens, lengths), labels)
    loss.backward()
    opt.step()
    opt.zero_grad()
