"""`pt2:PATH` targets: the ops of an exported program (`torch.export.save`), read without running it.

`torch.export.load` reads the file's serialized graph and tensors; nothing of the user's Python is
imported or executed (tests/model/test_model_export.py plants modules to prove it). The graph is
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

import contextlib
import os
import pickle
import re
import time
import warnings
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

import torch

from opscan.errors import TargetError
from opscan.model import DeviceProfile, ModelTrace, OpSource, OpUsage
from opscan.trace.recorder import MAX_SOURCES, TORCH_NAMESPACES, _canonical

LEVELS = ("exported", "dispatch", "core")
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _is_torch(path: str) -> bool:
    """A frame in PyTorch's own code, in a stack trace written on this or any other machine."""
    posix = path.replace("\\", "/")
    return path.startswith(_TORCH_DIR) or "-packages/torch/" in posix or path.startswith("<")


def resolve(path_text: str, project_root: str | None) -> Path:
    """The .pt2 file a `pt2:` target names: as given, else relative to the project root."""
    path = Path(path_text)
    if not path.is_absolute() and project_root and not path.exists():
        path = Path(project_root) / path
    if not path.is_file():
        raise TargetError("no such exported program (pt2: takes a file saved with torch.export.save)",
                          path=str(path))
    return path


# NOTE [no pickle from a .pt2]
# torch.export.load reads JSON and tensors, but two paths of torch 2.13 unpickle Python objects: an
# "opaque object" constant (pickle.loads) and the fallback of torch.load(weights_only=True) to
# weights_only=False for a stored artifact (sample inputs, ...). A crafted file could run code
# through either. So a file holding opaque objects is refused, and the load runs with
# TORCH_FORCE_WEIGHTS_ONLY_LOAD=1, which keeps every torch.load weights-only.
def _refuse_pickled_objects(path: Path) -> None:
    try:
        from torch.export.pt2_archive.constants import OPAQUE_OBJ_FILENAME_PREFIX as prefix
    except ImportError:   # a torch without them
        prefix = None
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise TargetError(f"not an exported program (a .pt2 is a zip archive): {exc}", path=str(path)) from None
    if prefix and any(os.path.basename(name).startswith(prefix) for name in names):
        raise TargetError("holds pickled Python objects (opaque constants) that loading would unpickle, "
                          "running code: refused", path=str(path))


@contextlib.contextmanager
def _weights_only():
    saved = {k: os.environ.pop(k, None) for k in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD",
                                                   "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")}
    os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    try:
        yield
    finally:
        os.environ.pop("TORCH_FORCE_WEIGHTS_ONLY_LOAD", None)
        os.environ.update({k: v for k, v in saved.items() if v is not None})


def load(path: Path):
    """torch.export.load with one-line errors (a file from another torch, an unknown custom op, ...),
    never unpickling Python objects (NOTE [no pickle from a .pt2])."""
    _refuse_pickled_objects(path)
    try:
        with warnings.catch_warnings(), _weights_only():   # + deprecation chatter of tree specs
            warnings.simplefilter("ignore")
            return torch.export.load(str(path))
    except pickle.UnpicklingError:
        raise TargetError("holds pickled Python objects that only an unsafe (not weights-only) load "
                          "would read, running code: refused", path=str(path)) from None
    except Exception as exc:  # noqa: BLE001 - any failure to read the file is one line
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise TargetError(f"torch {torch.__version__} cannot load this exported program: "
                          f"{type(exc).__name__}: {first}", path=str(path)) from None


def decomposed(program, level: str, profile: DeviceProfile | None):
    """The program at `level` (see the module docstring); the profile's native ops are kept."""
    if level not in LEVELS:
        raise TargetError(f"unknown export level {level!r} (known: {', '.join(LEVELS)})")
    if level == "exported":
        return program
    native = set((profile.native_ops if profile is not None else ()))
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        name = _canonical(op.name())
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
            op=_canonical(name), count=counts[name], phases=("forward",),
            dtypes=tuple(sorted(dtypes[name])),
            sources=tuple(sorted(src for src, _ in ranked[:MAX_SOURCES])),
            modes=("inference",), custom=name.partition("::")[0] not in TORCH_NAMESPACES))
    return tuple(sorted(usages, key=lambda u: u.op))


def trace_export(target: str, *, profile: DeviceProfile | None = None, project_root: str | None = None,
                 level: str = "dispatch", device: str = "neuron") -> ModelTrace:
    """The ops of the exported program `pt2:PATH` at `level`, as an inference ModelTrace."""
    started = time.perf_counter()
    path = resolve(target[4:] if target.startswith("pt2:") else target, project_root)
    rename = {}
    if level != "exported" and profile is not None and profile.sdpa_policy == "overrideable":
        rename["aten::scaled_dot_product_attention"] = SDPA_OVERRIDEABLE
    with warnings.catch_warnings():   # torch's deprecation chatter while unflattening the program
        warnings.simplefilter("ignore")
        program = decomposed(load(path), level, profile)
        ops = ops_of(program, project_root or str(path.parent), rename)
    return ModelTrace(target=target, mode="inference", device=device, ops=ops, complete=True,
                      seconds=round(time.perf_counter() - started, 3))
