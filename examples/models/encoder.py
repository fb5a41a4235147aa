"""nn.TransformerEncoderLayer: PyTorch's inference fast path dispatches one fused op.

In training the layer decomposes into linear, softmax, layer_norm ...; in `eval()` + no_grad it
calls `aten::_transformer_encoder_layer_fwd`, an op a backend may lack (a real port looked clean in
training and fell back to CPU in serving).
"""

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, width: int = 32, heads: int = 4, classes: int = 3) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(width, heads, 2 * width, batch_first=True)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.layer(x).mean(dim=1))


def make_encoder(batch: int = 2, seq_len: int = 8):
    return Encoder(), (torch.randn(batch, seq_len, 32),)
