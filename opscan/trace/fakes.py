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

from opscan.trace.device import has_own_kernel

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
def patched(owner, name: str, value):
    """`owner.name = value` inside the block only (an attribute `owner` did not define is removed again)."""
    had = name in owner.__dict__
    previous = owner.__dict__.get(name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        if had:
            setattr(owner, name, previous)
        else:
            delattr(owner, name)


def packed_sequences():
    """`pad_packed_sequence` of fake data answered in Python (NOTE [packed sequences of unknown
    lengths] in opscan/trace/standins.py), only inside."""
    from torch import _VF

    from opscan.trace.standins import pad_packed

    return patched(_VF, "_pad_packed_sequence", pad_packed(_VF._pad_packed_sequence))


def fake_deepcopy():
    """Deep copies of fake tensors stay fake (see NOTE [deepcopy of fake tensors]), only inside."""
    from torch._subclasses.fake_tensor import FakeTensor

    return patched(FakeTensor, "__deepcopy__", _fake_deepcopy)


# NOTE [module conversions in forward]
# Some models convert a submodule inside forward (switch_transformers' router:
# `self.classifier = self.classifier.to(self.dtype)`). torch's Module._apply always swaps a fake
# parameter for its converted copy (torch.utils.swap_tensors), and the swap fails for a parameter
# that has a weak reference ("_apply(): Couldn't swap Linear.weight"), which the trace's fake
# parameters do. In a real run a conversion to the dtype and device a module already has changes
# nothing (each tensor converts to itself). So while a step is traced, a conversion under which
# every parameter and buffer converts to itself returns the module unchanged; any other
# conversion goes to torch as before.
def identity_conversions():
    """Module conversions that change nothing are no-ops during the trace (see the NOTE above)."""
    original = torch.nn.Module._apply

    def _apply(self, fn, recurse=True):
        modules = self.modules() if recurse else (self,)
        tensors = [t for m in modules for t in (*m._parameters.values(), *m._buffers.values()) if t is not None]
        with torch.no_grad():
            if tensors and all(fn(t) is t for t in tensors):
                return self
        return original(self, fn, recurse)

    return patched(torch.nn.Module, "_apply", _apply)


# NOTE [formatting 0-dim fake tensors]
# `f"expert_{idx[0]}"` (switch_transformers picks its expert submodule by name) formats a 0-dim
# tensor. A real tensor formats as its value (Tensor.__format__ calls .item() when the type is
# exactly Tensor); a FakeTensor is a subclass, so it formatted as its repr and the lookup failed
# (KeyError "expert_FakeTensor(...)"). While a step is traced, a 0-dim fake tensor formats as its
# `.item()`, i.e. as the stand-in value opscan gives it (counted and reported like any other).
def _fake_format(self, format_spec):
    if self.dim() == 0:
        return self.detach().item().__format__(format_spec)
    return object.__format__(self, format_spec)


def fake_format():
    """0-dim fake tensors format as their (stand-in) value, only inside (see the NOTE above)."""
    from torch._subclasses.fake_tensor import FakeTensor

    return patched(FakeTensor, "__format__", _fake_format)


# NOTE [one_hot on fake tensors]
# aten::one_hot is a composite whose C++ body takes another branch for meta and fake tensors
# (eq of the indices with an arange: a form that compiles well) than for real ones. A real run
# dispatches aten::zeros + aten::scatter_.value, plus aten::aminmax and two `.item()` checks on the
# CPU, or aten::max and `.item()` on other devices when num_classes is -1 (aten/src/ATen/native/
# Onehot.cpp). So the trace listed aten::eq.Tensor where the backend really meets
# aten::scatter_.value. While a step is traced, torch.nn.functional.one_hot of a fake tensor runs
# the real branch for the tensor's device, in Python, on the fake tensor: the same ops (the
# `.item()`s are stand-ins, counted as usual); anything else goes to torch as before. A device
# whose backend registers its own aten::one_hot (the TorchNeuron profile lists it as native) gets
# the op itself, as a real run does: the trace stops there and lists aten::one_hot.
def _one_hot(original):
    def one_hot(tensor, num_classes=-1):
        from torch._subclasses.fake_tensor import FakeTensor

        if not isinstance(tensor, FakeTensor) or tensor.dtype != torch.long or tensor.numel() == 0 \
                or has_own_kernel("aten::one_hot", tensor.device.type):
            return original(tensor, num_classes)
        if tensor.device.type == "cpu":
            low, high = torch.aminmax(tensor)
            low.item()
            top = high.item()
            if num_classes == -1:
                num_classes = top + 1
        elif num_classes == -1:
            num_classes = tensor.max().item() + 1
        out = torch.zeros((*tensor.shape, num_classes), dtype=tensor.dtype, device=tensor.device)
        out.scatter_(-1, tensor.unsqueeze(-1), 1)
        return out

    return one_hot


def real_one_hot():
    """one_hot of fake tensors dispatches what a real run does, only inside (see the NOTE above)."""
    return patched(torch.nn.functional, "one_hot", _one_hot(torch.nn.functional.one_hot))
