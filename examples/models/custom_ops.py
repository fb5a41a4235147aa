"""A torch.library custom op, with and without a fake (meta) kernel.

`mylib::scaled_tanh` has `register_fake`, so fake tensors can trace through it and opscan reports it
as a custom kernel. `mylib::opaque_gelu` has none: the trace stops there and says so.
"""

import torch
from torch import nn


@torch.library.custom_op("opscan_examples::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.tanh(x) * scale


@scaled_tanh.register_fake
def _(x, scale):
    return torch.empty_like(x)


def _scaled_tanh_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * ctx.scale * (1 - torch.tanh(x) ** 2), None


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.scale = inputs[1]


scaled_tanh.register_autograd(_scaled_tanh_backward, setup_context=_setup)


@torch.library.custom_op("opscan_examples::opaque_gelu", mutates_args=())
def opaque_gelu(x: torch.Tensor) -> torch.Tensor:
    return nn.functional.gelu(x)


class WithFake(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return scaled_tanh(self.proj(x), 2.0)


class WithoutFake(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        hidden = self.proj(x)
        hidden = opaque_gelu(hidden)
        return self.out(hidden)


def make_with_fake():
    return WithFake(), (torch.randn(2, 8),)


def make_without_fake():
    return WithoutFake(), (torch.randn(2, 8),)
