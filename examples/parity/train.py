"""A tiny training script that follows the `opscan parity run` contract (see README.md here).

Contract: read the device from TORCH_DEVICE, seed everything, train, and write the losses as JSON
{step: loss} to the file named by LOSS_DUMP. Runs on the CPU in about a second.

For the end-to-end demo it can perturb the *candidate* run on purpose (opscan sets
OPSCAN_PARITY_RUN=baseline|candidate for each run):

    PARITY_PERTURB=gelu-tanh   the candidate uses GELU's tanh approximation (a different kernel)
    PARITY_PERTURB=lr          the candidate's learning rate is 2% higher (a real numeric change)
    PARITY_PERTURB=nan@STEP    the candidate's loss becomes NaN from STEP on (a blow-up)
"""

from __future__ import annotations

import argparse
import json
import os

import torch
from torch import nn


def build(seed: int, approximate: str) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(256, 16, generator=gen)
    w = torch.randn(16, 1, generator=gen)
    y = torch.sin(x @ w) + 0.1 * torch.randn(256, 1, generator=gen)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(approximate=approximate), nn.Linear(32, 1))
    return model, x, y


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    device = torch.device(os.environ.get("TORCH_DEVICE", "cpu"))        # contract: the device
    dump = os.environ.get("LOSS_DUMP", "losses.json")                   # contract: where losses go
    perturb = os.environ.get("PARITY_PERTURB", "")
    if os.environ.get("OPSCAN_PARITY_RUN", "candidate") != "candidate":
        perturb = ""                                  # the demo perturbs the candidate only

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    model, x, y = build(args.seed, "tanh" if perturb == "gelu-tanh" else "none")
    lr = args.lr * (1.02 if perturb == "lr" else 1.0)
    nan_from = int(perturb.split("@", 1)[1]) if perturb.startswith("nan@") else None
    model, x, y = model.to(device), x.to(device), y.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

    losses: dict[str, float] = {}
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        value = loss.item()
        if nan_from is not None and step >= nan_from:
            value = float("nan")
        losses[str(step)] = value

    with open(dump, "w", encoding="utf-8") as handle:
        json.dump(losses, handle, indent=1)
    print(f"trained {args.steps} steps on {device}; final loss {losses[str(args.steps - 1)]:.6f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
