"""A vector-quantised autoencoder; its demo takes its sizes from the command line."""
import argparse

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, n_codes, width):
        super().__init__()
        self.encode = nn.Linear(width, width)
        self.codebook = nn.Embedding(n_codes, width)
        self.decode = nn.Linear(width, width)

    def forward(self, x):
        z = self.encode(x)
        codes = torch.cdist(z, self.codebook.weight).argmin(dim=-1)
        return self.decode(z + (self.codebook(codes) - z).detach())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n-codes", type=int, default=32)
    parser.add_argument("--width", type=int, default=16)
    args = parser.parse_args()
    model = Net(args.n_codes, args.width)
    print(model(torch.randn(4, args.width)).shape)
