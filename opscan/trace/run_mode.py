"""The fake mode of an `opscan run`: host data keeps its values, fake kernels return distinct outputs,
and `.numpy()` / `.tolist()` read host values (NOTE [host values])."""

from __future__ import annotations

import contextlib

import torch
from torch.utils._mode_utils import no_dispatch
from torch.utils._pytree import tree_leaves, tree_map_only

from opscan.trace import device as devices
from opscan.trace import fakes


class RunMode(devices.FakeMode):
    """FakeMode that keeps the values of small integer tensors, random ones included, and of host
    data (NOTE [host values])."""

    keep_values = True

    def dispatch(self, func, types, args=(), kwargs=None):
        if func.overloadpacket in _RANDOM_FACTORIES:
            out = self._kept_random(func, args, kwargs or {})
            if out is not None:
                return out
        if any(_host_data(t) for t in tree_leaves((args, kwargs))):
            args, kwargs = tree_map_only(torch.Tensor, self._host_constant, (args, kwargs or {}))
        out = super().dispatch(func, types, args, kwargs)
        return _distinct_outputs(self, func, out) if isinstance(out, tuple) else out

    def may_turn_const(self, t) -> bool:
        return super().may_turn_const(t) or _host_data(t)

    def _kept_random(self, func, args, kwargs):
        """A random factory's result on the host, with its values, drawn from the real generator."""
        if any(isinstance(a, torch.Tensor) for a in tree_leaves((args, kwargs))):
            return None
        if kwargs.get("device") is not None and torch.device(kwargs["device"]).type != "cpu":
            return None
        with no_dispatch():
            real = func(*args, **kwargs)
        if real.numel() > HOST_NUMEL:
            return None   # NOTE: the generator advanced as in a real run; the values are dropped
        return self._kept_fake(real, torch.device("cpu"))

    def _host_constant(self, t):
        if not _host_data(t):
            return t
        return self.fake_tensor_converter.from_real_tensor(self, t, make_constant=True)

    def _kept_fake(self, real, device: torch.device):
        return super()._kept_fake(real, device) if device.type == "cpu" else None

    def _kept_copy(self, args, kwargs):
        target = kwargs.get("device")
        return None if target is not None and torch.device(target).type != "cpu" else super()._kept_copy(args, kwargs)


# NOTE [host values]
# A script's host code needs real values: batching computes indices (`ix = torch.randint(...)`, then
# `data[i:i + block] for i in ix`; stand-ins of 1 would make each slice empty), a dataset reads its
# tensors (torchvision's MNIST: `Image.fromarray(img.numpy())`), a sampler shuffles with
# `randperm(n).tolist()`, a synthetic dataset draws images with `torch.randn`. So host tensors keep
# their values as real ones do: host random factories (randint, randperm, randn, rand) draw from the
# real generator, a real CPU tensor entering the run (from `torch.from_numpy`, `torch.frombuffer`,
# `torch.load`, or built before the run) keeps its values whatever its dtype, integer results of up
# to KEPT_NUMEL elements and integer `arange`s too (NOTE [inputs with values] in device.py), each up
# to HOST_NUMEL elements; ops whose inputs all have values compute theirs for real on the CPU
# (FakeTensorMode's constant propagation), and `.numpy()` / `.tolist()` read them. What the script
# computes from its model (weights made by `nn.Module` constructors, activations, the loss) has no
# values: a loss's `.item()` is still a counted stand-in. Values stay on the host: a tensor moved to
# the imitated device loses them (a constant there would make FakeTensorMode run a real kernel of a
# device that does not exist).
_RANDOM_FACTORIES = (torch.ops.aten.randint, torch.ops.aten.randperm, torch.ops.aten.randn, torch.ops.aten.rand)
HOST_NUMEL = 1 << 24


def _host_data(t) -> bool:
    """A real (not fake) strided CPU tensor without autograd, small enough to keep (NOTE [host values])."""
    return (type(t) is torch.Tensor and t.device.type == "cpu" and t.layout == torch.strided
            and not t.requires_grad and t.numel() <= HOST_NUMEL)


def _distinct_outputs(mode, func, out: tuple) -> tuple:
    """NOTE [distinct outputs]: an op whose schema returns fresh tensors returns distinct ones."""
    from torch._subclasses.fake_tensor import FakeTensor

    if any(r.alias_info is not None for r in func._schema.returns):
        return out
    seen: set[int] = set()
    fixed = list(out)
    for i, t in enumerate(out):
        if not isinstance(t, FakeTensor):
            continue
        if id(t) in seen:
            meta = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
            fixed[i] = FakeTensor(mode, meta, t.fake_device)
        seen.add(id(t))
    return tuple(fixed) if len(seen) < sum(isinstance(t, FakeTensor) for t in out) else out


# NOTE [distinct outputs]
# Some fake kernels return one tensor for two outputs whose real kernel returns two
# (mkldnn_rnn_layer_backward: the gradients of b_ih and b_hh of an nn.LSTM). Autograd then sees the
# gradient shared, cannot steal it for the second bias and clones it (new_empty_strided + copy_):
# ops a real run never dispatches. So a duplicate output of an op whose schema declares no alias
# is replaced by a fresh fake tensor of the same shape, strides and dtype.



@contextlib.contextmanager
def host_reads(recorder):
    """`.numpy()` and `.tolist()` of a fake tensor with values read them as a real tensor does
    (NOTE [host values]); `.numpy()` of one without values (a model's output saved as an image) is an
    array of zeros, a counted stand-in at its line; `.tolist()` gives `.item()` stand-ins."""
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

    def reader(name: str, original):
        def read(self, *args, **kwargs):
            if self.constant is None and name == "numpy" and self.device.type == "cpu":
                recorder.count_stand_in("Tensor.numpy", "numpy", "zeros", recorder.source())
                with no_dispatch():
                    return torch.zeros(self.shape, dtype=self.dtype).numpy()
            if self.constant is None:
                return original(self, *args, **kwargs)
            with unset_fake_temporarily():   # the real read, its ops (numpy's detach) recorded
                return getattr(self.constant, name)(*args, **kwargs)

        return read

    with fakes.patched(FakeTensor, "numpy", reader("numpy", FakeTensor.numpy)), \
            fakes.patched(FakeTensor, "tolist", reader("tolist", FakeTensor.tolist)):
        yield


__all__ = ["HOST_NUMEL", "RunMode", "host_reads"]
