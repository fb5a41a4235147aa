"""Compile signatures: each dispatched op in the terms of TorchNeuron's compile cache (op + input
shapes + dtypes), the line that made each tensor's shape, and the step log the forecast reads.

NOTE [compile signatures]
TorchNeuron compiles every eager op before it runs and caches the result under the op's name and
its inputs' shapes and dtypes (shared/neuron-facts, torchneuron-devsnapshot-2026-04-21.yaml,
`compilation`): a new shape is a new compile. The canonical string of one call (docs/json.md,
"compile") is `op(a;b;...)`: the op with its overload (`aten::addmm`, `aten::add.Tensor`), then
its arguments in dispatch order (positional, then keyword values), each written as: a tensor
`(d0, d1):dtype` (the shape as a Python tuple, a size not known as the tracer's symbol, the dtype
without `torch.`); an int, bool or str as its repr; a dtype, layout or memory format as its name
without `torch.`; a list or tuple as `[x,y]`; anything else (floats, None, devices, generators)
left out, leaving no separator. An op with no written argument has no signature.

NOTE [shape origins]
Where a tensor's shape comes from is carried along the ops as an origin (cause, line):
- a data-dependent op (nonzero, masked_select, unique, boolean-mask indexing, repeat_interleave
  with a tensor, a split by sizes read from a tensor) makes an origin "data-dependent" at its line:
  fake tensors cannot know the size, so every op fed by its output is expected to see a new shape
  every step;
- an op of the data pipeline (on host tensors, or on host data with values when the run imitates
  the CPU) makes an origin "data" at its line, unless it keeps the shape of an input that has one
  (a copy, a cast, an elementwise op): the line that made the shape is the collate function's, or
  the loop's `for batch in loader` line for torch's default collate;
- a DataLoader whose last batch is short (`drop_last=False`, a dataset size not divisible by the
  batch size) marks the batches it yields: the ops they feed see a tail batch once per epoch;
- a device op passes the strongest origin of its inputs on to its outputs (data-dependent first);
- a module's buffers are the model's constants, not data: a buffer made from Python data when the
  model was built (BERT's `position_ids = torch.arange(...)`) carries no origin once the module runs;
- a view of a tensor with no origin (a slice, a narrow, an expand or a view of a constant) whose
  int argument is a size of a tensor the data made in this step, and whose output has that size
  (`position_ids[:, :seq_length]` with the batch's length), takes that tensor's origin: the size
  came from the data (matched by value: a model size equal to a batch's size by chance is taken for
  the batch's too).
A new signature of a later step is explained by the origin of its inputs; one with none came from a
Python number that became a shape at the op's own line.

NOTE [unknown sizes]
A data-dependent op's output size is unknown to fake tensors; the trace runs on with a stand-in
upper bound (NOTE [stand-ins] in standins.py), but the signatures do not claim it: each size of a
stand-in output equal to its upper bound (the element count of an input) is written as a symbol,
`u0`, `u1`, ... in the order the step makes them (numbered again from u0 in each step, as the
tracer's unbacked symbols are), e.g. `aten::addmm((16,):float32;(u0, 16):float32;(16, 16):float32)`.
The symbol travels with the tensors: an op's output size equal to an unknown size of one of its
inputs is that symbol (`x[rows]`, the expert's matmul, its gradient), except the output of an op
written into a tensor of a fixed shape (index_add's `self`) or of a parameter's shape, and a size an
op is given as an int: a new tensor's (`new_zeros(g, [12, 16])`) keeps none, an `expand` or a
`view` keeps the input's unknown sizes that stay in place (right-aligned, same size), and its size
list writes them as the symbols (`expand((u0, 16):float32;[u0,16])`). A split by
sizes read from stand-in values marks its parts' sizes the same way. Sizes are matched by value,
so a fixed size equal to an upper bound by chance is written as the symbol too.
"""

from __future__ import annotations

import contextlib
import weakref

import torch

from opscan.records import CompileCause, OpSource

# the causes of a shape that changes between steps, strongest first (docs/json.md, "compile")
CAUSES = {
    "data-dependent": "an op whose output size depends on tensor values: a new shape every step likely",
    "data": "input shapes from the data (a loader or collate line)",
    "number": "a Python number that became a shape",
    "tail-batch": "the last, short batch of an epoch (drop_last=False)",
    "first-run": "an op at a line first run after the first step (a print, a scheduler's later branch): "
                 "compiled once there, not a changing shape",
}
DYNAMIC_KINDS = ("dynamic-shape", "split-sizes")   # stand-in kinds whose output size the data decides
_RANK = {"data-dependent": 0, "data": 1}
# ops whose output has the shape of their first argument, whatever the shapes of the others
_INTO = ("aten::index_add", "aten::index_put", "aten::_index_put_impl", "aten::index_copy", "aten::index_fill",
         "aten::scatter", "aten::masked_scatter", "aten::masked_fill", "aten::slice_scatter",
         "aten::select_scatter", "aten::diagonal_scatter", "aten::as_strided_scatter")

_NAMED = (torch.dtype, torch.layout, torch.memory_format)
_LAZY = torch.nn.parameter.UninitializedTensorMixin


def _tensor(t: torch.Tensor, unknown: dict[int, str] | None = None) -> str:
    dims = [unknown.get(i, str(d)) if unknown else str(d) for i, d in enumerate(t.shape)]
    shape = "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
    return f"{shape}:{str(t.dtype).removeprefix('torch.')}"


def written(value, symbols=None) -> str | None:
    """One argument as the signature writes it (NOTE [compile signatures]); None when left out.

    `symbols(t)`: the sizes of tensor `t` that are not known, {dim: symbol} (NOTE [unknown sizes])."""
    if isinstance(value, torch.Tensor):
        if isinstance(value, _LAZY):
            return None   # a lazy module's: no shape yet
        return _tensor(value, symbols(value) if symbols is not None else None)
    if isinstance(value, _Symbol):
        return str(value)
    if isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, (torch.SymInt, torch.SymBool)):
        return str(value)
    if isinstance(value, _NAMED):
        return str(value).removeprefix("torch.")
    if isinstance(value, (list, tuple)):
        parts = (written(item, symbols) for item in value)
        return "[" + ",".join(p for p in parts if p is not None) + "]"
    return None


def signature(name: str, args=(), kwargs=None, symbols=None) -> str | None:
    """The canonical signature of one call of op `name` (`aten::add.Tensor`; `.default` dropped)."""
    parts = [w for w in (written(a, symbols) for a in (*args, *(kwargs or {}).values())) if w is not None]
    if not parts:
        return None
    return f"{name.removesuffix('.default')}({';'.join(parts)})"


class Origins:
    """The origin (cause, line, tail) of tensors' shapes, by tensor (NOTE [shape origins])."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[weakref.ref, tuple]] = {}
        self._limit = 1 << 16   # pruned past this size (a run with no optimizer step never ends a step)
        self._unknown: dict[int, tuple[weakref.ref, dict[int, str]]] = {}   # NOTE [unknown sizes]
        # the line of the last `.item()` stand-in (NOTE [numbers that become shapes] in numbers.py)
        self.read_at: OpSource | None = None
        self.number: tuple | None = None       # (origin, value) of a stand-in number given to the running torch call
        self._symbols = 0       # symbols given in this step (u0, u1, ...)
        self.sizes: dict[int, tuple] = {}      # a size of a tensor the data made in this step -> its origin

    def unknown(self, t) -> dict[int, str] | None:
        """The sizes of `t` the data decides, {dim: symbol} (NOTE [unknown sizes]); None: all known."""
        held = self._unknown.get(id(t))
        if held is None or held[0]() is not t:
            return None
        return held[1]

    def set_unknown(self, t, dims: dict[int, str]) -> None:
        try:
            self._unknown[id(t)] = (weakref.ref(t), dims)
        except TypeError:
            return

    def symbol(self) -> str:
        """A new symbol for a size the data decides, numbered from u0 in each step."""
        self._symbols += 1
        return f"u{self._symbols - 1}"

    def forget(self, t) -> None:
        """`t` carries no origin (a module's buffer: the model's constant, NOTE [shape origins])."""
        self._by_id.pop(id(t), None)

    def get(self, t) -> tuple | None:
        held = self._by_id.get(id(t))
        if held is None or held[0]() is not t:
            return None
        return held[1]

    def set(self, t, origin: tuple) -> None:
        try:
            self._by_id[id(t)] = (weakref.ref(t), origin)
        except TypeError:
            return
        if len(self._by_id) > self._limit:
            self.prune()
            self._limit = max(1 << 16, 2 * len(self._by_id))

    def prune(self) -> None:
        self._by_id = {k: v for k, v in self._by_id.items() if v[0]() is not None}
        self._unknown = {k: v for k, v in self._unknown.items() if v[0]() is not None}
        self._symbols = 0


def _numel(t) -> object:
    try:
        return int(t.numel())
    except Exception:   # noqa: BLE001 - a symbolic size: compared as written
        return str(t.shape)


# ops whose output sizes are given as ints: a new tensor's (none kept), a view's or an expand's (the
# input's own sizes kept where they stay in place, NOTE [unknown sizes])
_MADE = ("aten::new_zeros", "aten::new_empty", "aten::new_full", "aten::new_ones", "aten::zeros", "aten::ones",
         "aten::empty", "aten::full")
_SIZED = ("aten::expand", "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias",
          "aten::broadcast_to", "aten::as_strided")


# views of a tensor cut or shaped by int sizes: where a constant (a buffer) takes the data's size
_CUT = ("aten::slice", "aten::narrow", "aten::expand", "aten::view", "aten::_unsafe_view", "aten::reshape")


class _Symbol(str):
    """A size argument written as its symbol (NOTE [unknown sizes])."""


def _symbolic_sizes(args, source, unknown: dict[int, str]) -> tuple:
    """The args of a view or expand of `source` with each int size equal to an unknown size of the
    source at the same place (right-aligned) written as its symbol: `expand((u0, 16);[u0,16])`."""
    shape = tuple(source.shape)
    out = list(args)
    for k, a in enumerate(out):
        if isinstance(a, (list, tuple)) and all(type(n) is int for n in a):
            shift = len(a) - len(shape)
            sizes: list = list(a)
            for i, sym in unknown.items():
                if 0 <= i + shift < len(sizes) and sizes[i + shift] == shape[i]:
                    sizes[i + shift] = _Symbol(sym)
            out[k] = sizes
            break
    return tuple(out)


def _ints(values) -> list[int]:
    """The plain ints among call arguments, one level into lists, tuples and slices."""
    out: list[int] = []
    for value in values:
        if type(value) is int:
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(v for v in value if type(v) is int)
        elif isinstance(value, slice):
            out.extend(v for v in (value.start, value.stop, value.step) if type(v) is int)
    return out


def _best(origins: list[tuple]) -> tuple | None:
    """The strongest origin (data-dependent before data), the first of its rank."""
    return min(origins, key=lambda o: _RANK[o[0]]) if origins else None


class Seen:
    """One distinct signature in a step: its phases, the first call's line and its inputs' origin."""

    __slots__ = ("op", "phases", "source", "origin")

    def __init__(self, op: str, source: OpSource | None, origin: tuple | None) -> None:
        self.op, self.phases, self.source, self.origin = op, set(), source, origin


class CompileLog:
    """The signatures of a run, in segments (one per optimizer step, plus the rest), and the shape
    origins of its tensors; a host recorder's log shares its device recorder's origins."""

    def __init__(self, origins: Origins | None = None) -> None:
        self.origins = origins or Origins()
        self.segments: list[tuple[object, dict[str, Seen]]] = []
        self.current: dict[str, Seen] = {}
        self.fixed: set[tuple] = set()   # parameter shapes (and transposed): never a data-made shape
        self._modules: set[int] = set()

    def module(self, module) -> None:
        """A module was called: its parameters' shapes are fixed shapes (a gradient, an optimizer state)."""
        if id(module) in self._modules:
            return
        self._modules.add(id(module))
        for p in module.parameters(recurse=False):
            if torch.nn.parameter.is_lazy(p):
                self._modules.discard(id(module))   # shaped by its first forward: looked at again
                continue
            shape = tuple(p.shape)
            self.fixed.update((shape, shape[::-1]))
        for b in module.buffers(recurse=False):   # the model's constants carry no data origin (NOTE [shape origins])
            self.origins.forget(b)

    def record(self, name: str, phase: str, source: OpSource | None, args, kwargs, inputs: list,
               outputs: list, *, data: bool, dynamic: bool) -> None:
        """One dispatched call: its signature counted, its outputs' origins set (NOTE [shape origins]).

        `data`: an op of the data pipeline; `dynamic`: its output size came from a stand-in."""
        found = [o for o in (self.origins.get(t) for t in inputs) if o is not None]
        number = self.origins.number   # a stand-in number in the call, as a size (numbers.py)
        if number is not None and (number[1] is None or any(number[1] in tuple(t.shape) for t in outputs)):
            found.insert(0, number[0])
        given = _best(found)
        if given is None and outputs and inputs and self.origins.sizes and name.startswith(_CUT):
            given = self._sized_by_data(args, kwargs, outputs)   # a constant cut to the data's size
        if name.startswith(_SIZED) and inputs and self.origins.unknown(inputs[0]):
            args = _symbolic_sizes(args, inputs[0], self.origins.unknown(inputs[0]))
        sig = signature(name, args, kwargs, self.origins.unknown)
        if outputs:
            self._unknown_sizes(name, args, inputs, outputs, dynamic)
        if sig is not None:
            seen = self.current.get(sig)
            if seen is None:
                seen = self.current[sig] = Seen(name.removesuffix(".default"), source, given)
            seen.phases.add(phase)
        if not outputs:
            return
        tail = next((o[2] for o in found if o[2]), "")
        if dynamic:
            made = ("data-dependent", source, tail)
        elif data:
            kept = {_numel(t) for t in inputs if self.origins.get(t) is not None}
            same = all(_numel(t) in kept for t in outputs)   # a copy, a cast, a reshape
            made = given if same and given is not None else ("data", source, tail)
        else:
            made = given
        if made is None:
            return
        if name.startswith(_INTO) and inputs and self.origins.get(inputs[0]) is None:
            return   # written into a tensor of a fixed shape (index_add's `self`)
        for t in outputs:   # an in-place op's output keeps its origin; a fixed shape gets none
            if not any(t is i for i in inputs) and _numel(t) != 1 and tuple(t.shape) not in self.fixed:
                self.origins.set(t, made)
                if made[0] == CompileCause.DATA:
                    for size in t.shape:
                        if isinstance(size, int) and size > 1:
                            self.origins.sizes.setdefault(size, made)

    def _sized_by_data(self, args, kwargs, outputs: list) -> tuple | None:
        """The origin of a size the data made in this step that an int argument gives and an output has."""
        shapes = {d for t in outputs for d in t.shape if isinstance(d, int)}
        for value in _ints((*args, *kwargs.values())):
            if value in shapes and value in self.origins.sizes:
                return self.origins.sizes[value]
        return None

    def _unknown_sizes(self, name: str, args, inputs: list, outputs: list, dynamic: bool) -> None:
        """Mark the sizes of `outputs` the data decides (NOTE [unknown sizes])."""
        if dynamic and name.startswith("aten::split_with_sizes"):   # sizes read from stand-in values
            dim = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
            for t in outputs:
                if t.dim():
                    self.origins.set_unknown(t, {dim % t.dim(): self.origins.symbol()})
            return
        if dynamic:   # a stand-in's upper bound: the element count of an input (nonzero, x[mask], ...)
            bounds = {int(t.numel()) for t in inputs}
            unique = name.startswith(("aten::_unique", "aten::unique"))
            shapes = {tuple(t.shape) for t in inputs}
            symbols: dict[int, str] = {}
            for t in outputs:
                if unique and tuple(t.shape) in shapes:
                    continue   # unique's inverse indices: the input's shape
                dims = {i: symbols.setdefault(d, self.origins.symbol()) for i, d in enumerate(t.shape)
                        if d in bounds}
                if dims:
                    self.origins.set_unknown(t, dims)
            return
        into = name.startswith(_INTO)
        carried: dict[int, str] = {}   # size -> symbol, from the inputs' unknown sizes
        for t in inputs[:1] if into else inputs:
            for i, sym in (self.origins.unknown(t) or {}).items():
                carried.setdefault(int(t.shape[i]), sym)
        if not carried:
            return
        if name.startswith(_MADE):
            return   # sizes given as ints: not the input's
        if name.startswith(_SIZED) and inputs:   # only the input's own sizes, right-aligned, are kept
            first = self.origins.unknown(inputs[0]) or {}
            shape = tuple(inputs[0].shape)
            for t in outputs:
                shift = t.dim() - len(shape)
                dims = {i + shift: sym for i, sym in first.items()
                        if 0 <= i + shift < t.dim() and t.shape[i + shift] == shape[i]}
                if dims and not any(t is i for i in inputs):
                    self.origins.set_unknown(t, dims)
            return
        for t in outputs:
            if any(t is i for i in inputs) or tuple(t.shape) in self.fixed:
                continue
            dims = {i: carried[d] for i, d in enumerate(t.shape) if d in carried}
            if dims:
                self.origins.set_unknown(t, dims)

    def mark_tail(self, tensors: list, tail: str) -> None:
        """The tensors of a batch from a loader whose last batch is short (NOTE [shape origins])."""
        for t in tensors:
            known = self.origins.get(t)
            cause, source = (known[0], known[1]) if known is not None else ("data", None)
            self.origins.set(t, (cause, source, tail))

    def close(self, key: object = None) -> None:
        """End the current segment (`key`: the optimizer whose step ended it; None: the run's end)."""
        self.segments.append((key, self.current))
        self.current = {}
        self.origins.prune()
        self.origins.sizes = {}


@contextlib.contextmanager
def tail_batches(log: CompileLog, tensors_of):
    """Inside: each batch a DataLoader with a short last batch yields is marked (NOTE [shape origins])."""
    from torch.utils.data import dataloader

    original = dataloader._BaseDataLoaderIter.__next__

    def __next__(self):
        batch = original(self)
        tail = short_tail(self)
        if tail:
            log.mark_tail(tensors_of(batch, []), tail)
        return batch

    dataloader._BaseDataLoaderIter.__next__ = __next__
    try:
        yield
    finally:
        dataloader._BaseDataLoaderIter.__next__ = original


def short_tail(iterator) -> str:
    """Why a loader's last batch is short ("" when it is not, or not known)."""
    if getattr(iterator, "_drop_last", True) or not getattr(iterator, "_auto_collation", False):
        return ""
    sampler = getattr(iterator, "_index_sampler", None)
    size = getattr(sampler, "batch_size", None)
    try:
        total = len(iterator._dataset)
    except (TypeError, AttributeError):
        return ""
    if not isinstance(size, int) or size <= 0 or total % size == 0:
        return ""
    return f"{total} samples in batches of {size} leave a last batch of {total % size} (drop_last=False)"


__all__ = ["CAUSES", "CompileLog", "Origins", "Seen", "signature", "tail_batches", "written"]
