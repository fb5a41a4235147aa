"""A toy PrivateUse1 backend named "toy" for the probe tests: a few kernels, the rest falls back to CPU.

Importing it renames PrivateUse1 (process-global), so import it only in a subprocess: the tests run
`opscan db probe --import toy_backend` with this folder on PYTHONPATH. Tensors on "toy" wrap a CPU
tensor; ops with a toy kernel or a composite kernel are re-dispatched to PrivateUse1, every other op
runs on the CPU and warns "Operator '<name>' fell back to CPU", as TorchNeuron does. A catch-all
fallback is also registered with the dispatcher, so the probe can see there is one.
`relu` is "limited": for float64 inputs it falls back at run time, the case `--samples` catches;
`neg` returns wrong numbers (its input unchanged) and `exp` narrows float64 (computes it as
float32), the cases `--samples` catches by comparing with the CPU. `aten::not_a_real_op.Tensor`
is a kernel registered for an operator nobody defined: the probe drops it with a warning.
"""

from __future__ import annotations

import warnings

import torch
from torch.utils._pytree import tree_map

__version__ = "0.1.0"

# The ops the toy registers its own PrivateUse1 kernel for (compute ops, then tensor plumbing).
COMPUTE = ("aten::add.Tensor", "aten::exp", "aten::mm", "aten::mul.Tensor", "aten::neg", "aten::relu")
PLUMBING = ("aten::_copy_from", "aten::_to_copy", "aten::empty.memory_format", "aten::empty_strided")
KERNELS = tuple(sorted(COMPUTE + PLUMBING))

torch.utils.backend_registration._setup_privateuseone_for_python_backend("toy")
_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1)
_COMPOSITE = ("CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd",
              "CompositeImplicitAutograd")


class ToyTensor(torch.Tensor):
    """A tensor on device "toy" holding its data in a CPU tensor."""

    @staticmethod
    def __new__(cls, data: torch.Tensor):
        out = torch.Tensor._make_wrapper_subclass(
            cls, data.shape, dtype=data.dtype, device="toy:0", strides=data.stride(),
            storage_offset=data.storage_offset(), requires_grad=data.requires_grad)
        out._data = data
        return out

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.name()
        has_composite = any(torch._C._dispatch_has_kernel_for_dispatch_key(name, k) for k in _COMPOSITE)
        if name in KERNELS or has_composite:
            return func.redispatch(_KEYS, *args, **kwargs)
        return cpu_fallback(func, *args, **kwargs)


def _unwrap(x):
    return x._data if isinstance(x, ToyTensor) else x


def _wrap(x):
    return ToyTensor(x) if isinstance(x, torch.Tensor) and not isinstance(x, ToyTensor) else x


def _on_cpu(kwargs: dict) -> dict:
    return {k: (torch.device("cpu") if k == "device" else v) for k, v in kwargs.items()}


def cpu_fallback(op, *args, **kwargs):
    """Run `op` on the CPU copies of its toy inputs and wrap the results; warn like TorchNeuron."""
    warnings.warn(f"Operator '{op.name()}' fell back to CPU", UserWarning, stacklevel=2)
    out = op(*tree_map(_unwrap, args), **tree_map(_unwrap, _on_cpu(kwargs)))
    return tree_map(_wrap, out)


def _compute(op):
    def kernel(*args, **kwargs):
        if op is torch.ops.aten.relu.default and args[0].dtype == torch.float64:
            return cpu_fallback(op, *args, **kwargs)  # the toy's "limited" kernel
        if op is torch.ops.aten.neg.default:
            return _wrap(_unwrap(args[0]).clone())     # wrong numbers: forgets to negate
        if op is torch.ops.aten.exp.default and args[0].dtype == torch.float64:
            return _wrap(_unwrap(args[0]).float().exp().double())   # narrows float64 to float32
        return tree_map(_wrap, op(*tree_map(_unwrap, args), **tree_map(_unwrap, kwargs)))
    return kernel


def _empty(*args, device=None, **kwargs):
    return ToyTensor(torch.empty(*args, **kwargs))


def _empty_strided(size, stride, *, device=None, **kwargs):
    return ToyTensor(torch.empty_strided(size, stride, **kwargs))


def _to_copy(x, *, device=None, **kwargs):
    data = _unwrap(x).to(**{k: v for k, v in kwargs.items() if k in ("dtype",) and v is not None})
    data = data.clone()
    if device is not None and torch.device(device).type == "cpu":
        return data
    return ToyTensor(data) if isinstance(x, ToyTensor) or device is not None else data


def _copy_from(src, dst, non_blocking=False):
    _unwrap(dst).copy_(_unwrap(src))
    return dst


_LIB = torch.library.Library("aten", "IMPL")  # noqa: TOR901 - the toy lives for the whole process
for _name in COMPUTE:
    _packet, _, _overload = _name[len("aten::"):].partition(".")
    _LIB.impl(_name[len("aten::"):], _compute(getattr(getattr(torch.ops.aten, _packet), _overload or "default")),
              "PrivateUse1")
_LIB.impl("empty.memory_format", _empty, "PrivateUse1")
_LIB.impl("empty_strided", _empty_strided, "PrivateUse1")
_LIB.impl("_to_copy", _to_copy, "PrivateUse1")
_LIB.impl("_copy_from", _copy_from, "PrivateUse1")
_LIB.impl("not_a_real_op.Tensor", _copy_from, "PrivateUse1")   # no such operator: the probe drops it
_FALLBACK = torch.library.Library("_", "IMPL")  # noqa: TOR901
_FALLBACK.fallback(cpu_fallback, "PrivateUse1")
