"""A hierarchical vision backbone: four stages, each halving the resolution and widening the features."""
import torch
from torch import nn


class Stage(nn.Module):
    def __init__(self, dim_in, dim_out, depth=2):
        super().__init__()
        self.down = nn.Conv2d(dim_in, dim_out, kernel_size=2, stride=2)
        self.blocks = nn.Sequential(*[nn.Sequential(nn.Conv2d(dim_out, dim_out, 3, padding=1, groups=dim_out),
                                                    nn.BatchNorm2d(dim_out), nn.GELU()) for _ in range(depth)])

    def forward(self, x):
        return self.blocks(self.down(x))


class StagedNet(nn.Module):
    def __init__(self, in_chans=3, dims=(16, 32, 64, 128), num_classes=10):
        super().__init__()
        self.stem = nn.Conv2d(in_chans, dims[0], kernel_size=3, padding=1)
        self.stages = nn.ModuleList([Stage(a, b) for a, b in zip((dims[0],) + tuple(dims[:-1]), dims)])
        self.norm = nn.LayerNorm(dims[-1])
        self.head = nn.Linear(dims[-1], num_classes)

    def forward(self, images):
        x = self.stem(images)
        for stage in self.stages:
            x = stage(x)
        return self.head(self.norm(x.mean(dim=(2, 3))))
