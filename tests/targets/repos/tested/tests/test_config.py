import torch
from tabnet import Net


def test_from_config(net_config):
    model = Net(**net_config)
    assert model(torch.randint(0, 3, (2, 2)), torch.randn(2, 2)).shape == (2, 1)
