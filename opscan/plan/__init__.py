"""Port tasks: grouping, sizing and ordering of the work.

`build_tasks(...)` turns findings and traced ops with their coverage into the ordered list of
`model.Task`: grouped by fix (grouping), sized by the cost model (sizing), ordered as a dependency
graph whose edges carry their reasons (ordering). It reads no files: kernel sources and library use
are measured beforehand (plan.measure.kernel_sources, plan.measure.usage).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from opscan.plan.cost import CostConfig
from opscan.records import Coverage, Fallback, Finding, Location, ModelTrace, OpUsage, Task
from opscan.plan import grouping, libraries, ordering, sizing, task_kinds, torch_move
from opscan.plan.measure import Usage

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
    if draft.blocking_sites:   # the headline's CUDA-pinned sites are the sum of these (NOTE [sites])
        where += f", {draft.blocking_sites} blocking"
    ops = [u.op for u in draft.ops]
    shown = ", ".join(f"`{op}`" for op in ops[:3]) + (f" and {len(ops) - 3} more" if len(ops) > 3 else "")
    n_ops = f"{len(ops)} op{'s' * (len(ops) != 1)}"
    if draft.kind is task_kinds.TORCH_VERSION_KIND:   # NOTE [torch move]
        return torch_move.title(draft.findings, where)
    return draft.kind.title.format(sites=where, name=draft.name, count=len(ops), n_ops=n_ops, ops=shown)


def _text(draft: grouping.Draft, book: libraries.Catalog,
          fallbacks: Mapping[str, Fallback]) -> tuple[str, str, tuple[str, ...]]:
    """(action, why, sources) of a task: from its catalog entry or kernel family where one exists."""
    kind = draft.kind
    if kind is task_kinds.LIBRARY_KIND:
        entry = book.library(draft.name)
        if entry is not None:
            return entry.replacement, entry.why, tuple(dict.fromkeys((*entry.sources, *kind.sources)))
        if draft.known is not None:   # NOTE [library ops] in opscan/assess/library_ops.py
            return library_ops_text(draft, draft.known)
        return kind.action, f"no catalog entry for `{draft.name}`; {kind.why}", kind.sources
    if kind is task_kinds.KERNEL_KIND:
        family = sizing.family_of(draft, book)
        if family is not None:
            return family.replacement, family.why, family.sources
    if kind is task_kinds.TORCH_VERSION_KIND:   # what moves with torch, and the install lines (NOTE [torch move])
        action, extra = torch_move.action(kind.action, draft.findings)
        return action, kind.why, tuple(dict.fromkeys((*kind.sources, *extra)))
    why = kind.why
    if kind in (task_kinds.FALLBACK_KIND, task_kinds.MAYBE_FALLBACK_KIND):   # NOTE [fallback cost] in records.py
        costs = [fallbacks[u.op] for u in draft.ops if u.op in fallbacks]
        if costs:   # the costs of assess.fallback_costs, scaled back to the real model where shrunk
            moved, calls = sum(f.bytes_per_step for f in costs), sum(f.syncs_per_step for f in costs)
            how = "; ".join(sorted({f.scaled_by for f in costs if f.scaled_by}))
            where = f"scaled back to the real model ({how})" if how else "at the traced shapes"
        else:
            moved, calls = sum(u.step_bytes for u in draft.ops), sum(u.step_calls for u in draft.ops)
            where = "at the traced shapes"
        if moved:
            why += (f"; {where} they would copy {moved / 1e6:.1f} MB between host and device per "
                    f"training step, with {calls} sync{'s' * (calls != 1)}")
    if kind is task_kinds.FALLBACK_KIND:
        advice = [f"`{u.op}`: {task_kinds.OP_ADVICE[u.op.split('.')[0]]}" for u in draft.ops
                  if u.op.split(".")[0] in task_kinds.OP_ADVICE]
        if advice:
            return "; ".join(advice) + "; otherwise " + kind.action, why, kind.sources
    return kind.action, why, kind.sources


def library_ops_text(draft: grouping.Draft, known: grouping.KnownLibrary) -> tuple[str, str, tuple[str, ...]]:
    """(action, why, sources) of a task made from a known library's own ops (NOTE [library ops])."""
    names = [u.op for u in draft.ops] or [f"torch.ops.{known.package}.*"]   # the calls the source makes
    ops = ", ".join(f"`{op}`" for op in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    build = known.builds or f"the {known.package} build made for the release's torch"
    action = (f"install {build}, then check {known.package}'s ops on a Trainium instance (`opscan db probe "
              f"--import {known.package}`); where one does not run there, use the library's PyTorch path or "
              "ask its maintainers")
    why = (f"{ops} {'is' if len(names) == 1 else 'are'} {known.package}'s own "
           f"op{'s' * (len(names) != 1)}, not the model's: its build decides whether they run on the device, "
           "and no Neuron kernel is listed for them (status unknown)")
    return action, why, tuple(filter(None, (known.source,)))


def _priority(draft: grouping.Draft) -> int:
    if draft.blocking:
        return 1
    return 2 if draft.kind.every_step else 3


def build_tasks(findings: tuple[Finding, ...], traces: tuple[ModelTrace, ...],
                coverage: tuple[Coverage, ...], cost: CostConfig | None = None,
                kernel_sources: Mapping[Location, tuple[tuple[str, int], ...]] | None = None,
                usage: Usage | None = None, fallbacks: tuple[Fallback, ...] = (),
                known: Mapping[str, grouping.KnownLibrary] | None = None) -> tuple[Task, ...]:
    """The port tasks for one report, in dependency order (NOTE [task edges] in plan/ordering.py),
    each sized as a range (NOTE [effort model] in plan/sizing.py); `fallbacks`: the ops' CPU
    fallback costs (opscan.assess.fallback_costs), which the fallback tasks state; `known`: the
    custom ops of known libraries (op -> library), each that library's task, not a kernel's."""
    cost = cost or CostConfig()
    usage = usage or Usage()
    book = libraries.shipped()
    by_op = {c.op: c for c in coverage}
    drafts = grouping.group(findings, _merged_ops(traces), by_op, kernel_sources or {}, known)
    static = grouping.static_shapes(traces)
    if static is not None:
        drafts.append(static)
    upgrade = any(d.kind is task_kinds.TORCH_VERSION_KIND and torch_move.upgrade(d.findings) for d in drafts)
    deps = ordering.dependencies({d.id: d.kind.id for d in drafts}, upgrade=upgrade)
    tasks = []
    for draft in drafts:
        estimate = sizing.size(draft, cost, usage, book)
        action, why, sources = _text(draft, book, {f.op: f for f in fallbacks})
        tasks.append(Task(
            id=draft.id, title=_title(draft), action=action, why=why,
            sources=sources, sites=draft.sites, ops=tuple(u.op for u in draft.ops),
            effort_hours=estimate.likely, effort_basis=estimate.basis, priority=_priority(draft),
            depends_on=tuple(d for d, _ in deps[draft.id]),
            depends_reasons=tuple(r for _, r in deps[draft.id]),
            effort_low_hours=estimate.low, effort_high_hours=estimate.high, sized=estimate.sized,
            kind=draft.kind.id, subject=draft.subject, blocking_sites=draft.blocking_sites,
        ))
    return ordering.order(tasks, {d.id: d.kind.stage for d in drafts})


def total_days(tasks: tuple[Task, ...], hours_per_day: float = 8.0) -> float:
    """Total effort in engineer-days."""
    return round(sum(t.effort_hours for t in tasks) / hours_per_day, 1)
