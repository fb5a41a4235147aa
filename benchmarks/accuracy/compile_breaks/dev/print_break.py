"""A classifier whose forward prints a debug line: one graph break per print."""
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 64))
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        h = self.body(x)
        print("hidden norm computed")
        return self.head(h)


torch.manual_seed(0)
model = torch.compile(Classifier().to(device))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(16, 32, device=device)
    y = torch.randint(0, 10, (16,), device=device)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
