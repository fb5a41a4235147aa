"""The records of the assessment: tasks, caveats and notes, blockers, the verdict, what was checked,
the Draft a run hands in and the finished Report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from opscan.records.compile import CompileEstimate, TorchCompile
from opscan.records.findings import BaselineStatus, Finding, Location, RuleInfo
from opscan.records.ops import Coverage, Evidence, Fallback, OpSource
from opscan.records.trace import Discovery, ModelTrace, TrainingEntry, merge_containment
from opscan.records.vocabulary import CaveatKind, Status, StepKind, TaskKind, VerdictKind


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
                                         # blockers are sites (not kernel, library): NOTE [sites] in assess/verdict.py

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
class OpCaveat:
    """A release fact that applies to how the trace uses some ops (opscan/db/caveats.py)."""

    kind: CaveatKind                     # one of CAVEAT_KINDS
    message: str                         # one line: what happens and to which ops
    ops: tuple[str, ...]                 # the traced ops it applies to, sorted
    dtypes: tuple[str, ...] = ()         # the traced dtypes involved, e.g. ("torch.float64",)
    sources: tuple[OpSource, ...] = ()   # where the trace dispatched those ops (model source lines)
    evidence: tuple[Evidence, ...] = ()  # the release facts behind it
    tests: tuple[str, ...] = ()          # known-failure: the failing upstream test methods

    def __post_init__(self) -> None:   # NOTE [typed vocabularies]
        object.__setattr__(self, "kind", CaveatKind(self.kind))


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
    """What blocks the port, counted once by the analysis (NOTE [blockers] in opscan/assess/verdict.py):
    the headline, the gate line, the summary, the JSON verdict and the preflight all read this (their
    words: opscan/reporters/texts.py `blockers_words`)."""

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
class Step:
    """The training step a verdict answered for (NOTE [the step answered for] in opscan/assess/step.py):
    the project's own (its training command, run) or opscan's stand-in around a model it built."""

    kind: StepKind                       # one of STEP_KINDS
    text: str                            # the sentence every format shows: "the training step of `python train.py`"
    command: str = ""                    # the command whose step was traced ("" for a stand-in)
    why: str = ""                        # a stand-in: why the project's own step was not traced
    accepted: bool = False               # a stand-in the configuration says is right (`stand-in-step = "accept"`)

    def __post_init__(self) -> None:   # NOTE [typed vocabularies]
        object.__setattr__(self, "kind", StepKind(self.kind))


@dataclass(frozen=True)
class Verdict:
    """The one-line answer of a run, computed once by the analysis (opscan/assess/verdict.py)."""

    kind: VerdictKind                    # one of VERDICT_KINDS
    headline: str                        # the line users read first
    details: tuple[str, ...] = ()        # every line under the headline: first what was not checked
                                         # (`not_checked`), then the caveats (`caveats`)
    source_checked: bool = False         # the source scan ran
    ops_checked: bool = False            # at least one model was traced and its ops looked up
    blockers: Blockers = field(default_factory=Blockers)   # what blocks (zero unless kind is "blocked")
    unchecked: tuple[str, ...] = ()      # models opscan was given but could not check, one line each
                                         # ("TARGET: why"): the gate exits 2 on them (opscan/assess/gate.py)
    remedy: str = ""                     # the one remedy line for models that missed modules not
                                         # installed here (the manifest found, --allow-unchecked); "" = none
    ops: JudgedOps = field(default_factory=JudgedOps)   # the traced ops by status, as judged
    source_only: bool = False            # the run asked for the source alone (--no-trace, `opscan scan`,
                                         # the hook): `--fail-on not-ready` judges its source verdict
    step: Step | None = None             # the step the ops come from (None: no step is judged, as in the zoo)
    not_checked: tuple[str, ...] = ()    # the first lines of `details`: what the answer does not cover
                                         # (a model not built, ops or source not checked, a trace cut short)

    def __post_init__(self) -> None:   # NOTE [typed vocabularies]
        object.__setattr__(self, "kind", VerdictKind(self.kind))
        if self.details[:len(self.not_checked)] != self.not_checked:
            raise ValueError("Verdict.not_checked must be the first lines of Verdict.details")

    @property
    def caveats(self) -> tuple[str, ...]:
        """The lines of `details` after what was not checked: what the answer rests on."""
        return self.details[len(self.not_checked):]


# NOTE [checked or not]: whether a part of the answer (the project's source) was checked is one of
# three facts, each its own type, read by the verdict (opscan/assess/verdict.py): `Checked` (it was),
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
    a `Report` (coverage, caveats, tasks, verdict). Every caller of `assess` (opscan/pipeline/analyse.py,
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
    source_only: bool = False            # the run asked for the source alone (no trace was asked for)
    step: Step | None = None             # the step the traces answer for (None: not judged, as in the zoo)
    entries: tuple[TrainingEntry, ...] = ()   # the training commands found, best first (the one run first)


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
    entries: tuple[TrainingEntry, ...] = ()   # the training commands found by reading, best first

    @property
    def containment(self) -> tuple[tuple[str, str], ...]:
        """Which parts of the containment held over every contained child of the run: a part holds
        when it held in each (else the first reason it did not); () when no child was contained."""
        return merge_containment(t.containment for t in self.traces)

    @property
    def blockers(self) -> Blockers:
        """The verdict's blocking count (NOTE [blockers] in opscan/assess/verdict.py); none without a verdict."""
        return self.verdict.blockers if self.verdict is not None else Blockers()

    @property
    def sites(self) -> int:
        """The sites of the port-task list (NOTE [sites] in opscan/assess/verdict.py): the one sum the
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
