import torch.nn as nn


class AttnNet(nn.Module):
    def __init__(self, dim, tokenizer_name):
        super().__init__()
        self.tokenizer_name = tokenizer_name
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x + self.attn(x, x, x, need_weights=False)[0])
