import pytest
import torch
from tabnet import Net


@pytest.mark.parametrize("activation, dim", [("gelu", 8), ("relu", 16)])
def test_forward_shape(activation, dim):
    model = Net(categories=(3, 4), num_continuous=2, dim=dim, activation=activation)
    x_categ = torch.randint(0, 3, (5, 2))
    x_cont = torch.randn(5, 2)
    assert model(x_categ, x_cont).shape == (5, 1)
