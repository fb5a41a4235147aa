"""Port tasks: grouping, sizing and ordering of the work.

`build_tasks(...)` turns findings and traced ops with their coverage into the ordered list of
`model.Task`: grouped by fix (grouping), sized by the cost model (sizing), ordered as a dependency
graph (ordering). It reads no files; kernel sources are measured beforehand (plan.measure.kernel_sources).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from opscan.config import CostConfig
from opscan.model import Coverage, Finding, Location, ModelTrace, OpUsage, Task
from opscan.plan import catalog, grouping, ordering, sizing

__all__ = ["build_tasks", "total_days"]


def _merged_ops(traces: tuple[ModelTrace, ...]) -> list[OpUsage]:
    """One OpUsage per op name over all traces (sources and counts summed), sorted by name."""
    merged: dict[str, OpUsage] = {}
    for trace in traces:
        for usage in trace.ops:
            prev = merged.get(usage.op)
            if prev is not None:
                usage = replace(prev, count=prev.count + usage.count,
                                sources=tuple(sorted(set(prev.sources) | set(usage.sources))),
                                custom=prev.custom or usage.custom)
            merged[usage.op] = usage
    return [merged[name] for name in sorted(merged)]


def _title(draft: grouping.Draft) -> str:
    sites, files = len(draft.sites), len(draft.files)
    where = f"{sites} site{'s' * (sites != 1)} in {files} file{'s' * (files != 1)}"
    ops = [u.op for u in draft.ops]
    shown = ", ".join(f"`{op}`" for op in ops[:3]) + (f" and {len(ops) - 3} more" if len(ops) > 3 else "")
    n_ops = f"{len(ops)} op{'s' * (len(ops) != 1)}"
    text = draft.kind.title.format(sites=where, name=draft.name, count=len(ops), n_ops=n_ops, ops=shown)
    return text


def _action(draft: grouping.Draft) -> str:
    if draft.kind is catalog.FALLBACK_KIND:
        advice = [f"`{u.op}`: {catalog.OP_ADVICE[u.op.split('.')[0]]}" for u in draft.ops
                  if u.op.split(".")[0] in catalog.OP_ADVICE]
        if advice:
            return "; ".join(advice) + "; otherwise " + draft.kind.action
    return draft.kind.action


def _priority(draft: grouping.Draft) -> int:
    if draft.blocking:
        return 1
    return 2 if draft.kind.every_step else 3


def build_tasks(findings: tuple[Finding, ...], traces: tuple[ModelTrace, ...],
                coverage: tuple[Coverage, ...], cost: CostConfig | None = None,
                kernel_sources: Mapping[Location, tuple[tuple[str, int], ...]] | None = None) -> tuple[Task, ...]:
    """The port tasks for one report, in dependency order (see NOTE [task stages])."""
    cost = cost or CostConfig()
    by_op = {c.op: c for c in coverage}
    drafts = grouping.group(findings, _merged_ops(traces), by_op, kernel_sources or {})
    stage_of = {d.id: d.kind.stage for d in drafts}
    deps = ordering.dependencies(stage_of)
    tasks = []
    for draft in drafts:
        hours, basis = sizing.size(draft, cost)
        tasks.append(Task(
            id=draft.id, title=_title(draft), action=_action(draft), why=draft.kind.why,
            sources=draft.kind.sources, sites=draft.sites, ops=tuple(u.op for u in draft.ops),
            effort_hours=hours, effort_basis=basis, priority=_priority(draft),
            depends_on=deps[draft.id],
        ))
    return ordering.order(tasks, stage_of)


def total_days(tasks: tuple[Task, ...], hours_per_day: float = 8.0) -> float:
    """Total effort in engineer-days."""
    return round(sum(t.effort_hours for t in tasks) / hours_per_day, 1)
