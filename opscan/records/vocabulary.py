"""The closed vocabularies as types, with the facts callers decide by (NOTE [typed vocabularies]):
severities, block units, task kinds, op statuses, verdict kinds, what an op with no kernel does, and
finding categories, evidence kinds and op caveats; each member has its description (the dicts of
words and descriptions, SEVERITIES and the like, are views of the types)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

# NOTE [typed vocabularies]: each closed vocabulary a caller decides by (severities, op statuses,
# verdict kinds, task kinds, a release's no-kernel behaviour) is a `StrEnum` here, with the
# predicates callers need as properties, so that no other module compares the words themselves
# (tests/test_vocabularies.py walks opscan/ for such comparisons). Each member has its
# `description`; the dicts of words and descriptions (SEVERITIES, CATEGORIES, ...) are views of
# the types, kept for the places that list them. A member is its string: it
# compares, hashes, formats and serialises (JSON) as the word, so reports are unchanged. The
# records holding one (Finding.severity, Coverage.status, Verdict.kind, Task.kind, ...) turn a
# word into its member when built; a word outside the vocabulary is a ValueError.
class Severity(StrEnum):
    """A finding's severity, the SARIF levels (SEVERITIES says each), worst first."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    @property
    def description(self) -> str:
        return _SEVERITIES[self]

    @property
    def rank(self) -> int:
        """How bad, 0 best: the one ranking of severities (note 0, warning 1, error 2)."""
        return _SEVERITY_RANK[self]

    def at_least(self, other: Severity) -> bool:
        """This severity is `other` or worse (`--fail-on warning`: warning or error)."""
        return self.rank >= other.rank


_SEVERITY_RANK: dict[Severity, int] = {Severity.NOTE: 0, Severity.WARNING: 1, Severity.ERROR: 2}
_SEVERITIES: dict[Severity, str] = {
    Severity.ERROR: "blocks the port: the code will not run, or will run on the wrong device",
    Severity.WARNING: "runs, but slower, differently, or only with a manual step",
    Severity.NOTE: "worth knowing; no change strictly needed",
}
SEVERITIES: dict[str, str] = {k.value: k.description for k in Severity}


class Category(StrEnum):
    """What a rule (and its findings) is about (docs/scan.md)."""

    DEVICE_STRING = "device-string"
    CUDA_API = "cuda-api"
    CUSTOM_KERNEL = "custom-kernel"
    CUDA_ONLY_LIB = "cuda-only-lib"
    DEVICE_DISPATCH = "device-dispatch"
    INPUT = "input"
    DEPENDENCY = "dependency"

    @property
    def description(self) -> str:
        return _CATEGORIES[self]


_CATEGORIES: dict[Category, str] = {
    Category.DEVICE_STRING: "a hard-coded device choice (\"cuda\", \"cuda:0\", ...)",
    Category.CUDA_API: "a CUDA-only API or setting (torch.cuda.*, cudnn, NCCL, CUDA env vars, ...)",
    Category.CUSTOM_KERNEL: "code that defines, builds, loads or calls a custom kernel",
    Category.CUDA_ONLY_LIB: "an import of a library that only runs on CUDA",
    Category.DEVICE_DISPATCH: "a place that chooses among other accelerators (npu, xpu, mps, ...) by name: "
                              "where the port adds neuron",
    Category.INPUT: "a file opscan could not read or parse, or a problem in opscan's own run",
    Category.DEPENDENCY: "a dependency manifest line that installs a torch or a CUDA build TorchNeuron cannot use",
}
CATEGORIES: dict[str, str] = {k.value: k.description for k in Category}

# NOTE [task kinds]: the one table of port-task kinds (TaskKind, below, each with its description
# and where it comes from). Rules declare a `rule` kind in their YAML (`task:`, the TASKS view;
# "none": not port work); an op status that needs work makes an `op` kind (OP_TASKS, OpStatus.task);
# the compile forecast makes `static-shapes`. opscan/plan/task_kinds.py says, per kind, the fix, the
# TorchNeuron fact behind it and its source (tests/plan pins that it covers every kind but "none").
# See docs/scan.md, "Task kinds".
class BlockUnit(StrEnum):
    """What a blocking finding counts as in the blockers (`Finding.blocks_as`, NOTE [blockers] in
    opscan/assess/verdict.py); NONE for a finding that does not block."""

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

class EvidenceKind(StrEnum):
    """Where a fact of the coverage database comes from (Evidence.kind)."""

    DOCUMENTED = "documented"
    PROBED = "probed"
    SOURCE_SNAPSHOT = "source-snapshot"
    INFERRED = "inferred"

    @property
    def description(self) -> str:
        return _EVIDENCE_KINDS[self]


_EVIDENCE_KINDS: dict[EvidenceKind, str] = {
    EvidenceKind.DOCUMENTED: "stated in the backend's published documentation (URL and date)",
    EvidenceKind.PROBED: "read from the dispatcher of a real install (which install, when)",
    EvidenceKind.SOURCE_SNAPSHOT: "found in a snapshot of the backend's source (repository and commit)",
    EvidenceKind.INFERRED: "derived by opscan from other facts (the derivation is stated)",
}
EVIDENCE_KINDS: dict[str, str] = {k.value: k.description for k in EvidenceKind}

# Closed vocabulary of verdict kinds, worst first (docs/check.md, "Verdict"). Computed once by
# opscan/assess/verdict.py in the analysis and carried in Report.verdict; reporters only read it.
_VERDICT_KINDS: dict[str, str] = {
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
    def description(self) -> str:
        return _VERDICT_KINDS[self]

    @property
    def rank(self) -> int:
        """How bad, 0 best: the one ranking of verdicts (ready 0, likely 1, unchecked 2, fallback 3,
        unknown 4, blocked 5), read by the zoo's diff and the reporters."""
        return len(_VERDICT_ORDER) - 1 - _VERDICT_ORDER.index(self)

    @property
    def blocks(self) -> bool:
        """Something will not run: the default gate exits 1 (opscan/assess/gate.py)."""
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
VERDICT_KINDS: dict[str, str] = {k.value: k.description for k in VerdictKind}


# The step a verdict answered for (records/report.py `Step`; NOTE [the step answered for] in
# opscan/assess/step.py).
_STEP_KINDS: dict[str, str] = {
    "project": "the project's own training step: its training command, run for one optimizer step",
    "stand-in": "opscan's stand-in step around a model it built (output summed, its optimizer): the "
                "project's loss, optimizer options, AMP and clipping were not traced",
    "none": "no step was traced",
}


class StepKind(StrEnum):
    """What step the ops of a verdict come from (STEP_KINDS says each)."""

    PROJECT = "project"
    STAND_IN = "stand-in"
    NONE = "none"

    @property
    def description(self) -> str:
        return _STEP_KINDS[self]

    @property
    def is_own(self) -> bool:
        """The project's own step: the only one a `ready` may rest on, unless configured otherwise."""
        return self is StepKind.PROJECT


STEP_KINDS: dict[str, str] = {k.value: k.description for k in StepKind}


# What a release says an op with no kernel does (its `no_kernel:` eager and compile behaviour;
# docs/coverage-db.md), as TorchCompile.no_kernel_compile holds it.
class NoKernel(StrEnum):
    """What an op with no kernel does on the backend: raises, runs on the CPU, or not known."""

    ERROR = "error"
    CPU_FALLBACK = "cpu-fallback"
    UNKNOWN = "unknown"


class Confidence(StrEnum):
    """How sure an op's coverage answer is (Coverage.confidence, a release file's `confidence:`),
    strongest first (docs/coverage-db.md)."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    def lower(self, steps: int = 1) -> Confidence:
        """One (or `steps`) level(s) lower; low stays low."""
        levels = list(Confidence)
        return levels[min(levels.index(self) + steps, len(levels) - 1)]


CONFIDENCES = tuple(c.value for c in Confidence)   # the words, strongest first


# Closed vocabulary of op caveats: release facts that apply to how a trace uses its ops (which
# dtypes), computed by opscan/db/caveats.py and carried in Report.caveats (docs/coverage-db.md).
class CaveatKind(StrEnum):
    """A kind of op caveat (OpCaveat.kind)."""

    KNOWN_FAILURE = "known-failure"
    KNOWN_FAILURE_CASE = "known-failure-case"
    FLOAT64_NARROWED = "float64-narrowed"
    INT64_NARROWED = "int64-narrowed"

    @property
    def description(self) -> str:
        return _CAVEAT_KINDS[self]


_CAVEAT_KINDS: dict[str, str] = {
    "known-failure": "the backend's own test lists record failing tests for this op with a dtype the trace uses",
    "known-failure-case": "the backend's own tests fail for this op in a special case (a test variant, or an op "
                          "that decomposes into it); the trace cannot tell whether the model hits that case",
    "float64-narrowed": "the backend computes float64 as float32 by default; the trace computes in float64",
    "int64-narrowed": "the backend computes int64 as int32 by default; the trace does int64 arithmetic "
                      "beyond indexing",
}

CAVEAT_KINDS: dict[str, str] = {k.value: k.description for k in CaveatKind}

class Phase(StrEnum):
    """The part of a step an op was dispatched in (OpUsage.phases), in the order a training step runs."""

    FORWARD = "forward"       # the model's forward (all of an inference trace)
    LOSS = "loss"             # the loss on the outputs (a transformers loss module's ops count here too)
    BACKWARD = "backward"     # the autograd backward of the loss
    OPTIMIZER = "optimizer"   # the optimizer's step


PHASES = tuple(p.value for p in Phase)   # the words, in step order (OpUsage.phases keeps this order)
