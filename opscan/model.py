"""The data opscan passes between its phases: frozen dataclasses only, importing nothing of opscan.

Analysis (scan, trace, db, plan) produces these; reporters only read them. Every tuple field is
kept sorted by its producer so that the same input gives the same bytes out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SEVERITIES: dict[str, str] = {
    "error": "blocks the port: the code will not run, or will run on the wrong device",
    "warning": "runs, but slower, differently, or only with a manual step",
    "note": "worth knowing; no change strictly needed",
}

CATEGORIES: dict[str, str] = {
    "device-string": "a hard-coded device choice (\"cuda\", \"cuda:0\", ...)",
    "cuda-api": "a CUDA-only API or setting (torch.cuda.*, cudnn, NCCL, CUDA env vars, ...)",
    "custom-kernel": "code that defines, builds, loads or calls a custom kernel",
    "cuda-only-lib": "an import of a library that only runs on CUDA",
    "input": "a file opscan could not read or parse, or a problem in opscan's own run",
}

# Closed vocabulary of op support statuses (see coverage_db/README.md).
STATUSES: dict[str, str] = {
    "native": "the backend has its own kernel for this op",
    "composite": "decomposes before reaching the backend; judged by the ops it expands into",
    "limited": "has a kernel, with conditions on dtypes or arguments",
    "cpu-fallback": "no kernel: runs on the CPU, copying tensors to the host and back",
    "unsupported": "raises an error on the backend",
    "unknown": "nobody has checked",
}

EVIDENCE_KINDS: dict[str, str] = {
    "documented": "stated in the backend's published documentation (URL and date)",
    "probed": "read from the dispatcher of a real install (which install, when)",
    "source-snapshot": "found in a snapshot of the backend's source (repository and commit)",
    "inferred": "derived by opscan from other facts (the derivation is stated)",
}

PHASES = ("forward", "loss", "backward", "optimizer")

_OP_NAME = re.compile(r"^(?P<ns>[A-Za-z_][A-Za-z0-9_]*)::(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:\.(?P<overload>[A-Za-z_][A-Za-z0-9_]*))?$")


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


@dataclass(frozen=True)
class Finding:
    """One place in the source that pins the code to CUDA (or a file opscan could not read)."""

    rule: str            # stable code, e.g. "OPS101"
    name: str            # kebab-case rule name, e.g. "hardcoded-cuda-device"
    category: str        # one of CATEGORIES
    severity: str        # one of SEVERITIES
    message: str
    location: Location
    fix: str = ""        # the concrete TorchNeuron fix
    guarded: bool = False  # inside `if torch.cuda.is_available():` or similar
    snippet: str = ""    # the source line, stripped of its newline

    def sort_key(self) -> tuple:
        loc = self.location
        return (loc.path, loc.cell or 0, loc.line, loc.column, self.rule, self.message)


@dataclass(frozen=True, order=True)
class OpSource:
    """Where an op was dispatched from: the first frame in the user's code and the module path."""

    path: str
    line: int
    module: str = ""     # e.g. "model.layers.3.mlp.down_proj"; "" outside any module


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


@dataclass(frozen=True)
class Coverage:
    """The answer to "will this op run on the backend?" for one op and one release."""

    op: str
    status: str                          # one of STATUSES
    evidence: tuple[Evidence, ...] = ()
    confidence: str = "low"              # "high" | "medium" | "low"
    via: str = ""                        # how the answer was found, e.g. "overload packet aten::add"
    parts: tuple[str, ...] = ()          # for composite: the ops it expands into

    def label(self) -> str:
        """The status with its first evidence, as reports show it: "native (probed on torch-neuronx 2.14.3.0)"."""
        return f"{self.status} ({self.evidence[0].text})" if self.evidence else self.status


@dataclass(frozen=True)
class DeviceProfile:
    """What a backend looks like to the trace: the ops it implements itself and its SDPA choice."""

    name: str                            # e.g. "torchneuron==2.33.0"
    device: str = "neuron"
    native_ops: tuple[str, ...] = ()     # the trace stops at these instead of their decompositions
    sdpa_policy: str = "math"            # which SDPA kernel the backend picks


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


@dataclass(frozen=True)
class Task:
    """One piece of port work a lead can schedule."""

    id: str                              # stable, e.g. "device-agnostic"
    title: str
    action: str                          # what to do
    why: str                             # the TorchNeuron fact behind it
    sources: tuple[str, ...] = ()        # URLs of the facts
    sites: tuple[Location, ...] = ()
    ops: tuple[str, ...] = ()
    effort_hours: float = 0.0
    effort_basis: str = ""               # how the estimate was computed
    priority: int = 3                    # 1 blocker, 2 every step, 3 one-off
    depends_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuleInfo:
    """What reporters may say about a rule that fired (SARIF rule list, help text)."""

    id: str                              # e.g. "OPS101"
    name: str                            # e.g. "hardcoded-cuda-device"
    severity: str                        # default level, one of SEVERITIES
    category: str = ""
    what: str = ""                       # one paragraph: what it flags
    why: str = ""                        # why it matters on TorchNeuron
    fix: str = ""                        # how to fix it
    help_uri: str = ""


@dataclass(frozen=True)
class BaselineStatus:
    """How a run's findings compared with a baseline file (only new findings stay in the Report)."""

    path: str
    known: int = 0                       # findings the baseline hides
    stale: tuple[str, ...] = ()          # entries that match nothing any more: "path:line: RULE message"


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
