"""The fake mode of an `opscan run`: host data keeps its values, fake kernels return distinct outputs,
and `.numpy()` / `.tolist()` read host values (NOTE [host values])."""

from __future__ import annotations

import contextlib
import weakref

import torch
from torch._subclasses.fake_tensor import FakeTensorConverter
from torch.utils._mode_utils import no_dispatch
from torch.utils._pytree import tree_leaves, tree_map_only

from opscan.trace import device as devices
from opscan.trace import fakes
from opscan.trace.device import KEPT_NUMEL


class RunMode(devices.FakeMode):
    """FakeMode that keeps the values of small integer tensors, random ones included, and of host
    data (NOTE [host values])."""

    keep_values = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.undrawn = 0   # random host ops too large (or invalid) to draw for real (NOTE [host random stream])
        self.fake_tensor_converter = _Converter(copy_data=self.fake_tensor_converter.meta_converter.copy_data,
                                                export=self.fake_tensor_converter.export)

    def dispatch(self, func, types, args=(), kwargs=None):
        if func.overloadpacket in _RANDOM_FACTORIES:
            out = self._kept_random(func, args, kwargs or {})
            if out is not None:
                return out
        if func.overloadpacket in _HOST_FACTORIES:
            out = self._kept_host_factory(func, args, kwargs or {})
            if out is not None:
                return out
        if torch.Tag.nondeterministic_seeded in func.tags:
            kept = self._drawn(func, args, kwargs or {})
            if kept is not None:
                return kept
        if func is torch.ops.aten._coalesced_.default:
            return self._coalesced(func, types, args, kwargs)
        if func is torch.ops.aten._to_copy.default:
            moved = self._sparse_moved(func, types, args, kwargs or {})
            if moved is not None:
                return moved
        if any(_host_data(t) for t in tree_leaves((args, kwargs))):
            args, kwargs = tree_map_only(torch.Tensor, self._host_constant, (args, kwargs or {}))
        device = _sparse_device(args, kwargs)
        if device is not None:
            return self._sparse_on_host(func, types, args, kwargs, device)
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

    def _drawn(self, func, args, kwargs):
        """A random op on fake host tensors draws from the real generator as a real run does (NOTE
        [host random stream]); an in-place fill of a small integer host tensor keeps its values
        (returned, the tensor now holding them), else None: the op goes on as a fake one."""
        fakes_in = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        if not fakes_in or any(t.device.type != "cpu" or t.layout != torch.strided or not self.is_our_fake(t)
                               and not _host_data(t) for t in fakes_in):
            return None   # a device op draws from the device's generator, not the host's
        generator = kwargs.get("generator")
        if generator is not None and generator.device.type != "cpu":
            return None
        if sum(t.numel() for t in fakes_in) > DRAW_NUMEL:
            self.undrawn += 1
            return None   # NOTE: the host stream differs from here on

        def real(t):
            held = getattr(t, "constant", None)
            if held is not None:
                return held.clone()
            made = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype)
            return made.fill_(0.5 if made.is_floating_point() or made.is_complex() else 0)

        with no_dispatch():
            substitutes = tree_map_only(torch.Tensor, real, (args, kwargs))
            try:
                out = func(*substitutes[0], **substitutes[1])
            except Exception:   # noqa: BLE001 - values the stand-ins make invalid: no draw known
                self.undrawn += 1
                return None
        target = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if (func._schema.is_mutable and target is not None and self.is_our_fake(target) and out is not None
                and not target.requires_grad and not target.is_floating_point() and not target.is_complex()
                and target.numel() <= KEPT_NUMEL and isinstance(out, torch.Tensor)):
            target.constant = out   # the sampler's seed: `torch.empty((), dtype=torch.int64).random_()`
            self.fake_tensor_converter.add_constant_storage_mapping(target)
            return target
        return None

    def _kept_host_factory(self, func, args, kwargs):
        """`torch.zeros(n, dtype=torch.long)`, `torch.full(...)`, `torch.eye(n)` ... on the host, with
        their values (NOTE [host values]); None when not on the host or larger than HOST_NUMEL."""
        from torch.fx.operator_schemas import normalize_function

        if any(isinstance(a, torch.Tensor) for a in tree_leaves((args, kwargs))):
            return None
        if kwargs.get("device") is not None and torch.device(kwargs["device"]).type != "cpu":
            return None
        if kwargs.get("layout") not in (None, torch.strided):
            return None
        normal = normalize_function(func, args, kwargs, normalize_to_only_use_kwargs=True)
        numel = _factory_numel(normal.kwargs) if normal is not None else None
        if numel is None or numel > HOST_NUMEL:
            return None
        with no_dispatch():
            real = func(*args, **kwargs)
        return self._kept_fake(real, torch.device("cpu"))

    def _coalesced(self, func, types, args, kwargs):
        """A sparse tensor's coalesced flag, set on its values too but not through constant propagation,
        which would make a fake tensor of its output again (NOTE [sparse host data])."""
        from torch._subclasses.fake_tensor import FakeTensor

        t = args[0]
        held = t.constant if isinstance(t, FakeTensor) else None
        if held is None:
            return super().dispatch(func, types, args, kwargs)
        with no_dispatch():
            held._coalesced_(*args[1:], **(kwargs or {}))
        t.constant = None
        try:
            return super().dispatch(func, types, args, kwargs)
        finally:
            t.constant = held

    def _sparse_moved(self, func, types, args, kwargs):
        """A sparse COO tensor moved to the imitated device (NOTE [sparse tensors moved to the device])."""
        src = args[0] if args else None
        target = kwargs.get("device")
        if getattr(src, "layout", None) != torch.sparse_coo or target is None or torch.device(target).type == "cpu":
            return None
        out = self.dispatch(func, types, args, {**kwargs, "device": torch.device("cpu")})
        device = torch.device(target)
        out.constant = None   # values do not follow a tensor onto the device (NOTE [host values])
        out.fake_device = device if device.index is not None else torch.device(device.type, 0)
        return out

    def _sparse_on_host(self, func, types, args, kwargs, device: torch.device):
        """An op on a sparse tensor of the imitated device, dispatched as on the host and its
        results placed on the device (NOTE [sparse tensors moved to the device])."""
        from torch._subclasses.fake_tensor import FakeTensor

        moved = [t for t in tree_leaves((args, kwargs)) if isinstance(t, FakeTensor) and t.fake_device == device]
        for t in moved:
            t.fake_device = torch.device("cpu")
        try:
            out = super().dispatch(func, types, args, kwargs)
        finally:
            for t in moved:
                t.fake_device = device
        inputs = {id(t) for t in moved}
        for t in tree_leaves(out):
            if isinstance(t, FakeTensor) and t.fake_device.type == "cpu" and id(t) not in inputs:
                t.constant = None
                t.fake_device = device
        return out

    def _host_constant(self, t):
        if not _host_data(t):
            return t
        return self.fake_tensor_converter.from_real_tensor(self, t, make_constant=True)

    def _kept_fake(self, real, device: torch.device):
        return super()._kept_fake(real, device) if device.type == "cpu" else None

    def _kept_copy(self, args, kwargs):
        target = kwargs.get("device")
        if target is not None and torch.device(target).type != "cpu":
            return self._small_on_device(args, kwargs, torch.device(target))
        return super()._kept_copy(args, kwargs)

    def _small_on_device(self, args, kwargs, device: torch.device):
        """A few host values moved to the imitated device keep them (NOTE [a few values on the device])."""
        from torch._subclasses.fake_tensor import FakeTensor

        src = args[0] if args else None
        if not isinstance(src, FakeTensor) or src.constant is None or len(args) != 1 or \
                src.layout != torch.strided or src.numel() > DEVICE_NUMEL:
            return None
        dtype = kwargs.get("dtype") or src.dtype
        if not dtype.is_floating_point:   # labels and indices lose their values, as before
            return None
        with no_dispatch():
            real = src.constant.to(dtype=dtype).clone()
        return devices.FakeMode._kept_fake(self, real, device)


# NOTE [host values]
# A script's host code needs real values: batching computes indices (`ix = torch.randint(...)`, then
# `data[i:i + block] for i in ix`; stand-ins of 1 would make each slice empty), a dataset reads its
# tensors (torchvision's MNIST: `Image.fromarray(img.numpy())`), a sampler shuffles with
# `randperm(n).tolist()`, a synthetic dataset draws images with `torch.randn`. So host tensors keep
# their values as real ones do: host random factories (randint, randperm, randn, rand) draw from the
# real generator, a real CPU tensor entering the run (from `torch.from_numpy`, `torch.frombuffer`,
# `torch.load`, or built before the run) keeps its values whatever its dtype, so do host factories
# whose arguments give their values (zeros, ones, full, eye, arange, linspace, scalar_tensor: a
# dataset writes a word's codes into `torch.zeros(n, dtype=torch.long)`, and an item without values
# would leave the loader's worker path, NOTE [loader workers]; not `empty`, where a module's weights
# start before their random init), integer results of up to KEPT_NUMEL elements and integer
# `arange`s too (NOTE [inputs with values] in device.py), each up to HOST_NUMEL elements (a
# factory's size is checked before it is made); ops whose inputs all have values compute theirs for real on the CPU
# (FakeTensorMode's constant propagation), and `.numpy()` / `.tolist()` read them. What the script
# computes from its model (weights made by `nn.Module` constructors, activations, the loss) has no
# values: a loss's `.item()` is still a counted stand-in. Values stay on the host: a tensor moved to
# the imitated device loses them (a constant there would make FakeTensorMode run a real kernel of a
# device that does not exist).
#
# NOTE [sparse host data]
# Host code also builds sparse COO tensors from its data (`torch.diag(v).to_sparse()`, an adjacency
# from an edge list with `torch.sparse_coo_tensor`) and multiplies or adds them to dense ones. They
# keep their values like dense host data, limited by what they store (indices and values), not by
# their dense size. FakeTensorMode's constants assume a storage: it finds a written constant's
# aliases through it, which a sparse tensor has not (`Cannot access storage of SparseTensorImpl`),
# so the run's converter keeps sparse constants apart (their only alias is the fake tensor holding
# them), and a sparse tensor's coalesced flag is set on the fake tensor and on its values without
# constant propagation (which would convert the same tensor again, without end). Other sparse
# layouts (CSR, CSC, BSR) are not kept: they are fake sparse tensors without values.
# NOTE [sparse tensors moved to the device]
# FakeTensorMode has no fake kernel for moving a sparse tensor (`_to_copy` of a COO tensor): it runs
# the real one on zeros of the target device, and the imitated device has no real kernels (a graph
# recommender's normalised adjacency, `graph.coalesce().to(device)`, stopped the run there). The
# move is made on the host as for a CPU target, and the result is placed on the device without
# values, as a dense tensor moved there is. Its ops (`torch.sparse.mm(graph, embeddings)` and their
# backward) have no fake kernels either: an op with a sparse argument on the imitated device is
# dispatched as on the host (torch's fallback on zeros of those shapes, on the CPU) and its results
# are placed on the device, without values. The op is recorded as the device op it is.
# NOTE [a few values on the device]
# Values stay on the host (NOTE [host values]), except a few: a floating-point host tensor of at
# most DEVICE_NUMEL elements moved to the imitated device keeps its values there (an ODE solver's
# time points `torch.tensor([0, t]).to(device)`, a scale), so the code that checks or steps
# through them (`assert grid[0] == t[0]`, `torch.ceil((t1 - t0) / h).item()`) reads the real run's
# numbers, not stand-ins. Ops whose inputs all hold values compute them on the host and keep the
# result on the device (NOTE [inputs with values] in device.py); an op with a model's tensor (no
# values) is fake as before. Integer tensors (labels, indices: torch's loss decompositions mix them
# with the model's outputs in ops that would then run real kernels of the device), batches and
# larger data lose their values when moved, as before.
DEVICE_NUMEL = 64
# NOTE [host random stream]
# A script seeds the host generator once and every random op on the host draws from it: a module's
# weight init (`uniform_`, `normal_` of nn.Linear's reset_parameters, on the CPU before `.to(device)`),
# dropout on the CPU, the sampler's seed (`torch.empty((), dtype=torch.int64).random_()`). On fake
# tensors those ops draw nothing, so the batch indices drawn after them (`torch.randint` in a
# `get_batch`, a shuffled loader's order) would not be the real run's, and neither would the ints
# the data pipeline's ops get (a sample index given to `select`). So a random op on fake host
# tensors (or on host data) is also run for real on scratch tensors of the same shapes, strides and
# dtypes (values 0.5 or 0, or the held values), from the same generator: it consumes the draws a
# real run consumes, whatever the op's kernel does with them. An in-place fill of a small integer
# tensor (the sampler's seed) keeps the drawn values, as a host random factory does. Ops on the
# imitated device draw from the device's generator in a real run, not the host's, and are not
# drawn. Past DRAW_NUMEL elements per op (a large embedding's init) nothing is drawn, counted in
# `undrawn`: the host stream differs from the real one from there on.
DRAW_NUMEL = 1 << 26
_RANDOM_FACTORIES = (torch.ops.aten.randint, torch.ops.aten.randperm, torch.ops.aten.randn, torch.ops.aten.rand)
HOST_NUMEL = 1 << 24
# Factories whose values their arguments give (NOTE [host values]).
_HOST_FACTORIES = (torch.ops.aten.zeros, torch.ops.aten.ones, torch.ops.aten.full, torch.ops.aten.eye,
                   torch.ops.aten.arange, torch.ops.aten.linspace, torch.ops.aten.scalar_tensor)


def _factory_numel(arguments: dict) -> int | None:
    """The element count a factory call makes, from its normalized arguments; None if not plain ints."""
    import math

    try:
        if "size" in arguments:
            return math.prod(int(n) for n in arguments["size"]) if all(type(n) is int for n in arguments["size"]) \
                else None
        if "n" in arguments:
            m = arguments.get("m")
            return int(arguments["n"]) * int(arguments["n"] if m is None else m)
        if "steps" in arguments:
            return int(arguments["steps"])
        if "end" in arguments:
            start, step = arguments.get("start") or 0, arguments.get("step") or 1
            return max(0, math.ceil((float(arguments["end"]) - float(start)) / float(step)))
        return 1   # scalar_tensor
    except (TypeError, ValueError, ZeroDivisionError):
        return None


def _sparse_device(args, kwargs) -> torch.device | None:
    """The imitated device of a sparse COO fake tensor among the op's arguments, or None."""
    from torch._subclasses.fake_tensor import FakeTensor

    for t in tree_leaves((args, kwargs)):
        if isinstance(t, FakeTensor) and t.layout == torch.sparse_coo and t.fake_device.type != "cpu":
            return t.fake_device
    return None


def _host_data(t) -> bool:
    """A real (not fake) CPU tensor without autograd, strided or sparse, small enough to keep (NOTE
    [host values], NOTE [sparse host data])."""
    if type(t) is not torch.Tensor or t.device.type != "cpu" or t.requires_grad:
        return False
    if t.layout == torch.strided:
        return t.numel() <= HOST_NUMEL
    return t.layout == torch.sparse_coo and _sparse_numel(t) <= HOST_NUMEL


def _sparse_numel(t) -> int:
    """The elements a COO tensor stores: its indices and values (its dense size may be far larger)."""
    with no_dispatch():
        return t._indices().numel() + t._values().numel()


class _Converter(FakeTensorConverter):
    """FakeTensorMode's converter, keeping sparse constants too (NOTE [sparse host data]): it finds the
    aliases of a written constant through its storage, which a sparse tensor does not have; a sparse
    constant's only alias is the fake tensor that holds it."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.sparse_constants: list = []

    def add_constant_storage_mapping(self, fake_tensor) -> None:
        if fake_tensor.constant is not None and fake_tensor.constant.layout != torch.strided:
            self.sparse_constants = [r for r in self.sparse_constants if r() is not None]
            self.sparse_constants.append(weakref.ref(fake_tensor))
            return
        super().add_constant_storage_mapping(fake_tensor)

    def invalidate_constant_aliases(self, tensor) -> None:
        if tensor.layout == torch.strided:
            super().invalidate_constant_aliases(tensor)
            return
        for ref in self.sparse_constants:
            fake = ref()
            if fake is not None and fake.constant is tensor:
                fake.constant = None


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
    array of zeros, a counted stand-in at its line; `.tolist()` gives `.item()` stand-ins; `.numpy()`
    of a real tensor reads its values."""
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

    real_numpy = torch.Tensor.numpy

    def numpy(self, *args, **kwargs):
        # a real tensor (a loader worker's batch, handed over as real: NOTE [loader workers]) read under
        # the fake mode: numpy's detach made a fake tensor of it and the array held no values
        if isinstance(self, FakeTensor):
            return real_numpy(self, *args, **kwargs)
        with unset_fake_temporarily():
            return real_numpy(self, *args, **kwargs)

    with fakes.patched(FakeTensor, "numpy", reader("numpy", FakeTensor.numpy)), \
            fakes.patched(FakeTensor, "tolist", reader("tolist", FakeTensor.tolist)), \
            fakes.patched(torch.Tensor, "numpy", numpy):
        yield


__all__ = ["HOST_NUMEL", "RunMode", "host_reads"]
