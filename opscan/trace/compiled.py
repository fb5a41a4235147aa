"""torch.compile in a trace or a run: where it compiles, with which options, its graph breaks
(torch._dynamo.explain on the CPU) and the ops dispatched inside each compiled region.

NOTE [compiled regions]
A traced step runs eagerly on fake tensors; a compiled graph's kernels are never traced. So
`torch.compile(...)` (and `@torch.compile`, `@torch.compile(...)`, `Module.compile()`) is answered
while a trace or `opscan run` is in progress by `Compiles.compile`:
- the call is recorded as a region: its line in user code, what it compiles, its keyword options;
- a module is returned as it is, marked (a forward pre-hook and hook of that instance), and a
  function is returned wrapped, so the step stays eager and its ops are still recorded;
- on the first call of each region, torch._dynamo.explain runs on the CPU, outside every mode of
  the trace, on a real copy of the module (parameters and buffers as real tensors of their shapes
  and dtypes: random floats, zero integers; values a fake tensor kept are used as they are) with
  real inputs made the same way from the call's arguments. Its graph count and break reasons are
  the region's graph breaks (innermost user frame, first line of the reason). The global module
  hooks of the trace are lifted during the explain run (Dynamo would trace them as user code);
  a model of more than MAX_EXPLAIN_ELEMENTS parameter and buffer elements is not copied: the
  region says why it was not explained. A function's own globals are not copied: explain runs it
  once more on real inputs (its side effects on Python state happen twice);
- `RegionOps`, a dispatch mode entered with the recorder, notes the ops dispatched while a
  region's forward runs, and the backward ops of the autograd nodes those ops made (the compiled
  graph's backward, which AOTAutograd compiles too).
The verdict under compile semantics is judged above the trace (opscan/assess/compile_check.py).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import itertools
import os

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from opscan.records import CompileRegion, GraphBreak
from opscan.trace.fakes import patched
from opscan.trace.sources import SourceFinder

MAX_EXPLAIN_ELEMENTS = 50_000_000   # parameter and buffer elements copied for the explain run
MAX_REASON = 160                    # characters kept of a break reason's first line


class Region:
    """One compiled region while the step runs (made a CompileRegion by `Compiles.regions`)."""

    def __init__(self, path: str, line: int, target: str, options: dict) -> None:
        self.path, self.line, self.target = path, line, target
        self.options = tuple(sorted((k, _repr(v)) for k, v in options.items()))
        self.calls = 0
        self.explained = False
        self.graphs = self.break_count = 0
        self.breaks: list[tuple[str, int, str]] = []
        self.not_explained = ""
        self.ops: set[str] = set()
        self.nodes: set[int] = set()     # autograd sequence numbers of the nodes made inside


class Compiles:
    """The regions of one trace or run, and the torch.compile that records them (NOTE [compiled regions])."""

    def __init__(self, finder: SourceFinder, requests=None) -> None:
        self.finder = finder
        self.requests = requests         # opscan run's CUDA requests: noted, paused while explain runs
        self.found: list[Region] = []
        self.active: list[Region] = []   # regions whose forward is running (innermost last)
        self.explaining = False

    # -- torch.compile, as the step sees it --
    def compile(self, model=None, *args, **kwargs):
        """torch.compile's signature: the module or function back (marked), or a decorator."""
        where = self.finder.user_frame(2)
        if self.requests is not None:
            self.requests.note("torch.compile ran eager (the compiled graph's kernels are not traced; "
                      "graph breaks from torch._dynamo.explain on the CPU)")
        if model is None:   # @torch.compile(...) / torch.compile(**options)(fn)
            return lambda fn: self._region(fn, where, kwargs, args)
        return self._region(model, where, kwargs, args)

    def _region(self, model, where, kwargs, args):
        path, line = (self.finder.name(where[0]), where[1]) if where else ("", 0)
        options = dict(kwargs)
        for name, value in zip(("fullgraph", "dynamic", "backend", "mode", "options", "disable"), args):
            options[name] = value   # torch.compile's positional order after the model
        if options.get("disable") is True:   # torch.compile(disable=True) compiles nothing
            return model
        owner = getattr(model, "__self__", None)
        if isinstance(owner, nn.Module) and getattr(model, "__name__", "") == "_call_impl":
            model = owner   # Module.compile(): torch.compile(self._call_impl)
            region = Region(path, line, f"module {type(model).__name__}", options)
            self.found.append(region)
            self._mark(model, region)
            return owner._call_impl
        if isinstance(model, nn.Module):
            region = Region(path, line, f"module {type(model).__name__}", options)
            self.found.append(region)
            self._mark(model, region)
            return model
        name = getattr(model, "__qualname__", None) or getattr(model, "__name__", None) or type(model).__name__
        region = Region(path, line, f"function {name}", options)
        self.found.append(region)
        return self._wrapped(model, region)

    def _mark(self, module: nn.Module, region: Region) -> None:
        def pre(mod, args, kwargs):
            if self.explaining:
                return None
            self._enter(region, lambda: self._explain_module(mod, args, kwargs, region))
            return None

        def post(mod, args, kwargs, output):
            if not self.explaining and self.active and self.active[-1] is region:
                self.active.pop()
            return None

        module.register_forward_pre_hook(pre, with_kwargs=True)
        module.register_forward_hook(post, with_kwargs=True, always_call=True)

    def _wrapped(self, fn, region: Region):
        @functools.wraps(fn)
        def compiled(*args, **kwargs):
            if self.explaining:
                return fn(*args, **kwargs)
            self._enter(region, lambda: self._explain_function(fn, args, kwargs, region))
            try:
                return fn(*args, **kwargs)
            finally:
                if self.active and self.active[-1] is region:
                    self.active.pop()

        return compiled

    def _enter(self, region: Region, explain) -> None:
        region.calls += 1
        if region.calls == 1:
            explain()
        self.active.append(region)

    # -- the explain run on the CPU --
    def _explain_module(self, module, args, kwargs, region: Region) -> None:
        elements = sum(t.numel() for t in itertools.chain(module.parameters(), module.buffers()))
        if elements > MAX_EXPLAIN_ELEMENTS:
            region.not_explained = (f"the module has {elements:,} parameter and buffer elements (more than "
                                    f"{MAX_EXPLAIN_ELEMENTS:,} are not copied to the CPU): "
                                    "trace a smaller configuration")
            return

        def run():
            copied = real_copy(module)
            return copied, real_values(args), real_values(kwargs)
        self._explain(run, region)

    def _explain_function(self, fn, args, kwargs, region: Region) -> None:
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, nn.Module):   # a compiled method: explained on a copy of its module
            name = fn.__name__

            def run():
                return getattr(real_copy(owner), name), real_values(args), real_values(kwargs)
        else:
            def run():
                return fn, real_values(args), real_values(kwargs)
        self._explain(run, region)

    def _explain(self, make, region: Region) -> None:
        import torch._dynamo as dynamo

        self.explaining = True
        if self.requests is not None:
            self.requests.paused = True
        try:
            with outside_the_trace():
                target, args, kwargs = make()
                out = dynamo.explain(target)(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the model's code on real inputs: any failure is said
            first = (str(exc).strip().splitlines() or [""])[0][:MAX_REASON]
            region.not_explained = f"torch._dynamo.explain failed on the CPU copy: {type(exc).__name__}: {first}"
            return
        finally:
            self.explaining = False
            if self.requests is not None:
                self.requests.paused = False
        region.explained = True
        region.graphs, region.break_count = out.graph_count, out.graph_break_count
        for reason in out.break_reasons:
            frame = _innermost_user(reason.user_stack, self.finder)
            text = (str(reason.reason).strip().splitlines() or [""])[0][:MAX_REASON]
            region.breaks.append((frame[0], frame[1], text))

    # -- what the trace keeps --
    def regions(self) -> tuple[CompileRegion, ...]:
        out = []
        for r in self.found:
            counted: dict[tuple[str, int, str], int] = {}
            for key in r.breaks:
                counted[key] = counted.get(key, 0) + 1
            breaks = tuple(GraphBreak(p, ln, why, n) for (p, ln, why), n in sorted(counted.items()))
            out.append(CompileRegion(r.path, r.line, r.target, r.options, r.calls, r.explained, r.graphs,
                                     r.break_count, breaks, r.not_explained, tuple(sorted(r.ops))))
        return tuple(out)


def _innermost_user(stack, finder: SourceFinder) -> tuple[str, int]:
    """(path, line) of the innermost frame of a Dynamo user stack in user code, else the innermost."""
    frames = list(stack or ())
    for frame in reversed(frames):
        if finder.is_user(frame.filename):
            return finder.name(frame.filename), frame.lineno or 0
    if frames:
        return finder.name(frames[-1].filename), frames[-1].lineno or 0
    return "", 0


def _repr(value) -> str:
    if callable(value) and not isinstance(value, (str, bool, int, float)):
        return getattr(value, "__name__", type(value).__name__)
    return repr(value)


class RegionOps(TorchDispatchMode):
    """Notes the ops dispatched inside the active compiled region, and their backward ops."""

    def __init__(self, compiles: Compiles) -> None:
        super().__init__()
        self.compiles = compiles
        self.any_nodes = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        compiles = self.compiles
        if compiles.explaining:
            return out
        if compiles.active:
            region = compiles.active[-1]
            region.ops.add(func.name())
            if torch.is_grad_enabled():   # the autograd node this op makes (if any) has the last number
                region.nodes.add(torch._C._autograd._get_sequence_nr() - 1)
                self.any_nodes = True
        elif self.any_nodes:
            node = torch._C._current_autograd_node()
            if node is not None:
                seq = node._sequence_nr()
                for region in compiles.found:
                    if seq in region.nodes:
                        region.ops.add(func.name())
        return out


@contextlib.contextmanager
def compiling(compiles: Compiles):
    """Inside: torch.compile records regions in `compiles` (NOTE [compiled regions])."""
    with patched(torch, "compile", compiles.compile):
        yield compiles


# --- outside the trace: real tensors on the CPU --------------------------------------------------

@contextlib.contextmanager
def outside_the_trace():
    """No torch function mode, no dispatch mode (fake mode, recorder) and no global module hooks of
    the trace inside; all restored after."""
    from torch.nn.modules import module as modules

    functions = []
    while torch._C._len_torch_function_stack() > 0:
        functions.append(torch._C._pop_torch_function_stack())
    hooks = (modules._global_forward_pre_hooks, modules._global_forward_hooks,
             modules._global_forward_hooks_always_called)
    saved = [dict(h) for h in hooks]
    for h in hooks:
        h.clear()
    try:
        with _disable_current_modes(), _env("TORCHDYNAMO_VERBOSE", None):
            yield
    finally:
        for h, kept in zip(hooks, saved):
            h.clear()
            h.update(kept)
        for mode in reversed(functions):
            torch._C._push_on_torch_function_stack(mode)


@contextlib.contextmanager
def _env(name: str, value):
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is not None:
            os.environ[name] = old


def real_tensor(t: torch.Tensor) -> torch.Tensor:
    """A real CPU tensor standing for `t` (fake or real): kept values, else random floats or zeros."""
    from torch._subclasses.fake_tensor import is_fake

    if not is_fake(t) and t.device.type in ("cpu",) and not t.is_meta:
        return t.detach().clone()
    constant = getattr(t, "constant", None)
    if constant is not None and tuple(constant.shape) == tuple(t.shape):
        return constant.detach().clone().to(t.dtype)
    shape = tuple(int(s) for s in t.shape)
    if t.is_floating_point() or t.is_complex():
        return torch.randn(shape, dtype=t.dtype)
    return torch.zeros(shape, dtype=t.dtype)


def real_values(value):
    """`value` with every tensor in it (nested lists, tuples, dicts) a real CPU tensor."""
    if isinstance(value, torch.Tensor):
        real = real_tensor(value)
        return real.requires_grad_(value.requires_grad) if real.is_floating_point() else real
    if isinstance(value, tuple):
        return tuple(real_values(v) for v in value)
    if isinstance(value, list):
        return [real_values(v) for v in value]
    if isinstance(value, dict):
        return {k: real_values(v) for k, v in value.items()}
    return value


def real_copy(module: nn.Module) -> nn.Module:
    """A deep copy of `module` whose parameters, buffers and tensor attributes are real CPU tensors."""
    memo: dict[int, object] = {}
    for sub in module.modules():
        for _name, param in sub._parameters.items():
            if param is not None and id(param) not in memo:
                memo[id(param)] = nn.Parameter(real_tensor(param), requires_grad=param.requires_grad)
        for buf in sub._buffers.values():
            if buf is not None and id(buf) not in memo:
                memo[id(buf)] = real_tensor(buf)
        for value in vars(sub).values():
            for t in _tensors_in(value):
                if id(t) not in memo:
                    memo[id(t)] = real_tensor(t)
    return copy.deepcopy(module, memo)


def _tensors_in(value, depth: int = 0):
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 2 and isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors_in(v, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for v in value.values():
            yield from _tensors_in(v, depth + 1)


__all__ = ["Compiles", "MAX_EXPLAIN_ELEMENTS", "RegionOps", "compiling", "outside_the_trace", "real_copy"]
