"""Shared views of a ZooRun for the renderers: summary counts, column values, short labels."""

from __future__ import annotations

from opscan.records import OP_STATUSES, status_of, Target, TargetKind
from opscan.zoo.results import STOPS, VERDICT_ORDER, Row, Stop
from opscan.zoo.execution import ZooRun
from opscan.containment.outcome import TraceStatus

SHORT = {s.name: s.short for s in OP_STATUSES}   # one-letter status labels of the matrix (model.OpStatus)


# Only "ready" reads as good: "likely" rests on unverified evidence (pre-release source) and says so.
LABELS = {"likely": "likely (unverified)"}


def verdict_label(verdict: str) -> str:
    """A row's verdict as shown: "likely" carries its caution."""
    return LABELS.get(verdict, verdict)


def verdict_counts(run: ZooRun) -> dict[str, int]:
    counts = {v: 0 for v in VERDICT_ORDER}
    for row in run.rows:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1   # older files may hold other words
    return counts


FALLBACK_STATUSES = tuple(s.name for s in OP_STATUSES if s.may_fall_back)


def new_compiles(row: Row) -> str:
    """The "new compiles per step" cell: `0`, `~N` (a data-dependent size: N signatures likely new
    every step), `-` when the row has no forecast (docs/zoo.md)."""
    if row.new_compiles is None:
        return "-"
    return f"~{row.new_compiles}" if row.new_compiles else "0"


def fallback(row: Row) -> int:
    """Ops of the row that run on the CPU or may (cpu-fallback, device-or-cpu)."""
    return sum(row.counts.get(s, 0) for s in FALLBACK_STATUSES)


def cost_basis(run: ZooRun) -> str:
    """What the MB/step figures stand for: scaled back to each model's real layer count when the
    run cut layers (`--layers`; NOTE [fallback scaling] in opscan/assess/assessment.py), else as traced."""
    layers = run.meta.get("layers")
    if layers:
        return (f"scaled back from the {layers} traced layers to each model's real layer count (calls and "
                "bytes inside the repeated layers, and their weights' gradients and optimizer states); at "
                "the traced batch and sequence length")
    return "at the traced shapes"


STOP_LABELS = {Stop.TRANSFORMERS_BUG: "transformers bug", Stop.MISSING_PACKAGE: "missing package",
               Stop.LIMIT: "limit", Stop.DATA_DEPENDENT: "data-dependent", Stop.OPSCAN: "opscan gap"}


def stop_counts(run: ZooRun) -> dict[str, int]:
    """Rows that are not ok, per stop class (opscan/zoo/results.py, NOTE [stop classes])."""
    counts = {s: 0 for s in STOPS}
    for row in run.rows:
        if row.status != TraceStatus.OK:
            stop = row.stop or Stop.OPSCAN    # files written before stop classes existed
            counts[stop] = counts.get(stop, 0) + 1
    return counts


def headline(run: ZooRun) -> str:
    counts = verdict_counts(run)
    parts = ", ".join(f"{n} {verdict_label(v)}" for v, n in counts.items() if n)
    total = len(run.rows)
    ok = sum(row.status == TraceStatus.OK for row in run.rows)
    share = f"{100 * ok / total:.1f}%" if total else "-"
    stops = ", ".join(f"{n} {STOP_LABELS.get(s, s)}" for s, n in stop_counts(run).items() if n)
    return (f"{total} models against {run.meta.get('backend', '?')}: {parts}; "
            f"{ok} traced completely ({share})" + (f", the others stopped by: {stops}" if stops else ""))


def explain(row: Row) -> str:
    """The row's one-line explanation: its error, else the ops that keep it from being ready."""
    if row.error:
        target = Target.of(row.target)
        path = target.spec if target is not None and target.kind is TargetKind.HF else ""
        text = row.error.replace(f"{path}/config.json: ", "").replace(f"{path}/", "") if path else row.error
        return f"[{STOP_LABELS.get(row.stop, row.stop)}] {text}" if row.stop else text
    if row.blockers:
        return _first(row.blockers)
    if row.fallbacks:
        return "may run on the CPU: " + _first(row.fallbacks)
    return ""


def _first(ops: tuple[str, ...], shown: int = 4) -> str:
    return ", ".join(ops[:shown]) + (f" (+{len(ops) - shown} more)" if len(ops) > shown else "")


def megabytes(count: int) -> str:
    """Bytes as MB with one decimal ("-" when not measured)."""
    return f"{count / 1e6:.1f}" if count else "-"


def blocking_ops(run: ZooRun):
    """Ops that cannot run (unsupported) or of unknown status, most models blocked first."""
    return [s for s in run.ops if not status_of(s.status).runs_on_device and not status_of(s.status).may_fall_back]


def fallback_ops(run: ZooRun):
    """Ops that run on the CPU or may (cpu-fallback, device-or-cpu), most costly first: by the
    bytes they move per training step over the models (NOTE [fallback cost]), then by models."""
    ops = [s for s in run.ops if status_of(s.status).may_fall_back]
    return sorted(ops, key=lambda s: (-s.bytes_per_step, -s.step_models, -len(s.models), s.op))


def matrix_ops(run: ZooRun, limit: int | None = None) -> list[str]:
    """Columns of the op x model matrix: blocking ops first, then the most used."""
    ops = [s.op for s in run.ops]
    return ops[:limit] if limit else ops


def cell(row: Row, op: str, status: str) -> str:
    """Matrix cell: empty if the model does not use the op, else status letter + phases."""
    phases = row.op_cells.get(op)
    if phases is None:
        return ""
    return f"{SHORT.get(status, '?')} {phases}"
