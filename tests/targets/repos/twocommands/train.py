import argparse

import torch
import torch.nn.functional as F

from model import Classifier

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()
model = Classifier()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _epoch in range(args.epochs):
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
