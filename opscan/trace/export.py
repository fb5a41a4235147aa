"""Exported programs (`torch.export.save`): the ops of a loaded program, read without running it.

opscan/targets/export.py loads the `pt2:PATH` file (`torch.export.load` reads its serialized graph
and tensors; nothing of the user's Python is imported or executed: tests/targets/test_targets_export.py
plants modules to prove it); this module reads the ops from the program's graphs. The graph is
forward-only unless the program itself holds more (a forward-only export shows no backward, no
loss and no optimizer step), so the result is an `inference` ModelTrace.

Levels (docs/check.md, "Exported programs"):
- `exported`: the ops as saved (`aten.linear` stays `linear`);
- `dispatch` (default): the CompositeImplicitAutograd ops decomposed, as the dispatcher does before
  a backend's kernels see them (`linear` -> `t` + `addmm`), except the device profile's native
  ops: the same level as `opscan trace`, so the coverage database is asked the same question;
- `core`: every default decomposition of torch.export (Core ATen, what a compiler backend
  receives), again keeping the profile's native ops.
Sources come from each node's `stack_trace` (the innermost frame outside PyTorch, named relative
to the project when the file exists there) and its `nn_module_stack` (the module path).
"""

from __future__ import annotations

import os
import re
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import torch

from opscan.errors import TargetError
from opscan.records import DeviceProfile, Mode, ModelTrace, OpSource, OpUsage, Phase
from opscan.trace.recorder import MAX_SOURCES, TORCH_NAMESPACES, canonical_name

LEVELS = ("exported", "dispatch", "core")
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _is_torch(path: str) -> bool:
    """A frame in PyTorch's own code, in a stack trace written on this or any other machine."""
    posix = path.replace("\\", "/")
    return path.startswith(_TORCH_DIR) or "-packages/torch/" in posix or path.startswith("<")


def decomposed(program, level: str, profile: DeviceProfile | None):
    """The program at `level` (see the module docstring); the profile's native ops are kept."""
    if level not in LEVELS:
        raise TargetError(f"unknown export level {level!r} (known: {', '.join(LEVELS)})")
    if level == "exported":
        return program
    native = set((profile.native_ops if profile is not None else ()))
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        name = canonical_name(op.name())
        keep = name in native or name.split(".")[0] in native
        implicit = torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd")
        if keep or (level == "dispatch" and not implicit):
            table.pop(op)
    sdpa = torch.ops.aten.scaled_dot_product_attention.default
    if sdpa in table:   # the kernel choice is the device's (docs/trace.md, "The imitated device")
        if profile is not None and profile.sdpa_policy == "overrideable":
            table.pop(sdpa)   # kept, and named as the hook a PrivateUse1 backend gets (ops_of)
        else:
            table[sdpa] = _sdpa_math
    try:
        return program.run_decompositions(table)
    except Exception as exc:  # noqa: BLE001 - report the decomposition failure, keep the saved level
        raise TargetError(f"decomposing the exported program failed: {type(exc).__name__}: {exc}"
                          .splitlines()[0]) from None


def _sdpa_math(*args, **kwargs):
    """SDPA on the math path, as on a PrivateUse1 device without a fused attention kernel."""
    return torch.ops.aten._scaled_dot_product_attention_math.default(*args, **kwargs)[0]


class _Namer:
    """Names a stack-trace path as `opscan trace` does: relative to the project where the file exists."""

    def __init__(self, project_root: str | None) -> None:
        self.root = Path(project_root).resolve() if project_root else None
        self.cache: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        known = self.cache.get(path)
        if known is None:
            known = self.cache[path] = self._name(path)
        return known

    def _name(self, path: str) -> str:
        posix = path.replace("\\", "/")
        for marker in ("/site-packages/", "/dist-packages/"):
            if marker in posix:
                return posix.split(marker, 1)[1]
        if self.root is not None:
            try:
                return Path(posix).resolve().relative_to(self.root).as_posix()
            except (ValueError, OSError):
                pass
            # written on another machine: the longest tail of the path that is a file of the project
            parts = posix.strip("/").split("/")
            for start in range(len(parts)):
                tail = "/".join(parts[start:])
                if tail and (self.root / tail).is_file():
                    return tail
        return os.path.basename(posix) if posix.startswith("/") else posix


def _source(node, namer: _Namer) -> OpSource | None:
    trace = node.meta.get("stack_trace") or ""
    frames = [(m["path"], int(m["line"])) for m in _FRAME.finditer(trace)]
    user = [f for f in frames if not _is_torch(f[0])]
    frame = (user or frames or [None])[-1]
    stack = node.meta.get("nn_module_stack") or {}
    module = ""
    if stack:
        last = list(stack.values())[-1]
        module = last[0] if isinstance(last, (tuple, list)) and last else ""
        module = re.sub(r"^L\['self'\]\.?", "", str(module))
    if frame is None:
        return OpSource("", 0, module) if module else None
    return OpSource(namer(frame[0]), frame[1], module)


def _dtypes(node) -> set[str]:
    out = set()
    values = [node.meta.get("val")]
    values += [a.meta.get("val") for a in node.all_input_nodes]
    for value in values:
        for leaf in (value if isinstance(value, (tuple, list)) else (value,)):
            if isinstance(leaf, torch.Tensor):
                out.add(str(leaf.dtype))
    return out


def _op_name(target) -> str | None:
    if isinstance(target, torch._ops.OpOverload):
        return target.name()
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order::{target.name()}"
    return None   # operator.getitem and other Python glue: not a backend op


SDPA_OVERRIDEABLE = "aten::_scaled_dot_product_fused_attention_overrideable"


def ops_of(program, project_root: str | None, rename: dict[str, str] | None = None) -> tuple[OpUsage, ...]:
    """Every op node of the program's graphs (submodules of control flow included), as OpUsage;
    `rename` maps an op name to the name the backend receives instead."""
    rename = rename or {}
    namer = _Namer(project_root)
    counts: Counter[str] = Counter()
    dtypes: dict[str, set[str]] = defaultdict(set)
    sources: dict[str, Counter] = defaultdict(Counter)
    for module in program.graph_module.modules():
        graph = getattr(module, "graph", None)
        if graph is None:
            continue
        for node in graph.nodes:
            if node.op != "call_function":
                continue
            name = _op_name(node.target)
            if name is None:
                continue
            name = rename.get(name, name)
            counts[name] += 1
            dtypes[name] |= _dtypes(node)
            source = _source(node, namer)
            if source is not None and source.path:
                sources[name][source] += 1
    usages = []
    for name in sorted(counts):
        ranked = sorted(sources[name].items(), key=lambda kv: (-kv[1], kv[0]))
        usages.append(OpUsage(
            op=canonical_name(name), count=counts[name], phases=(Phase.FORWARD,),
            dtypes=tuple(sorted(dtypes[name])),
            sources=tuple(sorted(src for src, _ in ranked[:MAX_SOURCES])),
            modes=(Mode.INFERENCE,), custom=name.partition("::")[0] not in TORCH_NAMESPACES))
    return tuple(sorted(usages, key=lambda u: u.op))


def trace_program(target: str, program, *, profile: DeviceProfile | None = None,
                  project_root: str | None = None, level: str = "dispatch", device: str = "neuron",
                  started: float | None = None) -> ModelTrace:
    """The ops of a loaded exported program (opscan/targets/export.py) at `level`, as an inference
    ModelTrace of `target`; `started` is when its loading began (for the trace's seconds)."""
    started = time.perf_counter() if started is None else started
    rename = {}
    if level != "exported" and profile is not None and profile.sdpa_policy == "overrideable":
        rename["aten::scaled_dot_product_attention"] = SDPA_OVERRIDEABLE
    with warnings.catch_warnings():   # torch's deprecation chatter while unflattening the program
        warnings.simplefilter("ignore")
        ops = ops_of(decomposed(program, level, profile), project_root, rename)
    return ModelTrace(target=target, mode=Mode.INFERENCE, device=device, ops=ops, complete=True,
                      seconds=round(time.perf_counter() - started, 3))
