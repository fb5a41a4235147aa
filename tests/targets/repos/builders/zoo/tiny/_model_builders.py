"""Builder functions with no argument, one per named size (as torchtune's llama3_2_1b())."""

from torch import nn

from zoo.modules import TransformerDecoder


def tiny_decoder(*, vocab_size, num_layers, embed_dim, num_heads, max_seq_len) -> TransformerDecoder:
    layers = nn.ModuleList(nn.TransformerEncoderLayer(embed_dim, num_heads, 2 * embed_dim, batch_first=True)
                           for _ in range(num_layers))
    return TransformerDecoder(tok_embeddings=nn.Embedding(vocab_size, embed_dim), layers=layers,
                              output=nn.Linear(embed_dim, vocab_size), max_seq_len=max_seq_len)


def tiny_70b() -> TransformerDecoder:
    return tiny_decoder(vocab_size=128, num_layers=80, embed_dim=96, num_heads=5, max_seq_len=4096)   # 96 % 5: fails


def tiny_1m() -> TransformerDecoder:
    return tiny_decoder(vocab_size=128, num_layers=24, embed_dim=32, num_heads=2, max_seq_len=4096)
