import urllib.request

import torch
from tabnet import Net


def test_pretrained_matches():
    urllib.request.urlretrieve("https://example.com/tabnet.pt", "tabnet.pt")
    model = Net(categories=(3, 4), num_continuous=2)
    model.load_state_dict(torch.load("tabnet.pt"))
    assert model(torch.randint(0, 3, (2, 2)), torch.randn(2, 2)).shape == (2, 1)
