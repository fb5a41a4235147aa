"""Building a model with empty weights: Parameters on `meta`, big factory tensors on `meta`.

Every Parameter is moved to `meta` as it is registered, while buffers and init-time helpers stay
real (see ../shared/notes/tracing.md); tensor factories of LARGE_BYTES or more are made on `meta`
outright (NOTE [large tensors at build time]).
"""

from __future__ import annotations

import contextlib
import math

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

# NOTE [large tensors at build time]
# Moving a Parameter to `meta` when it is registered comes after its constructor allocated it for
# real: `nn.Embedding(256000, 8192)` asks 7.8 GiB, DeepSeek-V3's stacked experts 28 GiB, before
# the module ever sees them. So while a model is built, factory calls (torch.empty, zeros, ...)
# for LARGE_BYTES or more on the CPU are made on `meta`; smaller tensors (init-time helpers such as
# drop-path schedules that call `.item()`) stay real. Should init code then mix a big meta tensor
# with real ones (an error), the model is built once more without this (build_empty).
LARGE_BYTES = 64 * 2**20


def first_line(exc: BaseException) -> str:
    """The first non-blank line of an exception's message (transformers' ImportErrors start with a newline)."""
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), "")


class LargeOnMeta(TorchFunctionMode):
    """Makes tensor factory calls of LARGE_BYTES or more on the CPU allocate on `meta` instead."""

    def __init__(self) -> None:
        super().__init__()
        self.redirected = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _factories() and "out" not in kwargs and _on_cpu(kwargs.get("device")) \
                and _nbytes(func, args, kwargs) >= LARGE_BYTES:
            kwargs = {**kwargs, "device": torch.device("meta")}
            self.redirected += 1
        return func(*args, **kwargs)


def _factories() -> dict:
    """Factory -> True when its size is the first argument (else sizes are *ints or a sequence)."""
    return {torch.empty: False, torch.zeros: False, torch.ones: False, torch.rand: False,
            torch.randn: False, torch.full: True, torch.empty_strided: True}


def _on_cpu(device) -> bool:
    return device is None or torch.device(device).type == "cpu"


def _nbytes(func, args, kwargs) -> int:
    size = kwargs.get("size")
    if size is None and args:
        first = _factories()[func] or (len(args) == 1 and isinstance(args[0], (tuple, list)))
        size = args[0] if first else args
    try:
        numel = math.prod(int(s) for s in size or ())
    except (TypeError, ValueError):
        return 0
    dtype = kwargs.get("dtype") or torch.get_default_dtype()
    return numel * dtype.itemsize if isinstance(dtype, torch.dtype) else 0


def build_empty(make):
    """`make()` under empty_weights(), big factory tensors on `meta`; retried without if that broke it."""
    mode = LargeOnMeta()
    try:
        with empty_weights(), mode:
            return make()
    except Exception as exc:  # init code that cannot take meta tensors: build as before
        if not mode.redirected or "meta" not in str(exc).lower():
            raise  # an error of its own (a bad config, ...): a real build would only add an OOM
    with empty_weights():
        return make()


@contextlib.contextmanager
def empty_weights():
    """Register every new Parameter on `meta` (no memory, no init cost); buffers stay real."""
    from torch.nn.parameter import UninitializedParameter

    original = nn.Module.register_parameter

    def register(module, name, param):
        original(module, name, param)
        if param is not None and param.device.type != "meta" and not isinstance(param, UninitializedParameter):
            # a lazy module's placeholder has no data to allocate (NOTE [lazy modules on fake tensors])
            extra = dict(param.__dict__)
            extra["requires_grad"] = param.requires_grad
            module._parameters[name] = type(param)(param.to("meta"), **extra)

    nn.Module.register_parameter = register
    nn.Parameter.data = property(_DATA.__get__, _set_data)   # NOTE [init code setting .data]
    try:
        yield
    finally:
        nn.Module.register_parameter = original
        del nn.Parameter.data


_DATA = torch._C.TensorBase.__dict__["data"]


def _set_data(param, value):
    if isinstance(value, torch.Tensor) and param.device.type == "meta" and value.device.type != "meta":
        value = value.to("meta")
    _DATA.__set__(param, value)


# NOTE [init code setting .data]
# Init code often replaces a weight it computed itself: `self.conv.weight.data = W` (WaveGlow's
# invertible 1x1 convolution, an orthonormal W from torch.qr). The Parameter is on `meta` by then,
# and torch refuses a real tensor for it ("incompatible tensor type"); while a model is built, a
# real tensor given to a meta Parameter's `.data` goes to `meta` too (its values are not needed).
