from torch import nn


class Classifier(nn.Module):
    def __init__(self, features: int = 16, classes: int = 4) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, 32), nn.ReLU(), nn.Linear(32, classes))

    def forward(self, x):
        return self.net(x)
