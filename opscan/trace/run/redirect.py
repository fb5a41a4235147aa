"""CUDA requests of an unmodified script, answered as on the imitated device (for `opscan run`).

NOTE [answering CUDA requests]
A script written for CUDA asks `torch.cuda.is_available()`, puts tensors on "cuda" (device
arguments, `.to("cuda")`, `.cuda()`, `Module.cuda()`), enters `torch.autocast("cuda")`, builds a
`GradScaler("cuda")` and calls `torch.compile`. A CPU-only machine must never let these reach the
dispatcher (a CUDA build fails on its first real CUDA call; fake "cuda" tensors do not stop that),
so each request is rewritten before it is dispatched:
- device arguments of any torch function and of `Tensor.to`/`Tensor.cuda`, `Module.to`/`.cuda`:
  "cuda" and "cuda:N" become the imitated device (index 0: the run is rank 0 of its job);
- on `--device neuron` the port answers `torch.cuda` as the device would: available, one device,
  bf16 supported, no-op synchronize/empty_cache/seeding, zero memory counters (also those of
  `torch.accelerator`, the calls `opscan fix` writes: the imitated device has no allocator); every other
  `torch.cuda` function has no imitated answer and stops the run at its line;
- on `--device cpu` the machine is a CPU-only one: `torch.cuda` answers as it really does here, so
  the script takes the path a real CPU run takes, and autocast and GradScaler of "cuda" are disabled
  as torch disables them there (explicit "cuda" device requests still land on the CPU);
- on `--device neuron` autocast and GradScaler of "cuda" use the imitated device; `torch.compile` returns the module or
  function unchanged (the run is eager, and the report says so).
Every request is counted with its source line, for the report's notes.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections import Counter

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from opscan.trace import lazy
from opscan.trace.swaps import swap
from opscan.trace.fakes import patched

_CUDA = re.compile(r"^cuda(:\d+)?$")
_IS_CUDA = torch.Tensor.is_cuda.__get__   # a property's getter, as torch function modes receive it

# torch.cuda functions the port answers on the imitated device, and the answer.
_ANSWERS = {
    "is_available": lambda *a, **k: True,
    "device_count": lambda *a, **k: 1,
    "current_device": lambda *a, **k: 0,
    "set_device": lambda *a, **k: None,
    "get_device_name": lambda *a, **k: "neuron (imitated by opscan)",
    "is_bf16_supported": lambda *a, **k: True,
    "is_initialized": lambda *a, **k: True,
    "is_current_stream_capturing": lambda *a, **k: False,   # torch.optim asks (no CUDA graphs)
    "init": lambda *a, **k: None,
    "synchronize": lambda *a, **k: None,
    "empty_cache": lambda *a, **k: None,
    "ipc_collect": lambda *a, **k: None,
    "manual_seed": lambda *a, **k: None,
    "manual_seed_all": lambda *a, **k: None,
    "seed": lambda *a, **k: None,
    "seed_all": lambda *a, **k: None,
    # the device's generator state (Trainer checkpoints save it): the host generator's, as a port's
    "get_rng_state": lambda *a, **k: torch.get_rng_state(),
    "get_rng_state_all": lambda *a, **k: [torch.get_rng_state()],
    "set_rng_state": lambda *a, **k: None,
    "set_rng_state_all": lambda *a, **k: None,
    "reset_peak_memory_stats": lambda *a, **k: None,
    "reset_max_memory_allocated": lambda *a, **k: None,
    "memory_allocated": lambda *a, **k: 0,
    "max_memory_allocated": lambda *a, **k: 0,
    "memory_reserved": lambda *a, **k: 0,
    "max_memory_reserved": lambda *a, **k: 0,
}


class UnansweredCuda(RuntimeError):
    """A torch.cuda request the imitated device has no answer for."""


class Requests:
    """The CUDA requests a run made, by (what, source line), and where the run is in the script."""

    def __init__(self, finder) -> None:
        self.finder = finder
        self.seen: Counter = Counter()
        # torch._dynamo.explain on the CPU runs (NOTE [compiled regions]): not the script's requests
        self.paused = False

    def note(self, what: str) -> None:
        """Count `what` at the innermost line of the project's own code (else of any user code)."""
        if self.paused:
            return
        frame = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if self.finder.is_user(filename) and os.path.abspath(filename).startswith(self.finder.root):
                found = (filename, frame.f_lineno)
                break
            frame = frame.f_back
        else:
            found = self.finder.user_frame(3)
        where = f"{self.finder.name(found[0])}:{found[1]}" if found else "?"
        self.seen[(what, where)] += 1

    def lines(self) -> tuple[str, ...]:
        """One note per request and line, sorted."""
        return tuple(f"{what} at {where}" for (what, where), _ in sorted(self.seen.items()))


class DeviceRedirect(TorchFunctionMode):
    """Rewrites "cuda" device arguments of torch functions to the imitated device."""

    def __init__(self, device: str, requests: Requests) -> None:
        super().__init__()
        self.device = torch.device(device, 0) if device != "cpu" else torch.device("cpu")
        self.requests = requests

    def map(self, value):
        """The imitated device for a CUDA device (str, torch.device or int index), else value."""
        if isinstance(value, torch.device) and value.type == "cuda":
            return self.device
        if isinstance(value, str) and _CUDA.match(value):
            return self.device
        return value

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.cuda:
            self.requests.note("Tensor.cuda() runs on the imitated device")
            non_blocking = kwargs.get("non_blocking", False)
            return args[0].to(self.device, non_blocking=non_blocking)
        if func == _IS_CUDA:
            return args[0].device.type == self.device.type and self.device.type != "cpu"
        if func is torch.device:   # NOTE [torch.device under the imitation]
            return self._device(args, kwargs)
        if func is torch.Tensor.type and self.device.type != "cpu":   # NOTE [legacy CUDA tensor types]
            target = args[1] if len(args) > 1 else kwargs.get("dtype")
            dtype = _legacy_cuda_dtype(target)
            if dtype is not None:
                self.requests.note(f"Tensor.type({_legacy_name(target)}) runs on the imitated device")
                return args[0].to(device=self.device, dtype=dtype, non_blocking=kwargs.get("non_blocking", False))
        if func is torch.Tensor.pin_memory and self.device.type != "cpu":
            return args[0]   # host memory is not modelled; the copy that follows is traced
        if "device" in kwargs:
            mapped = self.map(kwargs["device"])
            if mapped is not kwargs["device"]:
                self.requests.note("device='cuda' runs on the imitated device")
                kwargs = {**kwargs, "device": mapped}
        if args:   # positional devices: x.to("cuda"), torch.device-typed arguments
            new_args = tuple(self.map(a) for a in args)
            if any(n is not a for n, a in zip(new_args, args)):
                self.requests.note("a 'cuda' device argument runs on the imitated device")
                args = new_args
        return func(*args, **kwargs)


    def _device(self, args, kwargs) -> torch.device:
        """`torch.device(...)` in any form real torch accepts; a CUDA one is the imitated device.

        NOTE [torch.device under the imitation]
        Since torch 2 the constructor of torch.device is itself a torch function, so the generic
        rewrite of "cuda" arguments below turned `torch.device("cuda", local_rank)` into
        `torch.device(device('neuron:0'), 0)`, which torch refuses ("argument 'type' (position 1)
        must be str, not torch.device"). The device is made by real torch from the script's own
        arguments (every form it accepts: a string with or without an index, a type and an index,
        `type=`/`index=` keywords, a device, an int index), then a CUDA result becomes the imitated
        device (one device: every CUDA index is its index 0). A bare int means the current
        accelerator's device, CUDA on the machine the script was written for.
        """
        if len(args) == 1 and not kwargs and isinstance(args[0], int) and not isinstance(args[0], bool) \
                and args[0] >= 0:
            made = torch.device("cuda", args[0])
        else:
            made = torch.device(*args, **kwargs)   # the mode is off inside its handler: real torch
        mapped = self.map(made)
        if mapped is not made:
            self.requests.note("torch.device('cuda') is the imitated device")
        return mapped


def _module_to(redirect: DeviceRedirect):
    """Module.to that places parameters and buffers on the imitated device as fake tensors."""

    def to(self, *args, **kwargs):
        device, dtype, _non_blocking, memory_format = torch._C._nn._parse_to(*args, **kwargs)
        if device is not None and redirect.map(device) is not device:
            redirect.requests.note("Module.to('cuda') runs on the imitated device")
            device = redirect.device
        if device is None and dtype is None and memory_format is None:
            return self
        move(self, device, dtype, memory_format)
        return self

    return to


def move(module: nn.Module, device: torch.device, dtype=None, memory_format=None) -> None:
    """Each parameter and buffer of `module` converted onto `device` (and `dtype`; `memory_format`
    for 4-D and 5-D ones, as torch's Module.to does) with `.to`; each moved parameter keeps its
    identity, as in a real run (NOTE [moved parameters keep identity])."""
    def convert(t):
        kwargs = {"device": device, "dtype": dtype if dtype is not None and t.is_floating_point() else None}
        if memory_format is not None and t.dim() in (4, 5):
            kwargs["memory_format"] = memory_format
        return t.to(**kwargs)

    done: dict[int, nn.Parameter] = {}
    for sub in module.modules():
        for name, param in list(sub._parameters.items()):
            if param is None:
                continue
            if lazy.is_placeholder(param):   # NOTE [lazy modules on fake tensors]
                lazy.lazy_to(param, device, dtype)
                continue
            new = done.get(id(param))
            if new is None:
                with torch.no_grad():
                    moved = convert(param)
                new = param if moved is param else _moved_parameter(param, moved)
                done[id(param)] = new
            sub._parameters[name] = new
        for name, buf in list(sub._buffers.items()):
            if buf is not None and lazy.is_placeholder(buf):
                lazy.lazy_to(buf, device, dtype)
            elif buf is not None:
                sub._buffers[name] = convert(buf)


# NOTE [moved parameters keep identity]
# A real `model.to(device)` keeps each Parameter object and replaces its data, so what holds the
# parameters from before the move still holds the model's: an optimizer built first
# (`optimizer = AdamW(model.parameters())`, then `model.to(device)` or accelerate's
# `accelerator.prepare(model, optimizer)`) steps the moved parameters. A rebuilt parameter left the
# optimizer with the old ones, without gradients: it stepped nothing and listed no optimizer ops
# (diffusers' unconditional example on the imitated device: no AdamW kernel; with GradScaler,
# "No inf checks were recorded"). torch's own swap (torch.utils.swap_tensors) refuses a tensor
# with a weak reference, which fake tensors have in FakeTensorMode's memo of converted tensors
# (the parameter and its moved copy both); so their memo entries are dropped (a later conversion
# of the same tensor makes a new fake one) and the old parameter is swapped with its moved copy.
# A parameter that still cannot be swapped is rebuilt, as before. torch's own conversions of a
# module (`model.half()`, `.bfloat16()`, `.float()`, `.double()`) swap fake parameters themselves
# and failed the same way ("_apply(): Couldn't swap Linear.weight"): during the run
# torch.utils.swap_tensors drops the two tensors' memo entries first.
def _moved_parameter(param, moved):
    """`param` holding `moved`'s tensor (swapped in place), else a new Parameter around it."""
    grad = param.grad.to(moved.device) if param.grad is not None else None
    param.grad = None   # a gradient holds a second use of the tensor, which a swap refuses
    new = nn.Parameter(moved, requires_grad=param.requires_grad)
    try:
        swap(param, new)
    except RuntimeError:
        if grad is not None:
            new.grad = grad
        return new
    if grad is not None:
        param.grad = grad
    return param


def _module_cuda(redirect: DeviceRedirect):
    def cuda(self, device=None):
        redirect.requests.note("Module.cuda() runs on the imitated device")
        move(self, redirect.device)
        return self

    return cuda


def _autocast_init(original, redirect: DeviceRedirect):
    def __init__(self, device_type, *args, **kwargs):
        if device_type == "cuda":
            redirect.requests.note("autocast('cuda') runs on the imitated device")
            device_type = redirect.device.type
        original(self, device_type, *args, **kwargs)

    return __init__


def _scaler_init(original, redirect: DeviceRedirect):
    def __init__(self, device="cuda", *args, **kwargs):
        if device == "cuda":
            redirect.requests.note("GradScaler('cuda') runs on the imitated device")
            device = redirect.device.type
        original(self, device, *args, **kwargs)

    return __init__


def _scaler_step(self, optimizer, optimizer_state, *args, **kwargs):
    """GradScaler's step decision: found-inf values of fake tensors are stand-ins (`.item()`, counted
    by the recorder); a healthy run finds no inf, so the optimizer steps (NOTE [stand-ins])."""
    from torch._subclasses.fake_tensor import FakeTensor

    values = list(optimizer_state["found_inf_per_device"].values())
    found = sum(v.item() for v in values)
    if any(isinstance(v, FakeTensor) for v in values):
        found = 0
    return optimizer.step(*args, **kwargs) if not found else None


def _compile(requests: Requests):
    def compile(model=None, *args, **kwargs):
        requests.note("torch.compile ran eager (the compiled graph's kernels are not traced)")
        if model is None:
            return lambda m: m
        return model

    return compile


def _unanswered(name: str):
    def call(*args, **kwargs):
        raise UnansweredCuda(f"torch.cuda.{name}() has no answer on the imitated device; "
                             "make the call device-agnostic (torch.accelerator) or guard it")

    return call


@contextlib.contextmanager
def answering(device: str, requests: Requests):
    """Inside: CUDA requests answered as NOTE [answering CUDA requests] says."""
    from torch.amp import grad_scaler
    from torch.amp.autocast_mode import autocast

    redirect = DeviceRedirect(device, requests)
    with contextlib.ExitStack() as stack:
        stack.enter_context(patched(nn.Module, "to", _module_to(redirect)))
        stack.enter_context(patched(nn.Module, "cuda", _module_cuda(redirect)))
        if device != "cpu":   # a CPU-only machine disables them, with torch's warning
            stack.enter_context(patched(autocast, "__init__", _autocast_init(autocast.__init__, redirect)))
            stack.enter_context(patched(grad_scaler.GradScaler, "__init__",
                                        _scaler_init(grad_scaler.GradScaler.__init__, redirect)))
        stack.enter_context(patched(grad_scaler.GradScaler, "_maybe_opt_step", _scaler_step))
        stack.enter_context(patched(torch, "compile", _compile(requests)))
        stack.enter_context(patched(torch.utils, "swap_tensors", swap))   # NOTE [moved parameters keep identity]
        if device != "cpu":   # torch.cuda's functions, also asked through torch.cuda.random
            for module in (torch.cuda, torch.cuda.random):
                for name in sorted(vars(module)):
                    value = getattr(module, name)
                    if name.startswith("_") or not callable(value) or isinstance(value, type) \
                            or not (getattr(value, "__module__", None) or "").startswith("torch.cuda"):
                        continue   # classes (Stream, Event) and re-exported helpers stay as they are
                    stack.enter_context(patched(module, name, _by_name(_answered(name, requests), module, name)))
            for name in _LEGACY_TYPES:   # NOTE [legacy CUDA tensor types]
                if hasattr(torch, name) and hasattr(torch.cuda, name):
                    stack.enter_context(patched(torch.cuda, name, _legacy_type(name, redirect)))
            # torch.accelerator's memory statistics ask the device's allocator, which the imitated
            # device has none of (an internal assert): answered as torch.cuda's are, zero counters
            stack.enter_context(patched(torch._C, "_accelerator_isAllocatorInitialized",
                                        _allocator_answer(requests)))
            # torch.accelerator.synchronize() asks the device guard, which the imitated device lacks;
            # TorchNeuron synchronizes its device (torch.neuron.synchronize, neuron-facts 2.33 `memory`):
            # a no-op here, as torch.cuda.synchronize is
            stack.enter_context(patched(torch._C, "_accelerator_synchronizeDevice", _synchronize_answer(requests)))
        stack.enter_context(redirect)
        yield redirect


# NOTE [legacy CUDA tensor types]
# Code of PyTorch's first years names its tensors' type: `Tensor = torch.cuda.FloatTensor if cuda
# else torch.FloatTensor`, then `Tensor(batch, dim).normal_()`, `x.type(torch.cuda.FloatTensor)`,
# `torch.cuda.LongTensor(labels)` (GAN and VAE code copied from such examples is still common). On
# a machine without CUDA those types exist but refuse to make a tensor ("type torch.cuda.FloatTensor
# not available"), so the run stopped at the first. On the imitated device each `torch.cuda.<T>Tensor`
# makes the CPU type's tensor from the same arguments and moves it to the device (a note at its
# line), `isinstance(x, torch.cuda.FloatTensor)` asks the dtype and the device, and `x.type(...)` of
# such a type, or of its name (`'torch.cuda.FloatTensor'`), is `x.to(device, dtype)`. On `--device
# cpu` they are left as they are: the machine has no CUDA, and the script's CPU path runs.
_LEGACY_TYPES = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
                 "ShortTensor", "IntTensor", "LongTensor", "BoolTensor")


class _LegacyType(type):
    """The type of a `torch.cuda.<T>Tensor` stand-in: calling it makes a tensor on the imitated device."""

    _cpu: type
    _redirect: DeviceRedirect
    dtype: torch.dtype

    def __call__(cls, *args, **kwargs):
        cls._redirect.requests.note(f"torch.cuda.{cls.__name__} runs on the imitated device")
        return cls._cpu(*args, **kwargs).to(cls._redirect.device)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, torch.Tensor) and obj.dtype == cls.dtype and obj.device.type == cls._redirect.device.type


def _legacy_type(name: str, redirect: DeviceRedirect) -> type:
    cpu = getattr(torch, name)
    return _LegacyType(name, (), {"_cpu": cpu, "_redirect": redirect, "dtype": cpu.dtype, "__module__": "torch.cuda",
                                  "__qualname__": name})


def _legacy_cuda_dtype(target) -> torch.dtype | None:
    """The dtype of a legacy CUDA tensor type given to `Tensor.type` (the type or its name), else None."""
    name = _legacy_name(target)
    if not name.startswith("torch.cuda.") or name.removeprefix("torch.cuda.") not in _LEGACY_TYPES:
        return None
    return getattr(torch, name.removeprefix("torch.cuda.")).dtype


def _legacy_name(target) -> str:
    if isinstance(target, str):
        return target
    module, name = getattr(target, "__module__", None), getattr(target, "__name__", None)
    return f"{module}.{name}" if isinstance(module, str) and isinstance(name, str) else ""


def _allocator_answer(requests: Requests):
    def initialized(*args, **kwargs) -> bool:
        requests.note("torch.accelerator memory statistics answered as on the imitated device (0)")
        return False   # torch.accelerator.memory_* then read 0 and empty_cache does nothing

    return initialized


def _synchronize_answer(requests: Requests):
    def synchronize(*args, **kwargs) -> None:
        requests.note("torch.accelerator.synchronize answered as on the imitated device (nothing to wait for)")

    return synchronize


def _by_name(function, module, name: str):
    """`function`, named as the attribute it replaces, so that pickle finds it by that name: a library
    that sends `torch.cuda.device_count` to a process pool (Lightning 1.x's `num_cuda_devices`, a fork
    `Pool(1).apply(torch.cuda.device_count)`) pickles it by reference, and the forked process, which
    holds the same patch, calls the answer (a local function could not be pickled at all)."""
    function.__module__, function.__name__, function.__qualname__ = module.__name__, name, name
    return function


def _answered(name: str, requests: Requests):
    answer = _ANSWERS.get(name)
    if answer is None:
        return _unanswered(name)

    def call(*args, **kwargs):
        requests.note(f"torch.cuda.{name}() answered as on the imitated device")
        return answer(*args, **kwargs)

    return call


__all__ = ["DeviceRedirect", "Requests", "UnansweredCuda", "answering", "move"]
