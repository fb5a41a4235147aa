"""Named variants in a registry; the factory takes a variant name."""
import torch.nn as nn

VARIANTS = {
    "large": dict(dim=1024, depth=24),
    "tiny": dict(dim=16, depth=2),
}


class MLPNet(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Sequential(nn.Linear(dim, dim), nn.ReLU()) for _ in range(depth)])
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        return self.head(self.layers(x))


def create_model(variant):
    return MLPNet(**VARIANTS[variant])
