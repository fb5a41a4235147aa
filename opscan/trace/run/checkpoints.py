"""Checkpoints of an `opscan run`: `torch.save` of fake tensors writes zeros of their shapes, and
`torch.load` of a small CPU checkpoint reads it as a real run does (NOTE [checkpoints])."""

from __future__ import annotations

import contextlib
import os
from collections import OrderedDict

import torch
from torch.utils._mode_utils import no_dispatch

from opscan.trace.fakes import patched

# NOTE [checkpoints]
# A script saves its model and loads it back (`torch.save(model, f)` after the best validation
# loss, then `model = torch.load(f)` and a test pass). A fake tensor cannot be pickled (its fake
# mode is in its state, its storage has no bytes), so `torch.save` used to stop the run there and
# the real run's later ops were missing. Now, inside `torch.save`, a fake tensor pickles as a real
# tensor of its shape, strides and dtype on CPU storage, as torch.save writes every storage: its
# values when it has them (host data, NOTE [host values] in run_mode.py), else zeros, a counted
# stand-in at the save's line (kind `save`). Tensors that share a fake storage share the real one
# (tied weights load back tied); a parameter loads back as a parameter; a tensor of the imitated
# device is written as torch writes a tensor of a backend without host storage (its CPU copy and
# its device, `_rebuild_device_tensor_from_cpu_tensor`), so it loads back onto that device.
# Under FakeTensorMode, torch.load builds fake tensors on meta storages without reading the file
# (its empty / set_ on meta, which no backend receives). A real run reads the file: the tensors
# have values and the rebuild dispatches `aten::empty.memory_format` and
# `aten::set_.source_Storage_storage_offset` on the CPU. So a checkpoint of at most LOAD_BYTES whose
# storages are all on the CPU (or mapped there) loads for real, its ops recorded, its tensors real
# CPU tensors entering the run as host data; a tensor saved from the imitated device goes back
# there under the fake mode. A larger checkpoint, or one with storages of another device, loads
# as FakeTensorMode loads it (shapes and dtypes, no values, no bytes read).
# NOTE [storage addresses]
# Code that writes a state dict tells tied or shared tensors apart by their storage's address
# (`untyped_storage().data_ptr()`: safetensors' and transformers' shared-tensor checks before
# `save_pretrained`; `{p.data_ptr(): p.numel()}` to count parameters). A fake storage is a meta storage
# whose data_ptr is 0 for all: every weight looked shared with every other, and transformers refused
# to save. Inside the run a meta storage's data_ptr is the address of its storage object (distinct per
# storage, the same for its views, as a real one's), and a fake tensor's adds its offset. It is an
# address nothing is stored at: the only reader of the bytes behind it, safetensors' writer, is
# handed a real tensor in the fake one's place (NOTE [checkpoints]).
LOAD_BYTES = 1 << 26
_DEVICE_REBUILD = "torch._utils._rebuild_device_tensor_from_cpu_tensor"


class _NotHost(Exception):
    """A storage of the checkpoint is not on the CPU."""


class _Reduced:
    """Pickles as the given reduce tuple (a rebuild nested in another, e.g. a device parameter)."""

    def __init__(self, reduced: tuple) -> None:
        self.reduced = reduced

    def __reduce_ex__(self, proto):
        return self.reduced


class _Zeros:
    """FakeTensor.__reduce_ex__ during one torch.save: a real tensor in the fake one's place."""

    def __init__(self) -> None:
        self.storages: dict[int, torch.UntypedStorage] = {}
        self.alive: list = []   # NOTE: torch.save keys storages by address: keep each one alive
        self.zeros = 0

    def reduce(self, fake, proto):
        real = self._real(fake)
        if getattr(fake, "_is_param", False):
            param = torch.nn.Parameter(real, requires_grad=fake.requires_grad)
            self.alive.append(param)
            if fake.device.type == "cpu":
                return param.__reduce_ex__(proto)
            data = _Reduced(self._on_device(fake, real, False))
            self.alive.append(data)
            return torch._utils._rebuild_parameter, (data, fake.requires_grad, OrderedDict())
        if fake.device.type != "cpu":
            return self._on_device(fake, real, fake.requires_grad)
        return real.__reduce_ex__(proto)

    def _on_device(self, fake, real, requires_grad: bool) -> tuple:
        return torch._utils._rebuild_device_tensor_from_cpu_tensor, (real, fake.dtype, str(fake.device),
                                                                       requires_grad)

    def _real(self, fake) -> torch.Tensor:
        with no_dispatch():
            if fake.constant is not None:
                real = fake.constant.detach().cpu()
            else:
                key = fake.untyped_storage()._cdata
                storage = self.storages.get(key)
                if storage is None:
                    nbytes = fake.untyped_storage().nbytes()
                    storage = self.storages[key] = torch.zeros(nbytes, dtype=torch.uint8).untyped_storage()
                    self.zeros += 1
                real = torch.empty(0, dtype=fake.dtype).set_(storage, fake.storage_offset(), fake.shape,
                                                             fake.stride())
            if fake.requires_grad and not getattr(fake, "_is_param", False):
                real = real.detach().requires_grad_(True)
        self.alive.append(real)
        return real


@contextlib.contextmanager
def checkpoints(recorder):
    """Inside: torch.save and torch.load as NOTE [checkpoints] says; stand-ins counted on `recorder`."""
    from torch._subclasses.fake_tensor import FakeTensor

    original_save, original_load = torch.save, torch.load

    def save(obj, f, *args, **kwargs):
        zeros = _Zeros()
        with patched(FakeTensor, "__reduce_ex__", lambda fake, proto: zeros.reduce(fake, proto)):
            out = original_save(obj, f, *args, **kwargs)
        if zeros.zeros:
            recorder.count_stand_in("torch.save", "save", "zeros", recorder.source())
        return out

    def load(f, map_location=None, *args, **kwargs):
        if not _to_host(map_location) or _size(f) > LOAD_BYTES:
            return original_load(f, map_location, *args, **kwargs)
        position = f.tell() if hasattr(f, "tell") and hasattr(f, "seek") else None
        try:
            with _real_load() as fake, _device_rebuild(fake), _host_only():
                return original_load(f, map_location, *args, **kwargs)
        except _NotHost:
            if position is not None:
                f.seek(position)
            return original_load(f, map_location, *args, **kwargs)

    with patched(torch, "save", save), patched(torch, "load", load), _addresses(), _safetensors(recorder):
        yield


@contextlib.contextmanager
def _addresses():
    """NOTE [storage addresses]: a fake storage's data_ptr is its own, as a real one's is."""
    from torch._subclasses.fake_tensor import FakeTensor

    original = torch.UntypedStorage.data_ptr

    def storage_ptr(self):
        return self._cdata if self.device.type == "meta" else original(self)

    def tensor_ptr(self):
        return self.untyped_storage().data_ptr() + self.storage_offset() * self.element_size()

    with patched(torch.UntypedStorage, "data_ptr", storage_ptr), patched(FakeTensor, "data_ptr", tensor_ptr):
        yield


@contextlib.contextmanager
def _safetensors(recorder):
    """safetensors' writers (save_file, save, save_model) write a fake tensor as torch.save does
    (NOTE [checkpoints]): its values, else zeros, one counted stand-in per file at its line."""
    try:
        from safetensors import torch as st
    except ImportError:
        yield
        return
    reader = getattr(st, "_to_ndarray", None)
    flatten = getattr(st, "_flatten_as_ptr", None) or getattr(st, "_flatten", None)
    if reader is None or flatten is None:   # another safetensors: its writers are left as they are
        yield
        return
    zeros = _Zeros()

    def to_ndarray(tensor, *args, **kwargs):
        from torch._subclasses.fake_tensor import FakeTensor

        if isinstance(tensor, FakeTensor):
            with no_dispatch():
                tensor = zeros._real(tensor).detach()
        return reader(tensor, *args, **kwargs)

    def flattened(*args, **kwargs):
        before = zeros.zeros
        try:
            return flatten(*args, **kwargs)
        finally:
            if zeros.zeros > before:
                recorder.count_stand_in("safetensors.save", "save", "zeros", recorder.source())
            zeros.alive.clear()
            zeros.storages.clear()

    with patched(st, "_to_ndarray", to_ndarray), patched(st, flatten.__name__, flattened):
        yield


@contextlib.contextmanager
def _host_only():
    """Storages saved on another device than the CPU (and not mapped to it) stop the real load."""
    from torch import serialization

    original = serialization.default_restore_location

    def restore(storage, location: str):
        if location != "cpu":
            raise _NotHost(location)
        return original(storage, location)

    with patched(serialization, "default_restore_location", restore):
        yield


def _to_host(map_location) -> bool:
    if map_location is None:
        return True
    if isinstance(map_location, (str, torch.device)):
        return torch.device(map_location).type == "cpu"
    return False


def _size(f) -> int:
    """The checkpoint's size in bytes (a file object: from its position to its end)."""
    if isinstance(f, (str, os.PathLike)):
        return os.path.getsize(f) if os.path.isfile(f) else 0
    if hasattr(f, "seek") and hasattr(f, "tell"):
        try:
            here = f.tell()
            end = f.seek(0, os.SEEK_END)
            f.seek(here)
            return end - here
        except (OSError, ValueError):
            return LOAD_BYTES + 1
    return LOAD_BYTES + 1


@contextlib.contextmanager
def _real_load():
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily() as fake:
        yield fake


@contextlib.contextmanager
def _device_rebuild(fake):
    """A tensor saved from the imitated device is rebuilt there, under the fake mode."""
    from torch import _utils
    from torch import _weights_only_unpickler as unpickler

    original = _utils._rebuild_device_tensor_from_cpu_tensor

    def rebuild(data, dtype, device, requires_grad):
        if torch.device(device).type == "cpu" or fake is None:
            return original(data, dtype, device, requires_grad)
        with fake:
            return original(data, dtype, device, requires_grad)

    allowed = unpickler._get_allowed_globals()
    previous = allowed.get(_DEVICE_REBUILD)
    allowed[_DEVICE_REBUILD] = rebuild
    try:
        with patched(_utils, "_rebuild_device_tensor_from_cpu_tensor", rebuild):
            yield
    finally:
        if previous is None:
            allowed.pop(_DEVICE_REBUILD, None)
        else:
            allowed[_DEVICE_REBUILD] = previous


__all__ = ["LOAD_BYTES", "checkpoints"]
