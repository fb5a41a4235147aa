"""Lazy modules (`nn.LazyLinear`, `nn.LazyConv2d`, ...) built and materialised on fake tensors.

NOTE [lazy modules on fake tensors]
A lazy module declares `UninitializedParameter` / `UninitializedBuffer` placeholders and gives them
their shapes at its first forward (`materialize`, then `reset_parameters`). A placeholder is a
Tensor subclass made with `Tensor._make_subclass(cls, torch.empty(0))`, and under a fake mode
`torch.empty(0)` is already a FakeTensor, which torch refuses to re-type ("Creating a new Tensor
subclass UninitializedParameter but the raw Tensor object is already associated to a python object
of type FakeTensor"): every model with a lazy layer stopped at its constructor. Inside `lazy()`:
- a placeholder is made as torch makes it, from a real 0-element CPU tensor (the fake mode
  suspended for that one `empty(0)`: no data, no op the real run would not have made: a real
  placeholder dispatches the same `aten::empty`), so `is_lazy` and the module's checks see what
  they see in a real run;
- where the script moves or converts a module before its first forward (`model.to(device)`), a
  placeholder keeps the device and dtype asked for (`lazy_to`), as torch's `.to` of a placeholder
  does, and stays uninitialized;
- `materialize(shape)` makes the tensor of that shape, device and dtype (fake under the fake mode,
  as every other parameter) and swaps it into the placeholder object (torch.utils.swap_tensors,
  as torch's own `Module._apply` swaps), so the module, and anything holding the placeholder,
  holds the materialised Parameter (a buffer becomes a plain tensor), as `self.data = ...;
  self.__class__ = cls_to_become` does in a real run.
"""

from __future__ import annotations

import contextlib

import torch
from torch.nn.parameter import (
    UninitializedBuffer,
    UninitializedParameter,
    UninitializedTensorMixin,
)

from opscan.trace import fakes
from opscan.trace.swaps import swap

_DEVICE = "_opscan_lazy_device"   # the device a placeholder was moved to, while it has no fake data


def _unfaked():
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    return unset_fake_temporarily()


def _parameter_new(cls, requires_grad=True, device=None, dtype=None):
    with _unfaked():
        data = torch.empty(0, dtype=dtype)
    made = torch.Tensor._make_subclass(cls, data, requires_grad)
    _remember(made, device)
    return made


def _buffer_new(cls, requires_grad=False, device=None, dtype=None, persistent=True):
    with _unfaked():
        data = torch.empty(0, dtype=dtype)
    made = torch.Tensor._make_subclass(cls, data, requires_grad)
    made.persistent = persistent
    made._is_buffer = True
    _remember(made, device)
    return made


def _remember(placeholder, device) -> None:
    if device is not None and torch.device(device).type != "cpu":
        setattr(placeholder, _DEVICE, torch.device(device))


def lazy_to(placeholder, device=None, dtype=None) -> None:
    """A placeholder moved (and cast) as `.to` moves it, still uninitialized (see the NOTE above)."""
    if dtype is not None and placeholder.is_floating_point():
        with _unfaked(), torch.no_grad():
            placeholder.data = torch.empty(0, dtype=dtype)
    if device is not None:
        if torch.device(device).type == "cpu":
            placeholder.__dict__.pop(_DEVICE, None)
        else:
            setattr(placeholder, _DEVICE, torch.device(device))


def _materialize(self, shape, device=None, dtype=None) -> None:
    with torch._C.DisableTorchFunctionSubclass():   # read without dispatching (`self.data` is a detach)
        own_device, own_dtype = self.device, self.dtype
    device = device if device is not None else self.__dict__.get(_DEVICE, own_device)
    dtype = dtype if dtype is not None else own_dtype
    made = torch.empty(shape, device=device, dtype=dtype)
    if type(made) is torch.Tensor:   # no fake mode: as torch does
        with torch._C.DisableTorchFunctionSubclass():
            self.data = made
        self.__class__ = self.cls_to_become
        return
    self.__dict__.pop(_DEVICE, None)
    if self.cls_to_become is torch.nn.Parameter:
        made = torch.nn.Parameter(made, requires_grad=self.requires_grad)
    else:
        made.requires_grad_(self.requires_grad)
        for name in ("persistent", "_is_buffer"):
            if name in self.__dict__:
                setattr(made, name, self.__dict__[name])
    swap(self, made)


def is_placeholder(t) -> bool:
    return isinstance(t, UninitializedTensorMixin)


@contextlib.contextmanager
def lazy():
    """Lazy modules built and materialised on fake tensors, inside only (NOTE above)."""
    with fakes.patched(UninitializedParameter, "__new__", _parameter_new), \
            fakes.patched(UninitializedBuffer, "__new__", _buffer_new), \
            fakes.patched(UninitializedTensorMixin, "materialize", _materialize):
        yield


__all__ = ["is_placeholder", "lazy", "lazy_to"]
