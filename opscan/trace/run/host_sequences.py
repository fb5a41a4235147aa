"""Tensors built from host tensors that hold values: `torch.Tensor([t0, t1])`, `torch.tensor(rows)`
of 0-d or small host tensors read their values, as in a real run (NOTE [tensors built from host
tensors]).

NOTE [tensors built from host tensors]
Research data code collects host tensors in a Python list and builds one tensor of them:
`labels_arr.append(labels[i])` in a loop, then `torch.Tensor(labels_arr)` or `torch.tensor(rows)`.
Those host tensors keep their values in the run (NOTE [host values] in run_mode.py), but they are
fake tensors whose values are held beside them, and torch's constructors read an element's data
from its storage in C++, below the fake mode: `The tensor has a non-zero number of elements, but its
data is not allocated yet`, and the run stopped in the script's data preparation. So:
- `torch.Tensor(seq)` (and the typed legacy constructors) convert each element with `__float__`,
  `__int__` or `__index__` as torch function calls; one that fails on a fake tensor that holds
  values is done again on those values (its ops, `aten::_local_scalar_dense`, run for real on the
  host, as a real run's do);
- `torch.tensor(seq)`, `torch.as_tensor(seq)` and `Tensor.new_tensor(seq)` of a (nested) list or
  tuple get each fake element that holds values replaced by those values (a real CPU tensor)
  before torch reads them; the result is host data with values, as a real run's.
A fake element without values (a model's output) is left as it was: the run stops there as before.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

_SCALARS = (torch.Tensor.__float__, torch.Tensor.__int__, torch.Tensor.__index__, torch.Tensor.__complex__)
_BUILDERS = (torch.tensor, torch.as_tensor, torch.Tensor.new_tensor)


def _held(value):
    """The values a fake tensor holds (a real CPU tensor), or None."""
    from torch._subclasses.fake_tensor import FakeTensor

    return value.constant if isinstance(value, FakeTensor) and value.constant is not None else None


def _with_values(seq):
    """`seq` with each fake tensor that holds values replaced by them; None when none was replaced."""
    replaced = False

    def one(item):
        nonlocal replaced
        if isinstance(item, (list, tuple)):
            return type(item)(one(i) for i in item)
        held = _held(item)
        if held is None:
            return item
        replaced = True
        return held

    out = one(seq)
    return out if replaced else None


class HostSequences(TorchFunctionMode):
    """NOTE [tensors built from host tensors]."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _BUILDERS:
            at = 1 if func is torch.Tensor.new_tensor else 0
            if len(args) > at and isinstance(args[at], (list, tuple)):
                values = _with_values(args[at])
                if values is not None:
                    args = (*args[:at], values, *args[at + 1:])
        elif func in _SCALARS and args and _held(args[0]) is not None:
            try:
                return func(*args, **kwargs)
            except RuntimeError:   # read below the fake mode (a legacy constructor's element)
                from torch._subclasses.fake_tensor import unset_fake_temporarily

                with unset_fake_temporarily():
                    return func(_held(args[0]), *args[1:], **kwargs)
        return func(*args, **kwargs)


__all__ = ["HostSequences"]
