"""Fake kernels opscan supplies where PyTorch's own is stricter than the real kernels, or missing.

NOTE [supplied fake kernels]
A fake (meta) kernel computes only the output's shape, dtype and device. A few of PyTorch's are
stricter than the kernels that really run: `aten::_grouped_mm`'s meta kernel accepts only bf16
inputs (it copies the CUDA kernel's checks), while the CPU kernel runs fp32 too, so every MoE in
transformers stopped there when traced as users configure it (fp32). When PyTorch's fake kernel
raises for such an op, the recorder (opscan/trace/recorder.py) calls the shape-only kernel below
instead, only inside the traced step: nothing is registered with the dispatcher, so nothing
outlives the trace. The op is still recorded as dispatched, and the trace lists it in
`ModelTrace.supplied_fakes` ("fake kernel supplied by opscan for OP"). Each kernel here is tested
against the real CPU kernel's output shapes (tests/trace/test_trace_fakes.py).
"""

from __future__ import annotations

import contextlib

import torch

aten = torch.ops.aten


class NoFake(Exception):
    """The supplied kernel does not cover these arguments either (the original error stands)."""


def _grouped_mm(mat_a, mat_b, offs=None, bias=None, out_dtype=None):
    """Output of aten::_grouped_mm (2D/3D operands, groups given by `offs` where one is 2D)."""
    if mat_a.dim() not in (2, 3) or mat_b.dim() not in (2, 3) or bias is not None:
        raise NoFake
    a2, b2 = mat_a.dim() == 2, mat_b.dim() == 2
    if (a2 or b2) != (offs is not None):
        raise NoFake
    if not (a2 and b2) and mat_a.shape[-1] != mat_b.shape[-2]:
        raise NoFake
    if a2 and b2:          # groups split the contraction dimension: one result per group
        if mat_a.shape[1] != mat_b.shape[0]:
            raise NoFake
        shape = (offs.shape[0], mat_a.shape[0], mat_b.shape[1])
    elif a2:               # rows of mat_a split into groups, one matrix of mat_b per group
        if offs.shape[0] != mat_b.shape[0]:
            raise NoFake
        shape = (mat_a.shape[0], mat_b.shape[-1])
    elif b2:               # columns of mat_b split into groups, one matrix of mat_a per group
        if offs.shape[0] != mat_a.shape[0]:
            raise NoFake
        shape = (mat_a.shape[1], mat_b.shape[1])
    else:                  # a batched matmul
        if mat_a.shape[0] != mat_b.shape[0]:
            raise NoFake
        shape = (mat_a.shape[0], mat_a.shape[1], mat_b.shape[-1])
    return torch.empty(shape, dtype=out_dtype or mat_a.dtype, device=mat_a.device)


# op overload -> shape-only kernel (called with the op's own arguments)
SUPPLIED = {
    aten._grouped_mm.default: _grouped_mm,
}


def supply(func, args, kwargs):
    """The output of `func` from opscan's kernel, or None when opscan has none for these arguments."""
    kernel = SUPPLIED.get(func)
    if kernel is None:
        return None
    try:
        return kernel(*args, **kwargs)
    except (NoFake, TypeError, IndexError):
        return None


# NOTE [deepcopy of fake tensors]
# `copy.deepcopy` of a fake tensor (dory's and inkling2_loop's recurrent caches copy their layers
# in forward) goes through Tensor.__deepcopy__, which rebuilds the storage on the CPU and stops at
# aten::set_.source_Storage ("set the storage of a tensor on device meta to a storage on cpu").
# While a step is traced, a fake leaf tensor is deep-copied as a new tensor of the same shape, dtype
# and device plus a copy: the backend sees aten::empty.memory_format and aten::copy_, as in a real
# deepcopy (which also dispatches set_ / new_empty to assemble the copy's storage).
def _fake_deepcopy(self, memo):
    if id(self) in memo:
        return memo[id(self)]
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the "
                           "deepcopy protocol at the moment")
    with torch.no_grad():
        new = torch.empty(self.shape, dtype=self.dtype, device=self.device)
        new.copy_(self)
    new.requires_grad_(self.requires_grad)
    memo[id(self)] = new
    return new


@contextlib.contextmanager
def fake_deepcopy():
    """Deep copies of fake tensors stay fake (see NOTE [deepcopy of fake tensors]), only inside."""
    from torch._subclasses.fake_tensor import FakeTensor

    had = "__deepcopy__" in FakeTensor.__dict__
    previous = FakeTensor.__dict__.get("__deepcopy__")
    FakeTensor.__deepcopy__ = _fake_deepcopy
    try:
        yield
    finally:
        if had:
            FakeTensor.__deepcopy__ = previous
        else:
            del FakeTensor.__deepcopy__
