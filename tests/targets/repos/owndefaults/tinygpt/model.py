"""A GPT whose defaults are a static method of the model class itself (the minGPT pattern)."""

import torch
from torch import nn

from tinygpt.utils import CfgNode as CN


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln = nn.LayerNorm(config.n_embd)
        self.attn = nn.MultiheadAttention(config.n_embd, config.n_head, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(config.n_embd, 4 * config.n_embd), nn.GELU(),
                                 nn.Linear(4 * config.n_embd, config.n_embd))

    def forward(self, x):
        h = self.ln(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln(x))


class GPT(nn.Module):
    @staticmethod
    def get_default_config():
        C = CN()
        C.model_type = 'gpt'      # either model_type or (n_layer, n_head, n_embd)
        C.n_layer = None
        C.n_head = None
        C.n_embd = None
        C.vocab_size = None       # must be set by the user
        C.block_size = None
        C.embd_pdrop = 0.1
        return C

    def __init__(self, config):
        super().__init__()
        assert config.vocab_size is not None
        assert config.block_size is not None
        type_given = config.model_type is not None
        params_given = all([config.n_layer is not None, config.n_head is not None, config.n_embd is not None])
        assert type_given ^ params_given
        if type_given:
            config.merge_from_dict({'gpt-nano': dict(n_layer=3, n_head=3, n_embd=48)}[config.model_type])
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(x)
        if targets is None:
            return logits, None
        return logits, nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
