"""Shared views of a ZooRun for the renderers: summary counts, column values, short labels."""

from __future__ import annotations

from opscan.zoo.results import RUNS, VERDICT_ORDER, Row
from opscan.zoo.runner import ZooRun

SHORT = {"native": "N", "limited": "L", "composite": "C", "cpu-fallback": "F", "unsupported": "X",
         "unknown": "?"}


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


def fallback(row: Row) -> int:
    return row.counts.get("cpu-fallback", 0)


def headline(run: ZooRun) -> str:
    counts = verdict_counts(run)
    parts = ", ".join(f"{n} {verdict_label(v)}" for v, n in counts.items() if n)
    return f"{len(run.rows)} models against {run.meta.get('backend', '?')}: {parts}"


def explain(row: Row) -> str:
    """The row's one-line explanation: its error, else the ops that keep it from being ready."""
    if row.error:
        path = row.target[3:] if row.target.startswith("hf:") else ""
        return row.error.replace(f"{path}/config.json: ", "").replace(f"{path}/", "") if path else row.error
    if row.blockers:
        head = ", ".join(row.blockers[:4])
        return head + (f" (+{len(row.blockers) - 4} more)" if len(row.blockers) > 4 else "")
    return ""


def blocking_ops(run: ZooRun):
    """Ops that do not run natively, most models blocked first."""
    return [s for s in run.ops if s.status not in RUNS]


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
