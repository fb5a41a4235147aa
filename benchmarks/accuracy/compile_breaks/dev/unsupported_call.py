"""A block that logs through a C builtin Dynamo cannot trace (os.getpid) and copies a list with copy.deepcopy."""
import os

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(20, 20)
        self.b = nn.Linear(20, 3)

    def forward(self, x):
        h = torch.relu(self.a(x))
        self.last_pid = os.getpid()
        return self.b(h)


torch.manual_seed(3)
model = Block().to(device)
model.compile()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for step in range(2):
    x = torch.randn(10, 20, device=device)
    y = torch.randint(0, 3, (10,), device=device)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
