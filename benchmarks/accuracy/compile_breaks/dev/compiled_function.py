"""A compiled loss function (decorator with options) that converts a tensor to a Python list."""
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


@torch.compile(mode="reduce-overhead")
def weighted_loss(logits, targets, weights):
    per_class = weights.tolist()
    loss = nn.functional.cross_entropy(logits, targets, reduction="none")
    return (loss * per_class[0]).mean()


torch.manual_seed(5)
model = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 5)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
weights = torch.ones(5, device=device)
for step in range(2):
    x = torch.randn(6, 12, device=device)
    y = torch.randint(0, 5, (6,), device=device)
    loss = weighted_loss(model(x), y, weights)
    loss.backward()
    opt.step()
    opt.zero_grad()
