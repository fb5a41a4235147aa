"""The TorchDispatchMode that records every op the backend receives, with phase, dtypes and source."""

from __future__ import annotations

import sys
import weakref
from collections import Counter, defaultdict

import torch
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
)
from torch.utils._python_dispatch import TorchDispatchMode

from opscan.records import PHASES, Mode, OpSource, Phase, OpUsage, StandIn
from opscan.trace import fakes
from opscan.trace.device import BACKEND_KEYS, has_own_kernel
from opscan.trace.signatures import DYNAMIC_KINDS, CompileLog
from opscan.trace.sources import SourceFinder
from opscan.trace.standins import ALL_OPS, covers, resplit, stand_in

# Namespaces PyTorch itself defines; anything else was registered by user or third-party code.
TORCH_NAMESPACES = frozenset({
    "aten", "prim", "prims", "_prims", "quantized", "_quantized", "sparse", "c10d",
    "_c10d_functional", "_c10d_functional_autograd", "_dtensor", "rngprims", "mkldnn", "mkl",
    "onednn", "xnnpack", "higher_order", "inductor", "profiler", "debugprims", "fbgemm",
    "fsdp",   # torch.distributed.fsdp's own ops (all_gather_copy_in, chunk_cat, ...)
})
# Dispatcher bookkeeping, not work for a backend (see docs/trace.md, "Artifacts").
ARTIFACT_PREFIXES = ("prim::device", "profiler::")
MAX_SOURCES = 5
MAX_STAND_INS_PER_SITE = 1000


# Per OpOverload: its name and whether it is an artifact (every dispatched op asks, so it is kept).
_NAMES: dict = {}
# NOTE [inference mode]
# Outside `torch.inference_mode` an op with a CompositeImplicitAutograd kernel (aten::conv2d,
# aten::layer_norm, aten::item, ...) is decomposed at the autograd key, before the Python key
# where this mode sees ops; so the recorder meets what the backend meets: the decomposition,
# unless the backend registers the op itself (the device profile's native ops, see
# device.apply_profile). Code that runs under `torch.inference_mode` (SAM2-style video
# forwards, serving code) skips the autograd keys, and this mode would meet the composite op
# itself, which a backend without a kernel for it never receives (and FakeTensorMode then
# decomposes it out of sight). So there the recorder decomposes it, as the dispatcher would
# below autograd, and records the ops of the decomposition.


def _decomposes(func, device_type: str) -> bool:
    """Whether the backend of `device_type` receives func's decomposition, not func (asked again
    per recorder: the device profile's registrations change between traces)."""
    name = func.name()
    return device_type in BACKEND_KEYS and \
        torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd") and \
        not has_own_kernel(name, device_type)


def collect_tensors(value, found: list) -> list:
    """The tensors in an op's arguments or output (tuples, lists and dicts of them), in order: the
    leaves torch.utils._pytree would give for these containers, without its per-node overhead."""
    if isinstance(value, torch.Tensor):
        found.append(value)
    elif isinstance(value, (tuple, list)):
        for item in value:
            collect_tensors(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            collect_tensors(item, found)
    return found


# NOTE [ops of the step]
# The trace lists the work the backend receives in the step. A call that touches no tensor (a
# library's version or capability query: torchvision's import-time `torch.ops.torchvision.
# _cuda_version()`, torchvision/extension.py) gives the device nothing to do, and a library's own op
# called while a module is being imported (its self-check at import time) is no op of the model:
# neither is recorded. (A custom op of a known library the step does call is that library's
# question: opscan/assess/assessment.py `library_ops`, never a kernel to port.)
def _importing() -> bool:
    """Whether a module is being imported on this thread (a frame of importlib's on the stack)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


class StandInLoop(RuntimeError):
    """A loop whose exit depends on tensor values keeps asking for stand-ins."""


class Recorder(TorchDispatchMode):
    """Counts ops per name; knows the current phase and module; invents data-dependent values."""

    def __init__(self, finder: SourceFinder, device: str, module_names: dict[int, str],
                 layers: LayerShapes | None = None) -> None:
        super().__init__()
        self.layers = layers or LayerShapes()
        self.finder = finder
        self.device_type = device
        self._decomposed: dict = {}   # per OpOverload: _decomposes (NOTE [inference mode])
        self.module_names = module_names
        self.module_stack: list[str] = []
        self.phase = Phase.FORWARD
        self.counts: Counter[str] = Counter()
        self.phases: dict[str, set[str]] = defaultdict(set)
        self.dtypes: dict[str, set[str]] = defaultdict(set)
        self.sources: dict[str, Counter] = defaultdict(Counter)
        self.bytes: Counter[str] = Counter()     # device bytes read and written (NOTE [fallback cost])
        # per op: [calls in the layers, bytes x layers, bytes x tokens, bytes x both] (NOTE [fallback scaling])
        self.scaling: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        self.shaped: dict[str, Counter] = defaultdict(Counter)   # per op: OpUsage.step_shape_bytes
        self.dtype_sources: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
        self.stand_ins: Counter = Counter()
        self.supplied: set[str] = set()      # ops whose fake kernel opscan supplied (see fakes.py)
        self.last: tuple[str, OpSource | None] | None = None
        self.pending: tuple[str, OpSource | None] | None = None
        self._fwd_sources: dict[int, OpSource] = {}
        self._all_outputs: dict[int, weakref.ref] = {}   # outputs of ALL_OPS, by id
        self.compile_log = CompileLog()   # compile signatures and shape origins (trace/signatures.py)
        self.data = False                 # every op it records is one of the data pipeline (host ops)
        self.data_values = False          # an op whose outputs hold values is one of the data pipeline
        self._dynamic = False             # the op being dispatched got a data-dependent stand-in size
        self.signatures_only = False      # a later step of `opscan trace --steps N`: compile signatures only
        self.calls: list | None = None    # each recorded call's tensors as classified, in order, when kept

    # -- module tracking (global forward hooks installed by the runner) --
    def enter_module(self, module, args) -> None:
        self.compile_log.module(module)
        self.module_stack.append(self.module_names.get(id(module), self.module_stack[-1]
                                                       if self.module_stack else ""))

    def exit_module(self, module, args, output) -> None:
        if self.module_stack:
            self.module_stack.pop()

    # -- the mode --
    def source(self) -> OpSource | None:
        """Where the op being dispatched now comes from (in backward: its forward op)."""
        if self.phase == Phase.BACKWARD:
            node = torch._C._current_autograd_node()
            if node is not None:
                known = self._fwd_sources.get(node._sequence_nr())
                if known is not None:
                    return known
        frame = self.finder.user_frame(3)
        module = self.module_stack[-1] if self.module_stack else ""
        if frame is None:
            return OpSource("", 0, module)
        # NOTE [sites the user can change]: a library's line also names the project's line that reached it
        site = None if self.finder.is_project(frame[0]) else self.finder.site_frame(3)
        if site is None:
            return OpSource(self.finder.name(frame[0]), frame[1], module)
        return OpSource(self.finder.name(frame[0]), frame[1], module, site[0], site[1])

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        known = _NAMES.get(func)
        if known is None:
            known = _NAMES[func] = (func.name(), func.name().startswith(ARTIFACT_PREFIXES))
        name, artifact = known
        if artifact:
            return func(*args, **kwargs)
        if torch.is_inference_mode_enabled() and self._decomposes(func):
            with self:   # NOTE [inference mode]: the ops of the decomposition pass through this mode
                out = func.decompose(*args, **kwargs)
            if out is not NotImplemented:
                return out
        source = self.source()
        self.pending = (name, source)
        self._dynamic = False
        try:
            out = self._run(func, name, source, args, kwargs)
        except Exception:
            self._record(name, source, args, kwargs, None)  # the op that stopped the trace was dispatched
            raise
        self.pending = None
        self.last = (name, source)
        self._record(name, source, args, kwargs, out)
        return out

    def _decomposes(self, func) -> bool:
        known = self._decomposed.get(func)
        if known is None:
            known = self._decomposed[func] = _decomposes(func, self.device_type)
        return known

    def _run(self, func, name, source, args, kwargs):
        try:
            out = func(*args, **kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException):
            return self._stand_in(func, name, source, args, kwargs)
        except (RuntimeError, NotImplementedError):
            if func in fakes.SUPPLIED:  # PyTorch's fake kernel is stricter than the real ones
                out = fakes.supply(func, args, kwargs)
                if out is None:
                    raise
                self.supplied.add(canonical_name(name))
                return out
            # sizes made from stand-in values (see NOTE [split sizes from stand-ins])
            resplit_out = resplit(func, args, kwargs) if self.stand_ins else None
            if resplit_out is not None:
                out, kind, value = resplit_out
                self.count_stand_in(name, kind, value, source)
                return out
            if not (self.device_type == "meta" and covers(func, args)):
                raise
            return self._stand_in(func, name, source, args, kwargs)
        if func.overloadpacket in ALL_OPS and isinstance(out, torch.Tensor):
            self._all_outputs[id(out)] = weakref.ref(out)
        return out

    def _stand_in(self, func, name, source, args, kwargs):
        """The stand-in output of a data-dependent op, counted (NOTE [stand-ins])."""
        out, kind, value = stand_in(func, args, kwargs, self.from_all(args))
        self.count_stand_in(name, kind, value, source)
        return out

    def from_all(self, args) -> bool:
        """Whether the first argument is the output of an `all` (its stand-in is True)."""
        first = args[0] if args else None
        ref = self._all_outputs.get(id(first))
        return ref is not None and ref() is first

    def count_stand_in(self, name, kind, value, source) -> None:
        """Count one stand-in value (`kind`, e.g. "item") given for `name` at `source`: the trace's and the run's."""
        self._dynamic = self._dynamic or kind in DYNAMIC_KINDS
        if kind == "item":   # NOTE [numbers that become shapes] in numbers.py
            self.compile_log.origins.read_at = source
        if self.signatures_only:
            return
        key = (name, kind, value, source)
        self.stand_ins[key] += 1
        if self.stand_ins[key] > MAX_STAND_INS_PER_SITE:
            raise StandInLoop(f"{MAX_STAND_INS_PER_SITE} stand-ins for {canonical_name(name)} at one source "
                              "line: a data-dependent loop that stand-in values never end")

    def _record(self, name, source, args, kwargs, out) -> None:
        inputs = collect_tensors(kwargs, collect_tensors(args, []))
        tensors = collect_tensors(out, list(inputs))
        if not tensors or not any(t.device.type == self.device_type for t in tensors):
            return  # NOTE [ops of the step]: no tensor, or none on the device: not the backend's work
        if name.partition("::")[0] not in TORCH_NAMESPACES and _importing():
            return  # NOTE [ops of the step]: a library's op run while a module is imported
        phase = self.phase
        if phase == Phase.FORWARD and source is not None and "/transformers/loss/" in "/" + source.path:
            phase = Phase.LOSS
        if phase in (Phase.FORWARD, Phase.LOSS) and source is not None:
            self._fwd_sources.setdefault(torch._C._autograd._get_sequence_nr() - 1, source)
        if self.signatures_only:
            outputs = tensors[len(inputs):]
            self.compile_log.record(name, phase, source, args, kwargs, inputs, outputs, data=False,
                                    dynamic=self._dynamic)
            return
        self.counts[name] += 1
        self.phases[name].add(phase)
        self.dtypes[name].update(str(t.dtype) for t in tensors)
        on_device = [t for t in tensors if t.device.type == self.device_type]
        self.bytes[name] += sum(t.numel() * t.element_size() for t in on_device)
        call = self.layers.split(self.scaling[name], source, on_device, self.shaped[name])
        if self.calls is not None:   # NOTE [sizes by role] in opscan/trace/roles.py
            self.calls.append((name, call))
        if source is not None and source.path:
            self.sources[name][source] += 1
            for dtype in {str(t.dtype) for t in tensors}:
                self.dtype_sources[name][dtype][source] += 1
        outputs = tensors[len(inputs):]
        data = self.data or self.data_values and bool(outputs) and \
            all(getattr(t, "constant", None) is not None for t in outputs)
        self.compile_log.record(name, phase, source, args, kwargs, inputs, outputs, data=data,
                                dynamic=self._dynamic)

    # -- results --
    def usages(self, mode: str) -> tuple[OpUsage, ...]:
        """The recorded ops as OpUsage, sorted by name (sources: the most frequent, then by place)."""
        out = []
        for name in sorted(self.counts):
            ranked = sorted(self.sources[name].items(), key=lambda kv: (-kv[1], kv[0]))
            top = tuple(sorted(src for src, _ in ranked[:MAX_SOURCES]))
            out.append(OpUsage(
                op=canonical_name(name),
                count=self.counts[name],
                phases=tuple(p for p in PHASES if p in self.phases[name]),
                dtypes=tuple(sorted(self.dtypes[name])),
                sources=top,
                modes=(mode,),
                custom=name.partition("::")[0] not in TORCH_NAMESPACES,
                step_calls=self.counts[name] if mode == Mode.TRAIN else 0,
                step_bytes=self.bytes[name] if mode == Mode.TRAIN else 0,
                dtype_sources=tuple((dtype, _top(found)) for dtype, found in sorted(self.dtype_sources[name].items())),
                **(_scaling(self.scaling[name]) if mode == Mode.TRAIN else {}),
                step_shape_bytes=(tuple((*key, n) for key, n in sorted(self.shaped[name].items()) if n)
                                  if mode == Mode.TRAIN else ()),
            ))
        return tuple(sorted(out, key=lambda u: u.op))

    def stand_in_list(self) -> tuple[StandIn, ...]:
        merged: dict[tuple, int] = Counter()
        for (name, kind, value, source), count in self.stand_ins.items():
            merged[(canonical_name(name), kind, value, source)] += count
        return tuple(sorted(
            (StandIn(op=n, kind=k, value=v, count=c, source=s) for (n, k, v, s), c in merged.items()),
            key=lambda s: (s.op, s.source or OpSource("", 0), s.kind, s.value),
        ))


WIDTH_MULTIPLES = (1, 2, 3, 4)   # a dim of k x the traced hidden size grows with the width
# One recorded call's device tensors as LayerShapes.split classified them: (class, shape, bytes, activation).
Call = tuple[tuple[int, tuple[int, ...], int, bool], ...]


class LayerShapes:
    """Which of a call's bytes grow with the layer count and which with batch x sequence (NOTE
    [fallback scaling] in opscan/assess/assessment.py): a call is inside the layers when its module path is
    under `layer_list`; a tensor is weight-sized when its shape is a parameter's (of the layers
    only: `layer`), fixed when it holds at most one element, and activation-sized otherwise."""

    def __init__(self, layer_list: str = "", layer: frozenset = frozenset(), other: frozenset = frozenset(),
                 hidden: int = 0, seq_len: int = 0):
        self.prefix = layer_list + "." if layer_list else ""
        self.layer, self.weights = layer - other, layer | other
        self.hidden, self.seq_len = hidden, seq_len    # traced width and sequence length (0: not known)
        self.widths = frozenset(hidden * k for k in WIDTH_MULTIPLES) if hidden else frozenset()

    def split(self, into: list[int], source: OpSource | None, tensors, shaped: Counter | None = None) -> Call:
        """Add one call's bytes to `into` = [calls in the layers, x layers, x tokens, x both], and
        to `shaped[(class, width dims, extra sequence dims)]` (NOTE [fallback scaling]); returns the
        call's tensors as classified, (class, shape, bytes, activation) each."""
        module = (source.module if source is not None else "") + "."
        inside = bool(self.prefix) and module.startswith(self.prefix)
        into[0] += inside
        call = []
        for t in tensors:
            size = t.numel() * t.element_size()
            shape = tuple(t.shape)
            activation = t.numel() > 1 and shape not in self.weights
            if inside:
                kind = 3 if activation else 1
            elif activation:
                kind = 2
            else:
                kind = 1 if shape in self.layer else 0
            into[kind] += size if kind else 0
            if shaped is not None:
                shaped[(kind,) + self.dims(shape, activation)] += size
            call.append((kind, shape, size, activation))
        return tuple(call)

    def dims(self, shape: tuple, activation: bool) -> tuple[int, int]:
        """(width dims, extra sequence dims) of a tensor: dims equal to the traced hidden size or a
        small multiple of it (an MLP's 4H, a fused QKV's 3H), at most 2; and 1 when an activation
        has two dims of the sequence length ([B, heads, S, S] attention scores). A dim equal to the
        sequence length counts as the sequence, not the width, when the two coincide."""
        seq = sum(1 for d in shape if self.seq_len and d == self.seq_len) if activation else 0
        rest = [d for d in shape if not (activation and self.seq_len and d == self.seq_len)]
        width = min(2, sum(1 for d in rest if d in self.widths))
        return width, 1 if seq >= 2 else 0


def _scaling(split: list[int]) -> dict[str, int]:
    return {"step_layer_calls": split[0], "step_layer_bytes": split[1], "step_token_bytes": split[2],
            "step_layer_token_bytes": split[3]}


def _top(found: Counter) -> tuple[OpSource, ...]:
    """The most frequent sources (at most MAX_SOURCES), sorted by place."""
    ranked = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(sorted(src for src, _ in ranked[:MAX_SOURCES]))


def canonical_name(name: str) -> str:
    return name.removesuffix(".default")
