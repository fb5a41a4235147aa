import argparse

import torch
from vlm_toolkit_not_installed import VisionLanguageModel

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()
model = VisionLanguageModel.from_pretrained("some/checkpoint")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
for _epoch in range(args.epochs):
    loss = model(torch.randn(2, 3, 224, 224)).loss
    loss.backward()
    optimizer.step()
