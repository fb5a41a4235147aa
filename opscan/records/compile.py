"""The records of torch.compile: regions and graph breaks, options judged, ops with no kernel, the
compile estimate and the forecast of compile signatures per step."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from opscan.records.ops import OpSource
from opscan.records.vocabulary import NoKernel, Severity, Status


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
    """torch.compile under TorchNeuron's rules (opscan/assess/compile_check.py): the regions with their
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


class CompileCause(StrEnum):
    """The cause of a shape that changes between steps, strongest first (opscan/trace/signatures.py
    CAUSES says each)."""

    DATA_DEPENDENT = "data-dependent"
    DATA = "data"
    NUMBER = "number"
    TAIL_BATCH = "tail-batch"
    FIRST_RUN = "first-run"


COMPILE_CAUSES = tuple(c.value for c in CompileCause)
