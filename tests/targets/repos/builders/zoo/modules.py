"""A decoder built from finished parts (as torchtune's TransformerDecoder): opscan cannot size it itself."""

from torch import nn


class TransformerDecoder(nn.Module):
    def __init__(self, *, tok_embeddings: nn.Embedding, layers: nn.ModuleList, output: nn.Linear, max_seq_len: int):
        super().__init__()
        self.tok_embeddings, self.layers, self.output = tok_embeddings, layers, output
        self.max_seq_len = max_seq_len
        self.num_layers = len(layers)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.output(h)
