"""Trains at import (a nanoGPT-style script): opscan never runs this outside its sandbox."""
import torch
from model import GPT, GPTConfig

model = GPT(GPTConfig())
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
data = torch.load("train.bin")  # a file this fixture does not ship
for step in range(10):
    logits, loss = model(data[:, :-1], data[:, 1:])
    loss.backward()
    optimizer.step()
