"""Meta kernels for the aten ops PyTorch dispatches on an accelerator but gives no meta kernel, so a
fake-tensor trace on the imitated device can take their shapes.

NOTE [fused recurrent cells]
On an accelerator (CUDA, XPU, PrivateUse1) `gru_cell` runs as `aten::_thnn_fused_gru_cell` (the
gates' matmuls, then one fused kernel), and its backward as `_thnn_fused_gru_cell_backward`;
nn.GRU on the imitated device reaches them through `aten::gru`'s decomposition into cells. PyTorch
registers meta kernels for the LSTM's fused cell but none for the GRU's, so FakeTensorMode fell back
to running the real kernel, and on the imitated device that is the profile's placeholder: every
model with an nn.GRU stopped with "a device-profile placeholder kernel ran outside a fake-tensor
trace" (held-out 10's video-captioning encoders and a dialogue model's RNN encoder). These kernels
give the shapes of PyTorch's CUDA kernels (aten/src/ATen/native/cuda/RNN.cu): hy [B, H] and a
workspace [B, 5H] forward; the gates' gradients [B, 3H], hx's [B, H] and the biases' [3H] backward.
They only shape fake tensors: the ops recorded are the ones the device is handed, unchanged.
"""

from __future__ import annotations

import torch

_REGISTERED: dict[str, object] = {}


def _gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    return torch.empty_like(hx), hx.new_empty((hx.shape[0], hx.shape[1] * 5))


def _gru_cell_backward(grad_hy, workspace, has_bias):
    batch, hidden = grad_hy.shape[0], grad_hy.shape[1]
    gates = grad_hy.new_empty((batch, 3 * hidden))
    bias = grad_hy.new_empty((3 * hidden,)) if has_bias else grad_hy.new_empty((0,))
    return gates, torch.empty_like(gates), torch.empty_like(grad_hy), bias, torch.empty_like(bias)


KERNELS = {"_thnn_fused_gru_cell": _gru_cell, "_thnn_fused_gru_cell_backward": _gru_cell_backward}


def register() -> None:
    """Register the meta kernels PyTorch lacks (NOTE [fused recurrent cells]), once per process."""
    if _REGISTERED:
        return
    lib = torch.library.Library("aten", "IMPL")  # noqa: TOR901 - process-local, kept for the process
    for name, kernel in KERNELS.items():
        packet = getattr(torch.ops.aten, name, None)
        if packet is None or torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{name}", "Meta"):
            continue   # this torch has no such op, or gives its own meta kernel
        lib.impl(name, kernel, "Meta")
    _REGISTERED["lib"] = lib
