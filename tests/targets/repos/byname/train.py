"""CIFAR-style training: the model is chosen by name (--arch)."""
import argparse

import torch
import torch.nn as nn

import models

parser = argparse.ArgumentParser(description="train a small image classifier")
parser.add_argument("-a", "--arch", default="resnet20", choices=sorted(n for n in models.__dict__ if n.islower()))
parser.add_argument("--epochs", type=int, default=30)
parser.add_argument("--lr", type=float, default=0.1)


def main():
    args = parser.parse_args()
    model = models.__dict__[args.arch](num_classes=10)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    for _ in range(args.epochs):
        for images, labels in []:
            loss = criterion(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
