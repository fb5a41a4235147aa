import argparse

import torch
import torch.nn.functional as F

from model import Classifier

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()
device = "cuda" if torch.cuda.is_available() else "cpu"
model = Classifier().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _epoch in range(args.epochs):
    x, y = torch.randn(8, 16).to(device), torch.randint(0, 4, (8,)).to(device)
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
