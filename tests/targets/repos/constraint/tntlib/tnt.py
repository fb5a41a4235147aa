"""A vision model whose constructor asserts a constraint between two sizes (transformer-in-transformer)."""

import torch
from torch import nn


class TNT(nn.Module):
    def __init__(self, *, image_size, patch_dim, patch_size, pixel_size, depth, num_classes, channels=3):
        super().__init__()
        assert image_size % patch_size == 0, 'image size must be divisible by patch size'
        assert patch_size % pixel_size == 0, 'patch size must be divisible by pixel size for now'
        self.patch_size = patch_size
        self.to_patch = nn.Conv2d(channels, patch_dim, kernel_size=patch_size, stride=patch_size)
        self.pixels = nn.Conv2d(patch_dim, patch_dim, kernel_size=1)
        self.layers = nn.ModuleList([nn.Linear(patch_dim, patch_dim) for _ in range(depth)])
        self.head = nn.Linear(patch_dim, num_classes)

    def forward(self, img):
        x = self.pixels(self.to_patch(img)).flatten(2).transpose(1, 2)
        for layer in self.layers:
            x = x + torch.relu(layer(x))
        return self.head(x.mean(dim=1))
