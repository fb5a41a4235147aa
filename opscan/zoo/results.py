"""Rows and the op x model matrix: a traced model judged against one coverage release (opscan/assess/assessment.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum

from opscan.records import (PHASES, Draft, Mode, VerdictKind, ModelTrace, NothingToCheck, Report, Status, status_of,
                            CompileCause)
from opscan.containment.outcome import Outcome, TraceStatus
from opscan.targets.hf import upstream
from opscan.zoo.selection import ZooTarget

# A model's verdict is the analysis verdict of its trace (opscan/assess/assessment.py, as `opscan PATH` and
# `opscan trace` judge it), without a source scan (a zoo model has no project source); "failed" is
# the zoo's own row state: nothing to judge. An incomplete trace is "unknown" (not proven) unless
# what it saw already blocks.
class RowVerdict(StrEnum):
    """A zoo row's verdict: a verdict kind of the analysis, or the zoo's own "failed"."""

    READY = VerdictKind.READY.value
    LIKELY = VerdictKind.LIKELY.value
    FALLBACK = VerdictKind.FALLBACK.value
    UNKNOWN = VerdictKind.UNKNOWN.value
    BLOCKED = VerdictKind.BLOCKED.value
    FAILED = "failed"

    @property
    def description(self) -> str:
        return "the model could not be built or traced (see error)" if self is RowVerdict.FAILED \
            else VerdictKind(self.value).description


VERDICTS: dict[str, str] = {k.value: k.description for k in RowVerdict}
VERDICT_ORDER = tuple(VERDICTS)
INFERENCE_ONLY = "I"
# Part of the row cache key: rows of an older format are judged again from their cached trace
# (2: rows carry the release caveats of the trace;
# 3: `blockers` lists only ops that cannot run; ops that may run on the CPU are `fallbacks`;
# 4: with their cost, `fallback_bytes`; 5: each op's status for the model's dtypes, `statuses`).
ROW_FORMAT = "5"

# NOTE [stop classes]
# Every row that is not `ok` carries the class of its stop (`Row.stop`), judged from structured
# data, never from message text, in this order: a known transformers bug of the default config
# (opscan/targets/hf/upstream.py: the row's error gains a one-line reproduction without opscan), a
# missing package (the build raised ImportError), a limit (timeout, memory cap, crash), stand-in
# values used before the stop (data-dependent control flow or shapes), else opscan's own gap
# (a bug or a missing feature to fix: every such row is one to look at).
class Stop(StrEnum):
    """The class of a row's stop (Row.stop; NOTE [stop classes])."""

    TRANSFORMERS_BUG = "transformers-bug"
    MISSING_PACKAGE = "missing-package"
    LIMIT = "limit"
    DATA_DEPENDENT = "data-dependent"
    OPSCAN = "opscan"

    @property
    def description(self) -> str:
        return _STOPS[self]


_STOPS: dict[str, str] = {
    "transformers-bug": "transformers itself fails on this default config (reproduction in the row)",
    "missing-package": "the model needs a package that is not installed",
    "limit": "the time or memory limit stopped it, or its process died (or sent an answer that is not valid data)",
    "data-dependent": "control flow or shapes depend on tensor values (the stop came after stand-in values)",
    "opscan": "none of the above: a gap in opscan (inputs it does not generate, a tracer bug, ...)",
}
STOPS: dict[str, str] = {k.value: k.description for k in Stop}


def keeps_from_running(status: str) -> bool:
    """An op that keeps its model from running as is: it cannot run on the device or the CPU
    (unsupported), or nobody has checked whether it can (unknown). Decided by the status's facts
    (records.OpStatus), as the row's `blockers` and the op ranking count them."""
    fact = status_of(status)
    return not (fact.runs_on_device or fact.may_fall_back)
# stage of a known transformers bug, by row status (opscan/targets/hf/upstream.py)
_STAGES = {TraceStatus.BUILD_ERROR: "build", TraceStatus.PARTIAL: "step", TraceStatus.TRACE_ERROR: "step"}


@dataclass(frozen=True)
class Row:
    """One model of a zoo run."""

    name: str
    target: str
    family: str
    status: str                                # jobs.OUTCOMES
    verdict: str                               # VERDICTS
    error: str = ""
    note: str = ""
    ops: int = 0                               # distinct ops
    counts: dict[str, int] = field(default_factory=dict)   # status -> number of ops
    blockers: tuple[str, ...] = ()             # ops that keep it from running: unsupported or of unknown status
                                               # (keeps_from_running; not the verdict's Blockers count), sorted
    custom_ops: tuple[str, ...] = ()
    stand_ins: tuple[str, ...] = ()            # "aten::nonzero dynamic-shape=upper bound 16 x2"
    op_cells: dict[str, str] = field(default_factory=dict) # op -> "F", "FB", "FBO", ... phases seen
    seconds: float = 0.0
    cached: bool = False
    stop: str = ""                             # STOPS: why a row is not ok ("" when it is)
    caveats: tuple[str, ...] = ()              # "KIND: op, op" of each release caveat (opscan/db/caveats.py)
    fallbacks: tuple[str, ...] = ()            # ops that run, but on (or maybe on) the CPU, sorted
    fallback_bytes: dict[str, int] = field(default_factory=dict)   # op -> host<->device bytes per step
    compiles: int | None = None                # compile signatures of the traced step (None: not known)
    new_compiles: int | None = None            # new compiles per later step (new_per_step; None: not known)
    statuses: dict[str, str] = field(default_factory=dict)   # op -> its status for this model (per dtype,
                                               # NOTE [dtypes after decomposition] in opscan/db/lookup.py)

    @property
    def native(self) -> int:
        """Ops whose status runs on the device (records.OpStatus.runs_on_device)."""
        return sum(n for s, n in self.counts.items() if status_of(s).runs_on_device)


@dataclass(frozen=True)
class OpStat:
    """One op across the zoo: how many models need it, on every training step or not, and its status."""

    op: str
    status: str
    models: tuple[str, ...]
    step_models: int          # models that dispatch it on every training step (not inference only)
    blocks: int               # models it keeps from running (it cannot run, or its status is unknown)
    bytes_per_step: int = 0   # may fall back: host<->device bytes per training step, in the model
                              # where it costs most (NOTE [fallback cost]); 0 when not measured


def _letters(phases: tuple[str, ...]) -> str:
    return "".join(p[0].upper() for p in PHASES if p in phases) or "-"


def _cell(usage, trace: ModelTrace) -> str:
    """Matrix cell: the phase letters (F, L, B, O) of a training step, or "I" for inference only."""
    train = Mode.TRAIN in usage.modes or (not usage.modes and trace.mode in (Mode.TRAIN, Mode.BOTH))
    return _letters(usage.phases) if train else INFERENCE_ONLY


def build_row(target: ZooTarget, outcome: Outcome | None, release, cached: bool = False) -> Row:
    """Judge one outcome against `release` (an opscan.db Release) with the one assessment."""
    base = {"name": target.name, "target": target.target, "family": target.family, "note": target.note}
    if outcome is None:  # could not even be prepared
        stop, error = classify(target, None, TraceStatus.BUILD_ERROR, target.error)
        return Row(**base, status=TraceStatus.BUILD_ERROR, verdict=RowVerdict.FAILED, error=error, stop=stop)
    stop, error = classify(target, outcome, outcome.status, outcome.error)
    if outcome.trace is None:
        return Row(**base, status=outcome.status, verdict=RowVerdict.FAILED, error=error,
                   seconds=outcome.seconds, cached=cached, stop=stop)
    trace = outcome.trace
    # what opscan did to finish the trace belongs to the row (see opscan/trace/fakes.py, runner.py)
    base["note"] = "; ".join(n for n in (target.note, *(f"fake kernel supplied by opscan for {op}"
                                                        for op in trace.supplied_fakes),
                                         f"traced with {trace.retried}" if trace.retried else "") if n)
    report = assess_trace(trace, release)
    statuses = {c.op: c.status for c in report.coverage}
    counts: dict[str, int] = {}
    cells = {}
    for usage in trace.ops:
        status = statuses.get(usage.op, Status.UNKNOWN)
        counts[status] = counts.get(status, 0) + 1
        cells[usage.op] = _cell(usage, trace)
    # the row's op lists are the verdict's (records.JudgedOps): its `blockers` are the ops that keep
    # the model from running as is (`keeps_from_running`: unsupported, or unknown), not the verdict's
    # Blockers count (which counts the unsupported ones only)
    judged = report.verdict.ops
    blockers, fallbacks = judged.unsupported + judged.unknown, judged.fallback + judged.maybe_fallback
    merged: dict[str, int] = {}   # one entry per op and value, over all source lines
    for s in trace.stand_ins:
        merged[f"{s.op} {s.kind}={s.value}"] = merged.get(f"{s.op} {s.kind}={s.value}", 0) + s.count
    stand_ins = tuple(f"{key} x{count}" for key, count in sorted(merged.items()))
    return Row(**base, status=outcome.status, verdict=report.verdict.kind, error=error, stop=stop,
               ops=len(trace.ops), counts=dict(sorted(counts.items())), blockers=tuple(sorted(blockers)),
               custom_ops=tuple(sorted(u.op for u in trace.ops if u.custom)), stand_ins=stand_ins,
               op_cells=dict(sorted(cells.items())), seconds=outcome.seconds, cached=cached,
               statuses={op: str(statuses.get(op, Status.UNKNOWN)) for op in sorted(cells)},
               caveats=tuple(f"{c.kind}: {', '.join(c.ops)}" for c in report.caveats),
               fallbacks=tuple(sorted(fallbacks)),
               fallback_bytes={f.op: f.bytes_per_step for f in report.fallbacks},
               compiles=len(trace.compile.steps[0].signatures) if trace.compile and trace.compile.steps else None,
               new_compiles=new_per_step(trace.compile))


def new_per_step(forecast) -> int | None:
    """New compiles per step after the first (the zoo's column; docs/zoo.md): the mean of the new
    signatures of the later steps run that are shape changes (not `first-run`), or, after one step,
    the signatures whose size a data-dependent op decides (each likely new every step); None
    without a forecast (an older cached row, an exported program)."""
    if forecast is None or not forecast.steps:
        return None
    later = [sum(1 for n in step.new if n.cause != CompileCause.FIRST_RUN) for step in forecast.steps[1:]]
    seen = round(sum(later) / len(later)) if later else 0
    return max(seen, forecast.likely_new)


def classify(target: ZooTarget, outcome: Outcome | None, status: str, error: str) -> tuple[str, str]:
    """(stop class, error) of a row (see NOTE [stop classes]); a known transformers bug extends the error."""
    status = TraceStatus(status)
    if status is TraceStatus.OK:
        return "", error
    if target.model_type:  # only default configs: a user's own config may fail for its own reasons
        bug = upstream.known(target.model_type, "config" if outcome is None else _STAGES.get(status, ""))
        if bug is not None:
            return Stop.TRANSFORMERS_BUG, f"{error}; {upstream.explain(bug)}"
    if outcome is not None and "ImportError" in outcome.error_types:
        return Stop.MISSING_PACKAGE, error
    if status.limit:
        return Stop.LIMIT, error
    if outcome is not None and outcome.trace is not None and outcome.trace.stand_ins:
        return Stop.DATA_DEPENDENT, error
    return Stop.OPSCAN, error


def assess_trace(trace: ModelTrace, release) -> Report:
    """The one assessment (opscan/assess/assessment.py) of one traced model against `release`: its coverage,
    caveats, tasks and verdict, as `opscan trace` gives them for the same model."""
    from opscan.assess import assess

    return assess(Draft(root="", tool_version="", traces=(trace,), source=NothingToCheck()), release)


def op_stats(rows: list[Row], release) -> list[OpStat]:
    """Every op met, ranked: ops that keep the most models from running first, then by use."""
    users: dict[str, list[str]] = {}
    steps: dict[str, int] = {}
    for row in rows:
        for op, cell in row.op_cells.items():
            users.setdefault(op, []).append(row.name)
            steps[op] = steps.get(op, 0) + (cell != INFERENCE_ONLY)
    stats = []
    for op, models in users.items():
        judged = [row.statuses[op] for row in rows if op in row.statuses]   # each model's, for its dtypes
        status = max(judged, key=lambda s: status_of(s).rank) if judged else release.status(op)
        step_count = steps[op]
        blocks = len(models) if keeps_from_running(status) else 0
        cost = max((row.fallback_bytes.get(op, 0) for row in rows), default=0)
        stats.append(OpStat(op, status, tuple(sorted(models)), step_count, blocks, cost))
    # then the worse status first (records.OpStatus.rank)
    return sorted(stats, key=lambda s: (-s.blocks, -s.step_models, -status_of(s.status).rank,
                                        -len(s.models), s.op))


def row_to_dict(row: Row) -> dict:
    """JSON-able row (also the row cache format)."""
    data = asdict(row)
    data["native"] = row.native
    return data


def row_from_dict(data: dict) -> Row:
    fields = {k: v for k, v in data.items() if k in Row.__dataclass_fields__}
    for key in ("blockers", "custom_ops", "stand_ins", "caveats", "fallbacks"):
        fields[key] = tuple(fields.get(key, ()))
    return Row(**fields)
