"""A non-autoregressive text-to-mel model, sized by the preprocessing and model YAML files."""
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden = config["transformer"]["encoder_hidden"]
        self.embed = nn.Embedding(config["vocab_size"], hidden, padding_idx=0)
        self.pos = nn.Parameter(torch.zeros(1, config["max_seq_len"], hidden))
        layer = nn.TransformerEncoderLayer(hidden, config["transformer"]["encoder_head"],
                                           config["transformer"]["conv_filter_size"], batch_first=True)
        self.layers = nn.TransformerEncoder(layer, config["transformer"]["encoder_layer"])

    def forward(self, texts):
        return self.layers(self.embed(texts) + self.pos[:, :texts.shape[1]])


class TextToMel(nn.Module):
    def __init__(self, preprocess_config, model_config):
        super().__init__()
        self.encoder = Encoder(model_config)
        self.to_mel = nn.Linear(model_config["transformer"]["encoder_hidden"],
                                preprocess_config["preprocessing"]["mel"]["n_mel_channels"])
        self.postnet = nn.Conv1d(preprocess_config["preprocessing"]["mel"]["n_mel_channels"],
                                 preprocess_config["preprocessing"]["mel"]["n_mel_channels"], 5, padding=2)

    def forward(self, texts):
        mel = self.to_mel(self.encoder(texts))
        return mel + self.postnet(mel.transpose(1, 2)).transpose(1, 2)
