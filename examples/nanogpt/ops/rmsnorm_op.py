"""RMSNorm as a torch.library custom op, with a fake (meta) implementation for torch.compile."""

import torch
from torch.library import custom_op, register_fake


@custom_op("nanogpt::rmsnorm", mutates_args=())
def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    variance = x.pow(2).mean(-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight


@register_fake("nanogpt::rmsnorm")
def _(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return torch.empty_like(x)
