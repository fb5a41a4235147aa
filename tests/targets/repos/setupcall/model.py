"""An inference model with a KV cache (gpt-fast-style): its forward asserts the caches were set up."""
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class ModelArgs:
    block_size: int = 128
    vocab_size: int = 256
    n_layer: int = 4
    n_head: int = 2
    dim: int = 32


class KVCache(nn.Module):
    def __init__(self, max_batch_size, max_seq_length, n_heads, head_dim):
        super().__init__()
        shape = (max_batch_size, n_heads, max_seq_length, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape))
        self.register_buffer("v_cache", torch.zeros(shape))

    def update(self, input_pos, k, v):
        k_out, v_out = self.k_cache, self.v_cache
        k_out[:, :, input_pos] = k
        v_out[:, :, input_pos] = v
        return k_out, v_out


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head, self.head_dim = config.n_head, config.dim // config.n_head
        self.wqkv = nn.Linear(config.dim, 3 * config.dim, bias=False)
        self.wo = nn.Linear(config.dim, config.dim, bias=False)
        self.kv_cache = None

    def forward(self, x, mask, input_pos):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.n_head, self.head_dim).transpose(1, 2) for z in self.wqkv(x).split(d, dim=-1))
        k, v = self.kv_cache.update(input_pos, k, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.norm = nn.LayerNorm(config.dim)
        self.attention = Attention(config)

    def forward(self, x, mask, input_pos):
        return x + self.attention(self.norm(x), mask, input_pos)


class Transformer(nn.Module):
    def __init__(self, config: ModelArgs) -> None:
        super().__init__()
        self.config = config
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.output = nn.Linear(config.dim, config.vocab_size, bias=False)
        self.causal_mask: Optional[torch.Tensor] = None

    def setup_caches(self, max_batch_size, max_seq_length):
        for layer in self.layers:
            layer.attention.kv_cache = KVCache(max_batch_size, max_seq_length, self.config.n_head,
                                               self.config.dim // self.config.n_head)
        self.causal_mask = torch.tril(torch.ones(max_seq_length, max_seq_length, dtype=torch.bool))

    def forward(self, idx, input_pos: Optional[torch.Tensor] = None):
        assert self.causal_mask is not None, "Caches must be initialized first"
        mask = self.causal_mask[None, None, input_pos]
        x = self.tok_embeddings(idx)
        for layer in self.layers:
            x = layer(x, mask, input_pos)
        return self.output(x)
