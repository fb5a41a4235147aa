"""Trains CharLM on input.txt (the data is not shipped: running this needs it)."""
import argparse

import torch
import torch.nn.functional as F
from torch.nn.utils import clip_grad_norm_

from model import CharLM

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=1000)
parser.add_argument("--lr", type=float, default=3e-4)
args = parser.parse_args()

data = torch.tensor(list(open("input.txt", "rb").read()), dtype=torch.long)
model = CharLM().cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1, fused=True)


def train_step(x, y):
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    loss.backward()
    clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


for step in range(args.steps):
    i = torch.randint(len(data) - 17, (8,))
    x = torch.stack([data[j:j + 16] for j in i]).cuda()
    y = torch.stack([data[j + 1:j + 17] for j in i]).cuda()
    print(step, train_step(x, y))
