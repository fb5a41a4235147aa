"""A wrapper taking the model's body (x-transformers' TransformerWrapper(attn_layers=...)), and an
optional input the forward needs all the same (CoCa's image_tokens)."""

from torch import nn


class AttentionLayers(nn.Module):
    def __init__(self, dim, depth, heads=2):
        super().__init__()
        self.dim = dim
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(dim, heads, dim * 2, batch_first=True)
                                    for _ in range(depth))

    def forward(self, x, context=None):
        for block in self.blocks:
            x = block(x)
        return x


class TransformerWrapper(nn.Module):
    def __init__(self, *, num_tokens, max_seq_len, attn_layers: AttentionLayers):
        super().__init__()
        self.max_seq_len = max_seq_len
        self.emb = nn.Embedding(num_tokens, attn_layers.dim)
        self.attn_layers = attn_layers
        self.to_logits = nn.Linear(attn_layers.dim, num_tokens)

    def forward(self, x, image_tokens=None):
        h = self.attn_layers(self.emb(x))
        pooled = image_tokens.mean(dim=1, keepdim=True)   # fails on None: the forward needs it
        return self.to_logits(h + pooled)


class Seq2Seq(nn.Module):
    """Builds the wrapper itself (so the wrapper is not a root class), and needs a name opscan cannot make."""

    def __init__(self, dim, tokenizer_name):
        super().__init__()
        self.tokenizer_name = tokenizer_name
        self.net = TransformerWrapper(num_tokens=16, max_seq_len=8, attn_layers=AttentionLayers(dim, 1))

    def forward(self, x):
        return self.net(x)
