"""A small diffusion UNet (the improved-diffusion pattern): attention at the downsample rates named
in `attention_resolutions`, `num_res_blocks` blocks per level."""

import torch
from torch import nn


class ResBlock(nn.Module):
    def __init__(self, channels, emb_channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.emb = nn.Linear(emb_channels, channels)

    def forward(self, x, emb):
        return x + self.conv(torch.relu(x)) + self.emb(emb)[:, :, None, None]


class AttentionBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.qkv = nn.Conv1d(channels, channels * 3, 1)

    def forward(self, x, emb):
        b, c, h, w = x.shape
        q, k, v = self.qkv(x.reshape(b, c, h * w)).chunk(3, dim=1)
        weights = torch.softmax(q.transpose(1, 2) @ k / c ** 0.5, dim=-1)
        return x + (v @ weights.transpose(1, 2)).reshape(b, c, h, w)


class UNetModel(nn.Module):
    def __init__(self, in_channels, model_channels, out_channels, num_res_blocks, attention_resolutions,
                 channel_mult=(1, 2, 4, 8)):
        super().__init__()
        self.input = nn.Conv2d(in_channels, model_channels, 3, padding=1)
        self.time_embed = nn.Linear(2, model_channels)
        self.blocks = nn.ModuleList()
        ch = model_channels
        for level, mult in enumerate(channel_mult):
            for _ in range(num_res_blocks):
                self.blocks.append(ResBlock(ch, model_channels))
                if 2 ** level in attention_resolutions:
                    self.blocks.append(AttentionBlock(ch))
        self.out = nn.Conv2d(ch, out_channels, 3, padding=1)

    def forward(self, x, timesteps):
        angles = timesteps.float()[:, None]
        emb = self.time_embed(torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1))
        h = self.input(x)
        for block in self.blocks:
            h = block(h, emb)
        return self.out(h)
