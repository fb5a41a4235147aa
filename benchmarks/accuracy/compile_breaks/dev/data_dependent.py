"""A gated residual block whose forward branches on a tensor's value (data-dependent control flow)."""
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class Gated(nn.Module):
    def __init__(self, dim=48):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, 1)
        self.out = nn.Linear(dim, 4)

    def forward(self, x):
        h = self.proj(x)
        if self.gate(h).mean() > 0:
            h = h + x
        else:
            h = h - x
        return self.out(torch.tanh(h))


torch.manual_seed(1)
model = Gated().to(device)
compiled = torch.compile(model, fullgraph=False)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(2):
    x = torch.randn(8, 48, device=device)
    target = torch.randn(8, 4, device=device)
    loss = ((compiled(x) - target) ** 2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
