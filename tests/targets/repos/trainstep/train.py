"""Train the classifier: AdamW (fused), cross-entropy, gradient clipping."""

import argparse

import torch
import torch.nn.functional as F

from model import Classifier


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=32)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Classifier().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    for step in range(args.steps):
        tokens = torch.randint(0, 512, (args.batch_size, args.seq_len), device=device)
        labels = torch.randint(0, 10, (args.batch_size,), device=device)
        loss = F.cross_entropy(model(tokens), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
