"""GELU through the compiled CUDA extension built by setup.py, with a PyTorch fallback."""

import torch
import torch.nn.functional as F

try:
    import fused_gelu_cuda  # built by `pip install -e .` (see setup.py)
except ImportError:
    fused_gelu_cuda = None


def gelu(x: torch.Tensor) -> torch.Tensor:
    """Fused GELU on CUDA tensors when the extension is built, else the PyTorch one."""
    if fused_gelu_cuda is not None and x.is_cuda:
        return torch.ops.nanogpt.fused_gelu(x)
    return F.gelu(x, approximate="tanh")
