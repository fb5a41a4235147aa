"""The data opscan passes between its phases: frozen dataclasses only, importing nothing of opscan.

Analysis (scan, trace, db, plan) produces these; reporters only read them. Every tuple field is
kept sorted by its producer so that the same input gives the same bytes out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

SEVERITIES: dict[str, str] = {
    "error": "blocks the port: the code will not run, or will run on the wrong device",
    "warning": "runs, but slower, differently, or only with a manual step",
    "note": "worth knowing; no change strictly needed",
}


# NOTE [typed vocabularies]: each closed vocabulary a caller decides by (severities, op statuses,
# verdict kinds, task kinds, a release's no-kernel behaviour) is a `StrEnum` here, with the
# predicates callers need as properties, so that no other module compares the words themselves
# (tests/test_vocabularies.py walks opscan/ for such comparisons). A member is its string: it
# compares, hashes, formats and serialises (JSON) as the word, so reports are unchanged. The
# records holding one (Finding.severity, Coverage.status, Verdict.kind, Task.kind, ...) turn a
# word into its member when built; a word outside the vocabulary is a ValueError.
class Severity(StrEnum):
    """A finding's severity, the SARIF levels (SEVERITIES says each), worst first."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    @property
    def rank(self) -> int:
        """How bad, 0 best: the one ranking of severities (note 0, warning 1, error 2)."""
        return _SEVERITY_RANK[self]

    def at_least(self, other: Severity) -> bool:
        """This severity is `other` or worse (`--fail-on warning`: warning or error)."""
        return self.rank >= other.rank


_SEVERITY_RANK: dict[Severity, int] = {Severity.NOTE: 0, Severity.WARNING: 1, Severity.ERROR: 2}

CATEGORIES: dict[str, str] = {
    "device-string": "a hard-coded device choice (\"cuda\", \"cuda:0\", ...)",
    "cuda-api": "a CUDA-only API or setting (torch.cuda.*, cudnn, NCCL, CUDA env vars, ...)",
    "custom-kernel": "code that defines, builds, loads or calls a custom kernel",
    "cuda-only-lib": "an import of a library that only runs on CUDA",
    "device-dispatch": "a place that chooses among other accelerators (npu, xpu, mps, ...) by name: "
                       "where the port adds neuron",
    "input": "a file opscan could not read or parse, or a problem in opscan's own run",
    "dependency": "a dependency manifest line that installs a torch or a CUDA build TorchNeuron cannot use",
}

# NOTE [task kinds]: the one table of port-task kinds (TaskKind, below, each with its description
# and where it comes from). Rules declare a `rule` kind in their YAML (`task:`, the TASKS view;
# "none": not port work); an op status that needs work makes an `op` kind (OP_TASKS, OpStatus.task);
# the compile forecast makes `static-shapes`. opscan/plan/task_kinds.py says, per kind, the fix, the
# TorchNeuron fact behind it and its source (tests/plan pins that it covers every kind but "none").
# See docs/scan.md, "Task kinds".
class BlockUnit(StrEnum):
    """What a blocking finding counts as in the blockers (`Finding.blocks_as`, NOTE [blockers] in
    opscan/verdict.py); NONE for a finding that does not block."""

    NONE = ""
    FILE = "file"
    KERNEL = "kernel"
    LIBRARY = "library"
    PIN = "pin"
    SITE = "site"

    @property
    def is_site(self) -> bool:
        """Counted by `Location.site` within its task: a line of code or a dependency pin."""
        return self in (BlockUnit.SITE, BlockUnit.PIN)


class TaskKind(StrEnum):
    """A kind of port task (NOTE [task kinds])."""

    DEVICE_AGNOSTIC = "device-agnostic"
    MIXED_PRECISION = "mixed-precision"
    DISTRIBUTED_BACKEND = "distributed-backend"
    TORCH_COMPILE = "torch-compile"
    CUDA_GRAPHS = "cuda-graphs"
    BACKEND_FLAGS = "backend-flags"
    PROFILER = "profiler"
    DEVICE_DISPATCH = "device-dispatch"
    LIBRARY = "library"
    KERNEL = "kernel"
    TORCH_VERSION = "torch-version"
    CUDA_PACKAGES = "cuda-packages"
    NONE = "none"
    UNSUPPORTED_OPS = "unsupported-ops"
    CPU_FALLBACK = "cpu-fallback"
    UNKNOWN_OPS = "unknown-ops"
    MAY_FALL_BACK = "may-fall-back"
    STATIC_SHAPES = "static-shapes"

    @property
    def description(self) -> str:
        return _TASK_KINDS[self][1]

    @property
    def origin(self) -> str:
        """"rule" (a rule declares it), "op" (an op status makes it) or "compile" (the compile forecast)."""
        return _TASK_KINDS[self][0]

    @property
    def group(self) -> str:
        """"kernel", "library", "op" (an op-gap kind) or "source" (code to change), as Task.group."""
        if self in (TaskKind.KERNEL, TaskKind.LIBRARY):
            return str(self)
        return "op" if self.origin == "op" else "source"

    @property
    def is_port_work(self) -> bool:
        """A task is made for it ("none": a file opscan could not read, a problem in opscan's own run)."""
        return self is not TaskKind.NONE


_TASK_KINDS: dict[TaskKind, tuple[str, str]] = {
    TaskKind.DEVICE_AGNOSTIC: ("rule", "pick the device once (torch.accelerator) instead of hard-coding CUDA devices "
                                       "or torch.cuda calls"),
    TaskKind.MIXED_PRECISION: ("rule", "make autocast and GradScaler device-agnostic (torch.amp)"),
    TaskKind.DISTRIBUTED_BACKEND: ("rule", "move the process group from NCCL to the device's backend"),
    TaskKind.TORCH_COMPILE: ("rule", "adapt torch.compile calls to the neuron backend"),
    TaskKind.CUDA_GRAPHS: ("rule", "remove CUDA graph capture"),
    TaskKind.BACKEND_FLAGS: ("rule", "guard cuDNN / TF32 flags by device"),
    TaskKind.PROFILER: ("rule", "profile the neuron device instead of CUDA"),
    TaskKind.DEVICE_DISPATCH: ("rule", "add neuron to the device dispatch, as done for the other accelerators"),
    TaskKind.LIBRARY: ("rule", "replace a CUDA-only library (one task per library)"),
    TaskKind.KERNEL: ("rule", "port a custom kernel (one task per kernel)"),
    TaskKind.TORCH_VERSION: ("rule", "move to the torch the TorchNeuron release pairs with, with every package "
                                     "that pins torch"),
    TaskKind.CUDA_PACKAGES: ("rule", "install CPU builds instead of CUDA builds: NVIDIA packages, conda CUDA "
                                     "packages, CUDA base images"),
    TaskKind.NONE: ("rule", "not port work: a file opscan could not read, or a problem in opscan's own run"),
    TaskKind.UNSUPPORTED_OPS: ("op", "provide the traced ops the backend rejects"),
    TaskKind.CPU_FALLBACK: ("op", "work around the traced ops that run on the CPU"),
    TaskKind.UNKNOWN_OPS: ("op", "probe the traced ops of unknown status"),
    TaskKind.MAY_FALL_BACK: ("op", "probe the traced ops that may run on the CPU; work around those that do"),
    TaskKind.STATIC_SHAPES: ("compile", "make shapes static where a new shape is a new compile"),
}

# The rule task kinds (every rule declares one in its YAML, `task:`), a view of the one table.
TASKS: dict[str, str] = {k.value: k.description for k in TaskKind if k.origin == "rule"}

# NOTE [status facts]: the closed vocabulary of op support statuses (coverage_db/README.md), each
# value a record of the facts every reader decides by, so that "does it run on the device", "does
# the port have work for it", "does it block" and "how bad" are answered here once and nowhere else:
# - rank: how bad, 0 best; the worst of several answers is the one of highest rank;
# - runs_on_device: the op executes on the backend's device (native, composite, limited);
# - needs_attention: a reader must look at it (conditions, fallback, error, unchecked); ops of a
#   status with a `task` get an op-gap task of that kind (limited ops run, so they get none);
# - blocks: the op raises on the backend, so the run is blocked (and the default gate fails);
# - may_fall_back: the op runs, but may run (cpu-fallback: does run) on the host CPU, copying its
#   tensors to the host and back: it never blocks, `--fail-on fallback` gates on it, and its cost
#   per training step is measured from the trace (`Fallback`, NOTE [fallback cost]).
# `device-or-cpu` is what a release that documents its no-kernel behaviour (`no_kernel:` in the
# release file: TorchNeuron eager falls back to CPU) says of an op it does not list: the op runs,
# on the device or on the CPU; only a probe tells which.
class Status(StrEnum):
    """An op support status (OP_STATUSES holds each one's facts; NOTE [status facts])."""

    NATIVE = "native"
    COMPOSITE = "composite"
    LIMITED = "limited"
    DEVICE_OR_CPU = "device-or-cpu"
    CPU_FALLBACK = "cpu-fallback"
    UNSUPPORTED = "unsupported"
    UNKNOWN = "unknown"

    @classmethod
    def of(cls, name: str | None) -> Status:
        """The status of a name; a name outside the vocabulary (or none) is UNKNOWN (as `status_of`)."""
        try:
            return cls(name or "")
        except ValueError:
            return cls.UNKNOWN

    @property
    def facts(self) -> OpStatus:
        return STATUS[self]

    @property
    def rank(self) -> int:
        """How bad, 0 best (the worst of several answers is the one of highest rank)."""
        return self.facts.rank

    @property
    def runs_on_device(self) -> bool:
        return self.facts.runs_on_device

    @property
    def needs_attention(self) -> bool:
        return self.facts.needs_attention

    @property
    def blocks(self) -> bool:
        """The op raises on the backend (unsupported)."""
        return self.facts.blocks

    @property
    def may_fall_back(self) -> bool:
        """Runs, on the host CPU (cpu-fallback) or perhaps (device-or-cpu)."""
        return self.facts.may_fall_back

    @property
    def falls_back(self) -> bool:
        """Runs on the host CPU, as the release says (cpu-fallback)."""
        return self is Status.CPU_FALLBACK

    @property
    def maybe_falls_back(self) -> bool:
        """May run on the host CPU: not listed, the release documents the CPU fallback (device-or-cpu)."""
        return self.may_fall_back and not self.falls_back

    @property
    def unchecked(self) -> bool:
        """Nobody has checked the op (unknown)."""
        return self is Status.UNKNOWN

    @property
    def needs_probe(self) -> bool:
        """Only a probe tells what the op does: unknown, or device-or-cpu (not known to be missing)."""
        return self.unchecked or self.maybe_falls_back

    @property
    def has_kernel(self) -> bool:
        """The backend registers a kernel of its own for the op (native, limited)."""
        return self in (Status.NATIVE, Status.LIMITED)

    @property
    def decomposes(self) -> bool:
        """The op decomposes before reaching the backend (composite): judged by its parts."""
        return self is Status.COMPOSITE


@dataclass(frozen=True)
class OpStatus:
    """One op support status and what follows from it (NOTE [status facts])."""

    name: Status
    description: str
    rank: int                            # how bad, 0 = best
    runs_on_device: bool
    needs_attention: bool                # shown as an op that needs attention
    blocks: bool                         # the op raises on the backend
    task: TaskKind | Literal[""] = ""    # the op-gap task kind (OP_TASKS) it makes; "" none
    short: str = "?"                     # one-letter label for tables (zoo matrix)
    may_fall_back: bool = False          # runs, on the host CPU (cpu-fallback) or perhaps (device-or-cpu)


OP_STATUSES: tuple[OpStatus, ...] = (    # in the order reports list them
    OpStatus(Status.NATIVE, "the backend has its own kernel for this op", 0, True, False, False, short="N"),
    OpStatus(Status.COMPOSITE, "decomposes before reaching the backend; judged by the ops it expands into",
             1, True, False, False, short="C"),
    OpStatus(Status.LIMITED, "has a kernel, with conditions on dtypes or arguments", 2, True, True, False, short="L"),
    OpStatus(Status.DEVICE_OR_CPU, "not listed; the release documents that an op without a kernel runs on the "
             "CPU: runs on the device or on the CPU (a probe tells which)", 3, False, True, False,
             TaskKind.MAY_FALL_BACK, "D", may_fall_back=True),
    OpStatus(Status.CPU_FALLBACK, "no kernel: runs on the CPU, copying tensors to the host and back",
             5, False, True, False, TaskKind.CPU_FALLBACK, "F", may_fall_back=True),
    OpStatus(Status.UNSUPPORTED, "raises an error on the backend", 6, False, True, True, TaskKind.UNSUPPORTED_OPS, "X"),
    OpStatus(Status.UNKNOWN, "nobody has checked", 4, False, True, False, TaskKind.UNKNOWN_OPS, "?"),
)
STATUS: dict[Status, OpStatus] = {s.name: s for s in OP_STATUSES}
STATUSES: dict[str, str] = {s.name.value: s.description for s in OP_STATUSES}


def status_of(name: str | None) -> OpStatus:
    """The facts of a status name; a name outside the vocabulary (or none) is "unknown"."""
    return STATUS[Status.of(name)]


# The op-gap task kinds (one per status that needs attention), a view of the one table (NOTE
# [task kinds]); with the rule task kinds of TASKS ("none" excepted) and static-shapes they are
# every value of Task.kind.
OP_TASKS: dict[str, str] = {k.value: k.description for k in TaskKind if k.origin == "op"}

EVIDENCE_KINDS: dict[str, str] = {
    "documented": "stated in the backend's published documentation (URL and date)",
    "probed": "read from the dispatcher of a real install (which install, when)",
    "source-snapshot": "found in a snapshot of the backend's source (repository and commit)",
    "inferred": "derived by opscan from other facts (the derivation is stated)",
}

# Closed vocabulary of verdict kinds, worst first (docs/check.md, "Verdict"). Computed once by
# opscan/verdict.py in the analysis and carried in Report.verdict; reporters only read it.
VERDICT_KINDS: dict[str, str] = {
    "blocked": "something will not run: an unguarded error finding (CUDA pin, custom kernel, CUDA-only "
               "library, a file opscan could not read) or an op the backend rejects",
    "unknown": "no blocker found, but not proven: ops of unknown status, an incomplete trace, kernels or "
               "libraries to check, or known findings hidden by a baseline",
    "fallback": "runs, with traced ops on CPU fallback or that may fall back to the CPU (not listed; the "
                "release documents the CPU fallback): the verdict names them and their cost per step",
    "unchecked": "nothing found in what was checked, but half of the answer was not checked (no model "
                 "traced, or the source not scanned)",
    "likely": "no blocker, nothing unknown, but not proven: some ops rest only on unverified evidence (kernels "
              "registered in a pre-release source snapshot, a probe without sample results, opscan's inference), "
              "or the installed torch does not pair with the release; the headline says which",
    "ready": "source scanned without blockers, every model traced completely, every op supported on "
             "documented evidence or a probe that ran and compared it, and the installed torch pairs "
             "with the release",
}

class VerdictKind(StrEnum):
    """A verdict kind (VERDICT_KINDS says each), worst first."""

    BLOCKED = "blocked"
    UNKNOWN = "unknown"
    FALLBACK = "fallback"
    UNCHECKED = "unchecked"
    LIKELY = "likely"
    READY = "ready"

    @property
    def rank(self) -> int:
        """How bad, 0 best: the one ranking of verdicts (ready 0, likely 1, unchecked 2, fallback 3,
        unknown 4, blocked 5), read by the zoo's diff and the reporters."""
        return len(_VERDICT_ORDER) - 1 - _VERDICT_ORDER.index(self)

    @property
    def blocks(self) -> bool:
        """Something will not run: the default gate exits 1 (opscan/gate.py)."""
        return self is VerdictKind.BLOCKED

    @property
    def is_ready(self) -> bool:
        return self is VerdictKind.READY

    @property
    def found_problem(self) -> bool:
        """A problem found in what was checked (blocked, unknown, fallback); unchecked, likely and
        ready found none."""
        return self.rank > VerdictKind.UNCHECKED.rank


_VERDICT_ORDER: tuple[VerdictKind, ...] = tuple(VerdictKind)


# What a release says an op with no kernel does (its `no_kernel:` eager and compile behaviour;
# docs/coverage-db.md), as TorchCompile.no_kernel_compile holds it.
class NoKernel(StrEnum):
    """What an op with no kernel does on the backend: raises, runs on the CPU, or not known."""

    ERROR = "error"
    CPU_FALLBACK = "cpu-fallback"
    UNKNOWN = "unknown"


# Closed vocabulary of op caveats: release facts that apply to how a trace uses its ops (which
# dtypes), computed by opscan/db/caveats.py and carried in Report.caveats (docs/coverage-db.md).
CAVEAT_KINDS: dict[str, str] = {
    "known-failure": "the backend's own test lists record failing tests for this op with a dtype the trace uses",
    "known-failure-case": "the backend's own tests fail for this op in a special case (a test variant, or an op "
                          "that decomposes into it); the trace cannot tell whether the model hits that case",
    "float64-narrowed": "the backend computes float64 as float32 by default; the trace computes in float64",
    "int64-narrowed": "the backend computes int64 as int32 by default; the trace does int64 arithmetic "
                      "beyond indexing",
}

PHASES = ("forward", "loss", "backward", "optimizer")

_OP_NAME = re.compile(r"^(?P<ns>[A-Za-z_][A-Za-z0-9_]*)::(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                      r"(?:\.(?P<overload>[A-Za-z_][A-Za-z0-9_]*))?$")


@dataclass(frozen=True, order=True)
class OpName:
    """A canonical operator name as `OpOverload.name()` prints it: `aten::add.Tensor`, `aten::relu`."""

    namespace: str
    name: str
    overload: str = ""  # "" is the default overload

    @classmethod
    def parse(cls, text: str) -> "OpName":
        """Parse `ns::name[.overload]`; `.default` is normalised to no overload. Raises ValueError."""
        match = _OP_NAME.match(text.strip())
        if not match:
            raise ValueError(f"not an operator name: {text!r} (expected e.g. 'aten::add.Tensor')")
        overload = match["overload"] or ""
        if overload == "default":
            overload = ""
        return cls(match["ns"], match["name"], overload)

    @property
    def packet(self) -> str:
        """The overload packet, e.g. `aten::add`."""
        return f"{self.namespace}::{self.name}"

    def __str__(self) -> str:
        return f"{self.packet}.{self.overload}" if self.overload else self.packet


@dataclass(frozen=True, order=True)
class Location:
    """A place in a scanned file. `path` is relative to the scanned root with `/` separators;
    lines and columns are 1-based. `cell` is the 1-based code-cell number for notebooks."""

    path: str
    line: int = 1
    column: int = 1
    end_line: int = 0
    end_column: int = 0
    cell: int | None = None

    def __str__(self) -> str:
        if self.cell is not None:
            return f"{self.path}:cell {self.cell}:line {self.line}"
        return f"{self.path}:{self.line}:{self.column}"

    @property
    def site(self) -> tuple[str, int, int]:
        """The unit of every count of sites (NOTE [sites] in opscan/verdict.py): one line of one
        file (or of one notebook cell); two findings on one line are one site."""
        return (self.path, self.cell or 0, self.line)


def is_kernel_work(task: str, category: str) -> bool:
    """The one test of "is this kernel work", for a finding (Finding.is_kernel) and the scan's hits:
    its task kind is `kernel` (the scan gives an import of a kernel's own language next to that
    kernel the task too, NOTE [subjects]); without a task kind (hand-built) it goes by its category."""
    return task == TaskKind.KERNEL if task else category == "custom-kernel"


@dataclass(frozen=True)
class Finding:
    """One place in the source that pins the code to CUDA (or a file opscan could not read)."""

    rule: str            # stable code, e.g. "OPS101"
    name: str            # kebab-case rule name, e.g. "hardcoded-cuda-device"
    category: str        # one of CATEGORIES
    severity: Severity   # one of SEVERITIES
    message: str
    location: Location
    fix: str = ""        # the concrete TorchNeuron fix
    guarded: bool = False  # inside `if torch.cuda.is_available():` or similar
    snippet: str = ""    # the source line, stripped of its newline
    task: TaskKind | Literal[""] = ""   # the rule's task kind, one of TASKS ("" when not known, e.g. hand-built)
    subject: str = ""    # what matched: symbol (torch.cuda.synchronize), device or backend string,
                         # library (flash_attn), kernel name (docs/scan.md, "Subjects")
    fixable: bool = False  # `opscan fix` rewrites it with a safe fix (its rule's `autofix`; docs/fix.md)

    def __post_init__(self) -> None:   # NOTE [typed vocabularies]
        object.__setattr__(self, "severity", Severity(self.severity))
        if self.task:
            object.__setattr__(self, "task", TaskKind(self.task))

    def sort_key(self) -> tuple[str, int, int, int, str, str]:
        loc = self.location
        return (loc.path, loc.cell or 0, loc.line, loc.column, self.rule, self.message)

    @property
    def is_kernel(self) -> bool:
        """The one test of "is this a kernel finding" (`is_kernel_work`)."""
        return is_kernel_work(self.task, self.category)

    @property
    def blocking(self) -> bool:
        """An unguarded finding of severity error: it blocks the port (NOTE [blockers] in verdict.py)."""
        return self.severity is Severity.ERROR and not self.guarded

    @property
    def blocks_as(self) -> BlockUnit:
        """What a blocking finding counts as in the blockers (NOTE [blockers] in verdict.py): "file"
        (opscan could not read it), "kernel", "library", "pin" (a manifest line holding torch off the
        release's pairing) or "site" (a line of code pinned to CUDA); "" when it does not block.
        Pins and sites are counted by `Location.site` within their task (NOTE [sites])."""
        if not self.blocking:
            return BlockUnit.NONE
        if self.category == "input":
            return BlockUnit.FILE
        if self.is_kernel:
            return BlockUnit.KERNEL
        if self.task is TaskKind.LIBRARY:
            return BlockUnit.LIBRARY
        return BlockUnit.PIN if self.task is TaskKind.TORCH_VERSION else BlockUnit.SITE


@dataclass(frozen=True, order=True)
class OpSource:
    """Where an op was dispatched from: the first frame in the user's code and the module path."""

    path: str
    line: int
    module: str = ""     # e.g. "model.layers.3.mlp.down_proj"; "" outside any module


# Closed vocabulary of kernel-source kinds (KernelSource.kind).
KERNEL_SOURCE_KINDS: dict[str, str] = {
    "file": "a native source file (.cu, C++) flagged itself or named in a build call",
    "function": "a decorated kernel function (`@triton.jit`, `@cuda.jit`), from its first line",
    "name": "an extension or op name stated in a build call (joins the code that uses it; no lines)",
}


@dataclass(frozen=True, order=True)
class KernelSource:
    """A piece of kernel code behind a custom-kernel finding, measured by reading (never running) it."""

    kind: str                # one of KERNEL_SOURCE_KINDS
    path: str = ""           # file / function: relative to the scanned root, `/` separators
    line: int = 0            # function: its first line (decorators included)
    name: str = ""           # name: the extension or op name, e.g. "fused_gelu_cuda"
    lines: int = 0           # non-blank lines measured (0 for a name)

    def __post_init__(self) -> None:
        if self.kind not in KERNEL_SOURCE_KINDS:
            raise ValueError(f"kernel source kind {self.kind!r}: expected one of {', '.join(KERNEL_SOURCE_KINDS)}")

    @property
    def key(self) -> str:
        """Identity of the code (what joins findings into one kernel task): `file:PATH`,
        `function:PATH:LINE`, `name:NAME`."""
        if self.kind == "name":
            return f"name:{self.name}"
        return f"function:{self.path}:{self.line}" if self.kind == "function" else f"file:{self.path}"

    @property
    def is_cuda_file(self) -> bool:
        """A `.cu` file: one kernel of its own (C++ glue and headers are not)."""
        return self.kind == "file" and self.path.endswith(".cu")

    @classmethod
    def parse(cls, text: str, lines: int = 0) -> KernelSource:
        """From the measuring code's (id, lines) pairs: `name:NAME`, `PATH:LINE` (a function) or `PATH`."""
        if text.startswith("name:"):
            return cls("name", name=text[5:])
        path, _, line = text.rpartition(":")
        if path and line.isdigit():
            return cls("function", path=path, line=int(line), lines=lines)
        return cls("file", path=text, lines=lines)


@dataclass(frozen=True)
class OpUsage:
    """One operator a traced model dispatched, aggregated over the trace."""

    op: str                          # canonical name, e.g. "aten::mm"
    count: int
    phases: tuple[str, ...] = ()     # subset of PHASES, in PHASES order
    dtypes: tuple[str, ...] = ()     # e.g. ("torch.float32",), sorted
    sources: tuple[OpSource, ...] = ()
    modes: tuple[str, ...] = ()      # ("inference",), ("train",) or both
    custom: bool = False             # namespace is not a PyTorch one
    # NOTE [fallback cost]: what the op would cost as a CPU fallback in one training step, at the
    # traced shapes: every call copies the device tensors it reads to the host and the tensors it
    # writes back (step_bytes, summed over the train-mode calls), and waits for the device (one
    # sync per call). 0 when no train step was traced (inference only, or an older trace).
    step_calls: int = 0              # calls in the traced training step
    step_bytes: int = 0              # bytes of the device tensors those calls read and write
    # per dtype the op was called with: the source lines of those calls (at most five each), so a
    # caveat about one dtype points at the calls with that dtype; () in older traces
    dtype_sources: tuple[tuple[str, tuple[OpSource, ...]], ...] = ()
    # how the train-step figures grow with the real model (NOTE [fallback scaling] in opscan/assess.py):
    # of step_calls, those inside the repeated layers (Shrink.layer_list); of step_bytes, the bytes
    # that grow with the layer count, with batch x sequence, and with both (the rest stay fixed)
    step_layer_calls: int = 0
    step_layer_bytes: int = 0
    step_token_bytes: int = 0
    step_layer_token_bytes: int = 0
    # the same bytes split further by how they grow with the width and the sequence (NOTE [fallback
    # scaling]): (class, width dims, extra sequence dims, bytes), class 0 fixed, 1 x layers, 2 x batch
    # x sequence, 3 x both; width dims: dims of the traced hidden size (or a small multiple);
    # extra sequence dims: 1 for an [.., S, S] tensor (attention scores). () in older traces
    step_shape_bytes: tuple[tuple[int, int, int, int], ...] = ()


@dataclass(frozen=True)
class Fallback:
    """The cost of one op that runs, or may run, on the CPU, per training step (NOTE [fallback cost])."""

    op: str
    status: Status                       # cpu-fallback | device-or-cpu (OpStatus.may_fall_back)
    bytes_per_step: int                  # copied to the host and back, at the model's real size
    syncs_per_step: int                  # device -> host waits (one per call)
    calls_per_step: int
    scale: float = 1.0                   # factor applied to the traced figures (1.0: as traced)
    traced_bytes: int = 0                # the figures at the traced size, before scaling
    traced_syncs: int = 0
    traced_calls: int = 0
    scaled_by: str = ""                  # how they were scaled ("" as traced; NOTE [fallback scaling])

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))


@dataclass(frozen=True)
class StandIn:
    """A data-dependent value the trace had to invent (the branch taken may differ from a real run)."""

    op: str          # e.g. "aten::_local_scalar_dense", "aten::nonzero"
    kind: str        # e.g. "item", "dynamic-shape"
    value: str       # what was used instead, e.g. "1", "upper bound 16"
    count: int
    source: OpSource | None = None


@dataclass(frozen=True)
class Evidence:
    """Why the database says what it says about an op."""

    kind: str                    # one of EVIDENCE_KINDS
    text: str                    # one line a person can read, e.g. "pre-release source, unverified for 2.33"
    url: str | None = None
    date: str | None = None
    repo: str | None = None
    commit: str | None = None
    install: str | None = None   # for probed evidence: e.g. "torch-neuronx 2.14.3.0 / torch 2.14.0"
    compared: bool = False       # probed evidence: results were run and compared with the CPU
                                 # (`--samples`, `--report`); a registration alone proves less


@dataclass(frozen=True)
class Coverage:
    """The answer to "will this op run on the backend?" for one op and one release."""

    op: str
    status: Status                       # one of STATUSES
    evidence: tuple[Evidence, ...] = ()
    confidence: str = "low"              # "high" | "medium" | "low"
    via: str = ""                        # how the answer was found, e.g. "overload packet aten::add"
    parts: tuple[str, ...] = ()          # for composite: the ops it expands into

    def __post_init__(self) -> None:   # NOTE [typed vocabularies]
        object.__setattr__(self, "status", Status(self.status))

    def label(self) -> str:
        """The status with its first evidence, as reports show it: "native (probed on torch-neuronx 2.14.3.0)"."""
        return f"{self.status} ({self.evidence[0].text})" if self.evidence else self.status


@dataclass(frozen=True)
class DeviceProfile:
    """What a backend looks like to the trace: the ops it implements itself and its SDPA choice."""

    name: str                            # e.g. "torchneuron==2.33.0"
    device: str = "neuron"
    native_ops: tuple[str, ...] = ()     # the trace stops at these instead of their decompositions
    sdpa_policy: str = "math"            # which SDPA kernel the backend picks: math, overrideable,
                                         # overrideable-4d (overrideable for 4-D q/k/v, else math)


@dataclass(frozen=True)
class Shrink:
    """How a trace is smaller than the model it stands for, where known (NOTE [fallback scaling] in
    opscan/assess.py); 0 = not known, taken as traced."""

    layer_list: str = ""                 # module path of the repeated layers, e.g. "model.layers"
    layers: int = 0                      # layers traced (the list's length)
    real_layers: int = 0                 # the model's count before `--layers` cut it
    batch: int = 0                       # batch and sequence length of the traced step
    seq_len: int = 0
    real_batch: int = 0                  # the real training step's, when stated
    real_seq_len: int = 0
    hidden: int = 0                      # the traced model's width (hidden size), where the trace found it
    real_hidden: int = 0                 # the real model's width, when known (--real-hidden, config.json)
    hidden_from: str = ""                # where the real width was read ("--real-hidden", "config.json")


# --- torch.compile (docs/compile.md) -------------------------------------------------------------

@dataclass(frozen=True)
class GraphBreak:
    """One graph break torch._dynamo.explain gave for a compiled region, where it is and why."""

    path: str                            # the innermost user frame of the break (as OpSource.path)
    line: int
    reason: str                          # the first line of Dynamo's reason
    count: int = 1                       # how many of explain's break reasons have this place and reason


@dataclass(frozen=True)
class CompileRegion:
    """One torch.compile call (or `@torch.compile` decorator) a trace or run met, and what it compiled."""

    path: str                            # the call's line in user code (a decorator: its `@` line)
    line: int
    target: str                          # what it compiles: "module Net", "function attention"
    options: tuple[tuple[str, str], ...] = ()   # keyword -> the value's repr, sorted by keyword
    calls: int = 0                       # calls of the compiled callable in the traced step(s)
    explained: bool = False              # torch._dynamo.explain ran on the CPU for it
    graphs: int = 0                      # explain's graph_count (0 when not explained)
    graph_break_count: int = 0           # explain's graph_break_count (graphs - 1)
    graph_breaks: tuple[GraphBreak, ...] = ()   # explain's break reasons, by place, sorted
    not_explained: str = ""              # why explain did not run ("" when it ran)
    ops: tuple[str, ...] = ()            # ops dispatched inside the region (forward and its backward)


@dataclass(frozen=True)
class CompileOption:
    """A torch.compile option TorchNeuron rejects or ignores, judged by the rule that says so."""

    name: str                            # the keyword: dynamic, mode, backend
    value: str                           # its repr: True, 'max-autotune', 'inductor'
    rule: str                            # the rule stating what TorchNeuron does (OPS208, ...)
    severity: Severity                   # the rule's severity
    effect: str                          # the rule's message for this value
    source: str                          # the fact's source (the rule's first source URL)
    path: str = ""                       # the torch.compile call
    line: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "severity", Severity(self.severity))


@dataclass(frozen=True)
class CompiledOp:
    """A traced op inside a compiled region whose coverage status has no kernel for it."""

    op: str
    status: Status                       # cpu-fallback (blocks), device-or-cpu or unknown (may raise)
    regions: tuple[str, ...]             # "path:line" of the regions it was dispatched in

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))


@dataclass(frozen=True)
class TorchCompile:
    """torch.compile under TorchNeuron's rules (opscan/compile_check.py): the regions with their
    graph breaks, the options TorchNeuron rejects or ignores, and the ops with no kernel inside."""

    regions: tuple[tuple[str, CompileRegion], ...] = ()   # (trace target, region), in trace order
    options: tuple[CompileOption, ...] = ()
    no_kernel_ops: tuple[CompiledOp, ...] = ()
    fallback_rule: str = ""              # what happens to an op with no kernel in a compiled graph
    fallback_sources: tuple[str, ...] = ()   # where that fact is written
    no_kernel_compile: NoKernel = NoKernel.UNKNOWN   # the release's no_kernel.compile

    def __post_init__(self) -> None:
        object.__setattr__(self, "no_kernel_compile", NoKernel(self.no_kernel_compile))

    @property
    def blocking_ops(self) -> tuple[str, ...]:
        """Ops with no kernel (cpu-fallback) in compiled regions when the release says they raise there."""
        if self.no_kernel_compile is not NoKernel.ERROR:
            return ()
        return tuple(o.op for o in self.no_kernel_ops if o.status.falls_back)


@dataclass(frozen=True)
class CompileEstimate:
    """Compile time as the user's assumption times opscan's counts of compiles (never measured)."""

    seconds_per_signature: float | None  # [tool.opscan.cost] compile-seconds-per-signature; None = not set
    counts: tuple[tuple[str, int], ...] = ()       # (what was counted, how many compiles)
    seconds: tuple[tuple[str, float], ...] = ()    # (the same, count x seconds_per_signature); () when unset


@dataclass(frozen=True)
class NewSignature:
    """A compile signature a step brought that no earlier step had (NOTE [shape origins] in
    opscan/trace/signatures.py): the call's line, and the cause and line that made its shape."""

    signature: str                       # canonical form (NOTE [compile signatures])
    op: str
    phases: tuple[str, ...]
    source: OpSource | None              # where the op was called
    cause: str                           # one of COMPILE_CAUSES
    origin: OpSource | None              # the line that made the shape (the op's own for "number")


@dataclass(frozen=True)
class CompileStep:
    """One optimizer step's compile signatures (docs/json.md, "compile")."""

    signatures: tuple[str, ...]          # distinct, sorted, on the device: what the device compiles
    host_signatures: tuple[str, ...] = ()   # on host tensors (data pipeline): not compiled
    phases: tuple[tuple[str, int], ...] = ()   # distinct signatures per phase, in PHASES order
    new: tuple[NewSignature, ...] = ()   # not seen in an earlier step (none in the first)


@dataclass(frozen=True)
class VaryingOp:
    """An op whose signature differs from step to step, seen in the steps run or predicted from a
    size the data decides, grouped by the cause and line that made the shape."""

    op: str
    cause: str                           # one of COMPILE_CAUSES
    origin: OpSource | None              # the line that made the shape
    sources: tuple[OpSource, ...] = ()   # where the op is called (at most five)
    steps: tuple[int, ...] = ()          # the steps (1-based) that brought it new signatures
    new_signatures: int = 0              # how many, over the steps run
    detail: str = ""                     # e.g. the tail batch's sizes


@dataclass(frozen=True)
class CompileForecast:
    """What the device compiles per step (NOTE [compile signatures] in opscan/trace/signatures.py)."""

    steps: tuple[CompileStep, ...] = ()
    varying: tuple[VaryingOp, ...] = ()
    # signatures of the last step whose inputs' size a data-dependent op decides: each a new compile
    # every step likely (what one traced step can say of the steps after it)
    likely_new: int = 0


# The causes of a shape that changes between steps (opscan/trace/signatures.py CAUSES says each).
COMPILE_CAUSES = ("data-dependent", "data", "number", "tail-batch", "first-run")


@dataclass(frozen=True)
class ModelTrace:
    """The ops one model dispatched in one trace, and how complete the trace is."""

    target: str
    mode: str                            # "train" | "inference" | "both"
    device: str
    ops: tuple[OpUsage, ...] = ()
    stand_ins: tuple[StandIn, ...] = ()
    complete: bool = True
    stopped_at: str = ""                 # when incomplete: which op / source line stopped it, and what to try
    seconds: float = 0.0
    # ops whose fake kernel opscan supplied, PyTorch's being stricter than the real kernels or
    # missing ("fake kernel supplied by opscan for OP"; see opscan/trace/fakes.py), sorted
    supplied_fakes: tuple[str, ...] = ()
    # how the step was traced again after a stop, and why (e.g. "use_cache=False (with its cache
    # the step stopped: ...)"); "" when it was traced as given
    retried: str = ""
    # `opscan run`: ops whose tensors were all on the host (CPU) while the script ran on the
    # imitated device (data loading, metrics); listed apart, not checked against the database
    host_ops: tuple[OpUsage, ...] = ()
    shrink: Shrink | None = None         # the repeated layers and traced sizes (None: older traces)
    compile: CompileForecast | None = None   # compile signatures per step (None: older traces)
    compiled: tuple[CompileRegion, ...] = ()   # torch.compile regions met, in call order (docs/compile.md)
    # the project code that ran to build the model, one line ("built by running README.md block 1"; "" when
    # none: a model folder, a .pt2 file, a timm name) and which parts of the child's containment held
    # (opscan/containment.py PARTS -> "held" or why not; () when the model was not traced in a contained child)
    built_by: str = ""
    containment: tuple[tuple[str, str], ...] = ()
    steps: int | None = None             # `opscan run`: optimizer steps the script took (None: not a run)

    @property
    def stop(self) -> str:
        """Where the step stopped (op, source line, exception), without what to try ("" when complete)."""
        return self.stopped_at.split(STOP_HINT)[0]

    @property
    def hint(self) -> str:
        """What the stop says to try ("" when it says nothing)."""
        return self.stopped_at.partition(STOP_HINT)[2].strip()


STOP_HINT = "; try:"   # joins a stop and its hint in ModelTrace.stopped_at (opscan/trace/tracer.py `_stopped`)


def merge_containment(states: Iterable[tuple[tuple[str, str], ...]]) -> tuple[tuple[str, str], ...]:
    """One (part, "held" or why not) tuple from several children's (see Report.containment)."""
    merged: dict[str, str] = {}
    for parts in states:
        for part, state in parts:
            if merged.get(part, "held") == "held":
                merged[part] = state
    return tuple(merged.items())


def containment_line(parts: tuple[tuple[str, str], ...]) -> str:
    """'containment: environment, network, files, processes held' or which parts did not and why."""
    held = [p for p, s in parts if s == "held"]
    words = [", ".join(held) + " held" if held else "nothing held"]
    return "containment: " + "; ".join(words + [f"{p} not held ({s})" for p, s in parts if s != "held"])


@dataclass(frozen=True)
class Task:
    """One piece of port work a lead can schedule."""

    id: str                              # stable, e.g. "device-agnostic", "library:flash_attn"
    title: str
    action: str                          # what to do
    why: str                             # the TorchNeuron fact behind it
    sources: tuple[str, ...] = ()        # URLs of the facts
    sites: tuple[Location, ...] = ()
    ops: tuple[str, ...] = ()
    effort_hours: float = 0.0            # the likely effort (what totals and `payback` use)
    effort_basis: str = ""               # how the estimate was computed (low / likely / high)
    priority: int = 3                    # 1 blocker, 2 every step, 3 one-off
    depends_on: tuple[str, ...] = ()
    depends_reasons: tuple[str, ...] = ()  # why each task of depends_on comes first (same order)
    effort_low_hours: float | None = None   # the range around effort_hours; None = not given
    effort_high_hours: float | None = None  # (hand-built tasks), read as effort_hours
    sized: bool = True                   # False: no figure could be given (e.g. a library with no
                                         # catalog entry); its effort counts as 0 in the totals
    kind: TaskKind | Literal[""] = ""    # the kind of work: a rule task kind of TASKS ("none" excepted),
                                         # an op-gap kind of OP_TASKS or static-shapes; "" in hand-built tasks
    subject: str = ""                    # library: its package (flash_attn); kernel: its first name
    blocking_sites: int = 0              # sites (of `sites`) with a blocking finding, for tasks whose
                                         # blockers are sites (not kernel, library): NOTE [sites] in verdict.py

    def __post_init__(self) -> None:
        if self.depends_reasons and len(self.depends_reasons) != len(self.depends_on):
            raise ValueError(f"task {self.id}: depends_reasons must give one reason per depends_on entry")
        if self.kind:   # NOTE [typed vocabularies]
            object.__setattr__(self, "kind", TaskKind(self.kind))

    @property
    def effort_range(self) -> tuple[float, float, float]:
        """(low, likely, high) hours; a task without a range is its likely value three times."""
        low = self.effort_hours if self.effort_low_hours is None else self.effort_low_hours
        high = self.effort_hours if self.effort_high_hours is None else self.effort_high_hours
        return low, self.effort_hours, high

    @property
    def group(self) -> str:
        """"kernel", "library", "op" (an op-gap task) or "source" (code to change), from its kind."""
        return self.kind.group if self.kind else "source"

    def reason_for(self, dependency: str) -> str:
        """Why `dependency` must be done before this task ("" when not stated)."""
        if dependency in self.depends_on and self.depends_reasons:
            return self.depends_reasons[self.depends_on.index(dependency)]
        return ""


@dataclass(frozen=True)
class RuleInfo:
    """What reporters may say about a rule that fired (SARIF rule list, help text)."""

    id: str                              # e.g. "OPS101"
    name: str                            # e.g. "hardcoded-cuda-device"
    severity: Severity                   # default level, one of SEVERITIES
    category: str = ""
    what: str = ""                       # one paragraph: what it flags
    why: str = ""                        # why it matters on TorchNeuron
    fix: str = ""                        # how to fix it
    help_uri: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "severity", Severity(self.severity))


@dataclass(frozen=True)
class BaselineStatus:
    """How a run's findings compared with a baseline file (only new findings stay in the Report)."""

    path: str
    known: int = 0                       # findings the baseline hides
    stale: tuple[str, ...] = ()          # entries that match nothing any more: "path:line: RULE message"


# Closed vocabulary of model candidates found without running anything (opscan/targets/discovery.py).
CANDIDATE_KINDS: dict[str, str] = {
    "hf-folder": "a folder holding a transformers config.json (model_type / architectures)",
    "timm-folder": "a folder holding a timm config.json (architecture)",
    "export": "a .pt2 file saved with torch.export.save",
    "factory": "a function named like a model factory (build, make, create_model, get_model, ...)",
    "module-class": "an nn.Module subclass no other code of its file builds (needs inputs)",
    "from-pretrained": "a from_pretrained / from_config call on a local model folder",
    "inline": "a model built inline in a script or notebook: no name to trace; write a factory",
}


@dataclass(frozen=True)
class ModelCandidate:
    """A model opscan found in a project by reading it (never by running it)."""

    target: str                          # trace target: "model.py:build", "hf:models/llama", "pt2:m.pt2"
    kind: str                            # one of CANDIDATE_KINDS
    path: str                            # file or folder, relative to the project root
    line: int = 0                        # for Python candidates
    ready: bool = True                   # traceable as it is (False: needs inputs or a factory)
    note: str = ""                       # what to do first, e.g. "needs remote code (auto_map): ..."


@dataclass(frozen=True)
class Discovery:
    """What opscan found to trace when no model was configured (docs/check.md, "Three kinds of input")."""

    traced: tuple[str, ...] = ()                 # targets traced with no configuration (PATH is the model)
    refused: tuple[ModelCandidate, ...] = ()     # model inputs not built, each with its note
    candidates: tuple[ModelCandidate, ...] = ()  # proposals for [[tool.opscan.models]] (`opscan init`)
    # What the reporters print of it, set by the app (app.py `_discover`) so they never import discovery:
    config_blocks: tuple[str, ...] = ()          # per candidate, its [[tool.opscan.models]] block (`opscan init`'s)
    factory_hint: str = ""                       # how to write a factory opscan can call (discover.FACTORY_HINT)


@dataclass(frozen=True)
class OpCaveat:
    """A release fact that applies to how the trace uses some ops (opscan/db/caveats.py)."""

    kind: str                            # one of CAVEAT_KINDS
    message: str                         # one line: what happens and to which ops
    ops: tuple[str, ...]                 # the traced ops it applies to, sorted
    dtypes: tuple[str, ...] = ()         # the traced dtypes involved, e.g. ("torch.float64",)
    sources: tuple[OpSource, ...] = ()   # where the trace dispatched those ops (model source lines)
    evidence: tuple[Evidence, ...] = ()  # the release facts behind it
    tests: tuple[str, ...] = ()          # known-failure: the failing upstream test methods


@dataclass(frozen=True)
class OpNote:
    """A release note that concerns ops the trace saw (opscan/db/annotate.py `op_notes`): shown
    beside them, it never changes the verdict."""

    packet: str                          # the op the note is about, e.g. "aten::group_norm"
    ops: tuple[str, ...]                 # the traced ops it concerns, sorted
    via: str                             # "op" (traced by that name), "overload" (an overload of the
                                         # packet), "part" (the packet decomposes into these traced ops)
    text: str
    evidence: tuple[Evidence, ...] = ()
    tests: tuple[str, ...] = ()


@dataclass(frozen=True)
class Blockers:
    """What blocks the port, counted once by the analysis (NOTE [blockers] in opscan/verdict.py):
    the headline, the gate line, the summary, the JSON verdict and the preflight all read this."""

    sites: int = 0                       # places of unguarded error findings in code to change (CUDA pins)
    files: int = 0                       # the files those sites are in
    kernels: int = 0                     # custom kernels with an unguarded error finding
    libraries: int = 0                   # CUDA-only libraries imported unguarded
    unsupported_ops: int = 0             # traced ops the backend rejects
    unreadable_files: int = 0            # files opscan could not read (their findings are errors)
    syntax_errors: tuple[str, ...] = ()  # "path:line" of the first syntax error of each such file (of the above)
    compiled_fallback_ops: int = 0       # ops with no kernel inside torch.compile regions (TorchCompile)
    # manifest lines holding torch (or a package pinned to it) off the release's pairing
    dependencies: int = 0

    @property
    def count(self) -> int:
        """The blocking count: every item above is one thing to fix before the code runs."""
        return (self.sites + self.kernels + self.libraries + self.unsupported_ops + self.unreadable_files
                + self.compiled_fallback_ops + self.dependencies)

    def describe(self) -> str:
        """"12 CUDA-pinned sites in 2 files, 3 custom kernels": the words of the headline and the gate."""
        def n(count: int, word: str, plural: str = "") -> str:
            return f"{count} {word if count == 1 else (plural or word + 's')}"
        parts = []
        if self.sites:
            parts.append(f"{n(self.sites, 'CUDA-pinned site')} in {n(self.files, 'file')}")
        if self.dependencies:   # first: the torch move comes before every other task (docs/dependencies.md)
            parts.insert(0, n(self.dependencies, "dependency pin") + " off the paired torch")
        if self.kernels:
            parts.append(n(self.kernels, "custom kernel"))
        if self.libraries:
            parts.append(n(self.libraries, "CUDA-only library", "CUDA-only libraries"))
        if self.unsupported_ops:
            parts.append(n(self.unsupported_ops, "unsupported op"))
        if self.compiled_fallback_ops:
            parts.append(n(self.compiled_fallback_ops, "op") + " with no kernel in torch.compile regions")
        if self.syntax_errors:   # named with file and line: a syntax error is not an unreadable file
            where = ", ".join(self.syntax_errors[:3]) + (" …" if len(self.syntax_errors) > 3 else "")
            count = len(self.syntax_errors)
            parts.append(f"{'a syntax error' if count == 1 else n(count, 'syntax error')} ({where})")
        if self.unreadable_files - len(self.syntax_errors):
            parts.append(n(self.unreadable_files - len(self.syntax_errors), "file opscan could not read",
                           "files opscan could not read"))
        return ", ".join(parts)


@dataclass(frozen=True)
class JudgedOps:
    """The traced ops the verdict judged, by what their status means (NOTE [status facts]), each in
    op order: derived once by the verdict and carried in it, so the gate and the reporters read
    them instead of sorting the statuses again."""

    traced: int = 0                      # distinct traced ops
    unsupported: tuple[str, ...] = ()    # the backend rejects them: each blocks (Status.blocks)
    fallback: tuple[str, ...] = ()       # run on the CPU (cpu-fallback)
    maybe_fallback: tuple[str, ...] = () # may run on the CPU (device-or-cpu)
    unknown: tuple[str, ...] = ()        # nobody has checked them

    @classmethod
    def of(cls, statuses: Mapping[str, Status]) -> JudgedOps:
        """From op -> status, in the mapping's order (the verdict's: sorted by op)."""
        typed = [(op, Status(status)) for op, status in statuses.items()]
        return cls(traced=len(typed), unsupported=tuple(op for op, s in typed if s.blocks),
                   fallback=tuple(op for op, s in typed if s.falls_back),
                   maybe_fallback=tuple(op for op, s in typed if s.maybe_falls_back),
                   unknown=tuple(op for op, s in typed if s.unchecked))


@dataclass(frozen=True)
class Verdict:
    """The one-line answer of a run, computed once by the analysis (opscan/verdict.py)."""

    kind: VerdictKind                    # one of VERDICT_KINDS
    headline: str                        # the line users read first
    details: tuple[str, ...] = ()        # caveats shown under the headline
    source_checked: bool = False         # the source scan ran
    ops_checked: bool = False            # at least one model was traced and its ops looked up
    blockers: Blockers = field(default_factory=Blockers)   # what blocks (zero unless kind is "blocked")
    unchecked: tuple[str, ...] = ()      # models opscan was given but could not check, one line each
                                         # ("TARGET: why"): the gate exits 2 on them (opscan/gate.py)
    remedy: str = ""                     # the one remedy line for models that missed modules not
                                         # installed here (the manifest found, --allow-unchecked); "" = none
    ops: JudgedOps = field(default_factory=JudgedOps)   # the traced ops by status, as judged

    def __post_init__(self) -> None:   # NOTE [typed vocabularies]
        object.__setattr__(self, "kind", VerdictKind(self.kind))


# NOTE [checked or not]: whether a part of the answer (the project's source) was checked is one of
# three facts, each its own type, read by the verdict (opscan/verdict.py): `Checked` (it was),
# `NotChecked(reason)` (it was not, and the verdict says why: a gap in the answer, so never
# "ready"), `NothingToCheck(what)` (there is none of it: the zoo judges a model alone, with no
# project source; not a gap).
@dataclass(frozen=True)
class Checked:
    """The part was checked."""


@dataclass(frozen=True)
class NotChecked:
    """The part was not checked; `reason` says why (shown in the verdict: "source: not checked — ...")."""

    reason: str

    def __post_init__(self) -> None:
        if not self.reason:
            raise ValueError("NotChecked needs its reason (the verdict shows it)")


@dataclass(frozen=True)
class NothingToCheck:
    """There is none of the part to check (the verdict says "source: none to scan"); not a gap."""


SourceCheck = Checked | NotChecked | NothingToCheck


@dataclass(frozen=True)
class Draft:
    """What one run traced and found, before its assessment: `opscan.assess.assess` judges it into
    a `Report` (coverage, caveats, tasks, verdict). Every caller of `assess` (opscan/app.py,
    `opscan trace`, the zoo) hands one in; what it could not check is part of it."""

    root: str
    tool_version: str
    findings: tuple[Finding, ...] = ()
    traces: tuple[ModelTrace, ...] = ()
    backend: str = ""                    # the release named before the database is loaded
    files_scanned: int = 0
    notes: tuple[str, ...] = ()          # the run's notes; the assessment's follow them
    baseline: BaselineStatus | None = None
    hours_per_day: float = 8.0
    rules: tuple[RuleInfo, ...] = ()
    project_sources: tuple[str, ...] | None = None
    discovery: Discovery | None = None
    source: SourceCheck = Checked()      # NOTE [checked or not]
    ops_not_checked: str = ""            # why no model's ops were checked when none were ("": no model found)
    unchecked: tuple[tuple[str, str], ...] = ()   # (target, why) of each model given that could not be
                                                  # built or traced (the gate exits 2 on them)
    remedy: str = ""                     # the one remedy line for models that missed modules not
                                         # installed here (the manifest found, --allow-unchecked); "" = none


@dataclass(frozen=True)
class Report:
    """Everything one opscan run found. Reporters read this and nothing else."""

    root: str
    tool_version: str
    findings: tuple[Finding, ...] = ()
    traces: tuple[ModelTrace, ...] = ()
    coverage: tuple[Coverage, ...] = ()
    tasks: tuple[Task, ...] = ()
    backend: str = ""                    # e.g. "torchneuron==2.33.0"
    files_scanned: int = 0
    notes: tuple[str, ...] = field(default=())  # run-level notes, e.g. a torch version mismatch
    baseline: BaselineStatus | None = None  # set when a baseline was applied
    hours_per_day: float = 8.0           # engineer-day length of the cost model (effort in days)
    rules: tuple[RuleInfo, ...] = ()     # the rules that fired, sorted by id
    project_sources: tuple[str, ...] | None = None  # op-source paths that are files of the project
                                                    # (None: not known; library paths are left out)
    verdict: Verdict | None = None       # set by the analysis; None only in hand-built reports
    discovery: Discovery | None = None   # set when no model was configured: what was found instead
    caveats: tuple[OpCaveat, ...] = ()  # release facts hitting the traced ops' dtypes (opscan/db/caveats.py)
    fallbacks: tuple[Fallback, ...] = ()  # ops that run or may run on the CPU, with their cost, by op
    release_notes: tuple[OpNote, ...] = ()  # release notes that concern traced ops, by packet
    torch_compile: TorchCompile | None = None   # torch.compile under TorchNeuron's rules (None: none met)
    # compile seconds from the user's assumption (None: nothing counted)
    compile_estimate: CompileEstimate | None = None

    @property
    def containment(self) -> tuple[tuple[str, str], ...]:
        """Which parts of the containment held over every contained child of the run: a part holds
        when it held in each (else the first reason it did not); () when no child was contained."""
        return merge_containment(t.containment for t in self.traces)

    @property
    def blockers(self) -> Blockers:
        """The verdict's blocking count (NOTE [blockers] in opscan/verdict.py); none without a verdict."""
        return self.verdict.blockers if self.verdict is not None else Blockers()

    @property
    def sites(self) -> int:
        """The sites of the port-task list (NOTE [sites] in opscan/verdict.py): the one sum the
        summary, markdown, the GitHub summary and JSON `summary.sites` show."""
        return sum(len(t.sites) for t in self.tasks)

    @property
    def fixable(self) -> int:
        """Findings `opscan fix` rewrites (NOTE [fixable is what fix fixes] in opscan/fix/preview.py)."""
        return sum(f.fixable for f in self.findings)

    @property
    def effort(self) -> "EffortTotal":
        """The port-task list's total effort: low / likely / high hours and the unsized tasks
        (the one sum every reporter and `opscan payback` show)."""
        ranges = [t.effort_range for t in self.tasks if t.sized]
        return EffortTotal(
            low_hours=round(sum(r[0] for r in ranges), 2),
            likely_hours=round(sum(r[1] for r in ranges), 2),
            high_hours=round(sum(r[2] for r in ranges), 2),
            unsized=tuple(t.id for t in self.tasks if not t.sized),
            hours_per_day=self.hours_per_day or 8.0,
        )


@dataclass(frozen=True)
class EffortTotal:
    """Total effort of a port-task list (Report.effort)."""

    low_hours: float
    likely_hours: float
    high_hours: float
    unsized: tuple[str, ...] = ()        # ids of tasks no figure could be given for
    hours_per_day: float = 8.0

    def days(self, hours: float) -> float:
        return hours / self.hours_per_day


# --- scan facts (docs/architecture.md, "Scan facts") ------------------------------------------
# What the scan learnt about the code beside its findings, so the plan, discovery and the fixer read
# it instead of parsing and resolving imports again. Lines are as in Location (a notebook's are
# cell-local, with the cell number in `cell`).

@dataclass(frozen=True, order=True)
class ImportBinding:
    """One name an import statement binds; the alias is the unit (`import cupy, flash_attn` is two)."""

    path: str                 # the file, relative to the scanned root (as Location.path)
    line: int                 # the first line of the import statement
    local: str                # the name bound in the file (`np` for `import numpy as np`)
    target: str               # the dotted name it stands for (`numpy`, `torch.nn.functional.gelu`)
    module_level: bool = True  # bound at module level (not inside a def or class)
    cell: int | None = None   # 1-based notebook cell, None for a .py file
    end_line: int = 0         # the statement's last line (0: as `line`)


@dataclass(frozen=True, order=True)
class LibraryUse:
    """What one import of a CUDA-only library brings into its file (NOTE [library usage] in
    plan/measure.py): the dotted names used and the loads of the bound names."""

    path: str
    line: int                  # the import statement's first line (the finding's line)
    package: str               # the top-level package (the finding's subject)
    names: tuple[str, ...]     # dotted names used, sorted
    call_sites: int            # loads of the bound names in the file


@dataclass(frozen=True, order=True)
class FunctionSpan:
    """A function that holds a custom-kernel finding on its decorators or `def` line."""

    path: str
    line: int       # first line (its first decorator, else the `def`)
    def_line: int   # the `def` line
    lines: int      # first line .. last line of the body, inclusive
    name: str


@dataclass(frozen=True)
class ScanFacts:
    """The facts of a scan (each tuple sorted): import bindings of every walked file, library use
    and kernel functions of the files with such findings, and the files with a PyTorch reference
    path (a function named `*_ref`, `naive_*`, `torch_*`, ...) next to a kernel finding."""

    bindings: tuple[ImportBinding, ...] = ()
    libraries: tuple[LibraryUse, ...] = ()
    kernels: tuple[FunctionSpan, ...] = ()
    references: tuple[str, ...] = ()      # paths

    def library(self, path: str, line: int, package: str) -> LibraryUse | None:
        """The use of the library `package` imported at `path:line`, if measured."""
        for use in self.libraries:
            if use.path == path and use.line == line and use.package == package:
                return use
        return None

    def bindings_of(self, path: str) -> tuple[ImportBinding, ...]:
        """The import bindings of one file, in line order."""
        return tuple(b for b in self.bindings if b.path == path)
