"""The MLP block of the transformer layers (a part: the model composes it)."""

from torch import nn


class Mlp(nn.Module):
    """Two linear layers around an activation.

    `in_features` is the width of the tokens; `hidden_features` defaults to four times it. The
    docstring is long, as real ones are, which makes the part look longer than the model.
    Dropout after each layer, as in the original ViT.
    """

    def __init__(self, in_features, hidden_features=None, out_features=None, drop=0.0):
        super().__init__()
        hidden_features = hidden_features or 4 * in_features
        out_features = out_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.drop1(self.act(self.fc1(x)))
        return self.drop2(self.fc2(x))
