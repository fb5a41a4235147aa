"""A diffusion transformer whose class is built only by size functions gathered in a registry (DiT-style)."""
import math

import torch
import torch.nn as nn


class PatchEmbed(nn.Module):
    def __init__(self, img_size, patch_size, in_chans, embed_dim):
        super().__init__()
        self.img_size = (img_size, img_size)   # the model itself keeps no image size
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, patch_size, patch_size)

    def forward(self, x):
        assert x.shape[-1] == self.img_size[1], f"Input width ({x.shape[-1]}) doesn't match model ({self.img_size[1]})"
        return self.proj(x).flatten(2).transpose(1, 2)


class TimestepEmbedder(nn.Module):
    def __init__(self, hidden_size, frequencies=16):
        super().__init__()
        self.frequencies = frequencies
        self.mlp = nn.Sequential(nn.Linear(frequencies, hidden_size), nn.SiLU(), nn.Linear(hidden_size, hidden_size))

    def forward(self, t):
        half = self.frequencies // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
        args = t[:, None].float() * freqs[None]
        return self.mlp(torch.cat([torch.cos(args), torch.sin(args)], dim=-1))


class LabelEmbedder(nn.Module):
    def __init__(self, num_classes, hidden_size):
        super().__init__()
        self.num_classes = num_classes
        self.embedding_table = nn.Embedding(num_classes + 1, hidden_size)

    def forward(self, labels):
        return self.embedding_table(labels)


class Block(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size, elementwise_affine=False)
        self.attn = nn.MultiheadAttention(hidden_size, num_heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(hidden_size, 2 * hidden_size), nn.GELU(), nn.Linear(2 * hidden_size, hidden_size))
        self.modulation = nn.Linear(hidden_size, 2 * hidden_size)

    def forward(self, x, c):
        shift, scale = self.modulation(c).chunk(2, dim=1)
        h = self.norm(x) * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm(x))


class TinyDiT(nn.Module):
    def __init__(self, input_size=16, patch_size=2, in_channels=4, hidden_size=64, depth=12, num_heads=4,
                 num_classes=10):
        super().__init__()
        self.in_channels = in_channels
        self.patch_size = patch_size
        self.x_embedder = PatchEmbed(input_size, patch_size, in_channels, hidden_size)
        self.t_embedder = TimestepEmbedder(hidden_size)
        self.y_embedder = LabelEmbedder(num_classes, hidden_size)
        self.pos_embed = nn.Parameter(torch.zeros(1, self.x_embedder.num_patches, hidden_size), requires_grad=False)
        self.blocks = nn.ModuleList([Block(hidden_size, num_heads) for _ in range(depth)])
        self.final = nn.Linear(hidden_size, patch_size * patch_size * in_channels)

    def forward(self, x, t, y):
        x = self.x_embedder(x) + self.pos_embed
        c = self.t_embedder(t) + self.y_embedder(y)
        for block in self.blocks:
            x = block(x, c)
        return self.final(x)


def TinyDiT_L_2(**kwargs):
    return TinyDiT(depth=24, hidden_size=96, patch_size=2, num_heads=6, **kwargs)


def TinyDiT_S_4(**kwargs):
    return TinyDiT(depth=12, hidden_size=32, patch_size=4, num_heads=2, **kwargs)


def TinyDiT_S_2(**kwargs):
    return TinyDiT(depth=12, hidden_size=32, patch_size=2, num_heads=2, **kwargs)


TinyDiT_models = {
    "TinyDiT-L/2": TinyDiT_L_2,
    "TinyDiT-S/4": TinyDiT_S_4,
    "TinyDiT-S/2": TinyDiT_S_2,
}
