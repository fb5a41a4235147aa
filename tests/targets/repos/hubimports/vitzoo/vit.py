import torch
import torch.nn as nn


class PatchEmbed(nn.Module):
    def __init__(self, img_size=56, patch_size=8, embed_dim=32):
        super().__init__()
        self.img_size = (img_size, img_size)
        self.proj = nn.Conv2d(3, embed_dim, patch_size, patch_size)

    def forward(self, x):
        assert x.shape[-1] == self.img_size[1], "input size must be the patch embedder's"
        return self.proj(x).flatten(2).transpose(1, 2)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.mlp = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.norm(x)
        return x + self.mlp(self.attn(y, y, y)[0])


class VisionTransformer(nn.Module):
    def __init__(self, img_size=56, patch_size=8, embed_dim=32, depth=12):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.blocks = nn.ModuleList([Block(embed_dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        for block in self.blocks:
            x = block(x)
        return self.norm(x)[:, 0]
