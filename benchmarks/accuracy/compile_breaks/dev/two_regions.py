"""An encoder and a head compiled apart; the encoder prints and branches on a value."""
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 3, padding=1)
        self.norm = nn.BatchNorm1d(8)

    def forward(self, x):
        h = self.norm(self.conv(x))
        print("encoded")
        if h.abs().max() > 100:
            h = h.clamp(-100, 100)
        return h.flatten(1)


torch.manual_seed(6)
encoder = torch.compile(Encoder().to(device))
head = torch.compile(nn.Linear(8 * 16, 2).to(device), dynamic=True)
opt = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=1e-3)
for step in range(2):
    x = torch.randn(3, 4, 16, device=device)
    y = torch.randint(0, 2, (3,), device=device)
    loss = nn.functional.cross_entropy(head(encoder(x)), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
