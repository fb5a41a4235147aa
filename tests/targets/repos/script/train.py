"""A single-file trainer: the model classes and the training run in one script."""
import torch
import torch.nn as nn

VOCAB = 64


class CharModel(nn.Module):
    def __init__(self, vocab_size, n_embd):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, n_embd)
        self.mix = nn.Linear(n_embd, n_embd)
        self.out = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        h = torch.tanh(self.mix(self.emb(idx)))
        return self.out(h)


class Discriminator(nn.Module):
    def __init__(self, feature_extractor):
        super().__init__()
        self.features = feature_extractor
        self.fc = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc(self.features(x))


text = open("input.dat").read()            # not shipped: running this script fails here
model = CharModel(VOCAB, 32)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1000):
    optimizer.step()
