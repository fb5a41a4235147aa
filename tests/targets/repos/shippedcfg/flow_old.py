import torch
import torch.nn as nn


class FlowLoss(nn.Module):
    def __init__(self, sigma=1.0):
        super().__init__()
        self.sigma = sigma

    def forward(self, z):
        return (z * z).sum() / (2 * self.sigma ** 2)


class Invertible1x1Conv(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 1, bias=False)
        w = torch.linalg.qr(torch.randn(c, c))[0]
        self.conv.weight.data = w.view(c, c, 1)   # init code replacing a weight

    def forward(self, x):
        return self.conv(x)


class WN(nn.Module):
    def __init__(self, n_in_channels, n_layers, n_channels, kernel_size):
        super().__init__()
        self.start = nn.Conv1d(n_in_channels, n_channels, 1)
        self.layers = nn.ModuleList(nn.Conv1d(n_channels, n_channels, kernel_size, padding=kernel_size // 2)
                                    for _ in range(n_layers))
        self.end = nn.Conv1d(n_channels, n_in_channels, 1)

    def forward(self, x):
        x = self.start(x)
        for layer in self.layers:
            x = torch.tanh(layer(x)) + x
        return self.end(x)


class Flow(nn.Module):
    def __init__(self, n_mel_channels, n_flows, n_group, WN_config):
        super().__init__()
        self.n_group = n_group
        self.inp = nn.Conv1d(n_mel_channels, n_group, 1)
        self.convinv = nn.ModuleList(Invertible1x1Conv(n_group) for _ in range(n_flows))
        self.WN = nn.ModuleList(WN(n_group, **WN_config) for _ in range(n_flows))

    def forward(self, mel):
        # the earlier version of the model, kept beside it (a longer definition)
        # ...
        # ...
        # ...
        x = self.inp(mel)
        for conv, wn in zip(self.convinv, self.WN):
            x = wn(conv(x))
        return x
