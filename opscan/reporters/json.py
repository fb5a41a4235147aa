"""JSON report: the stable, documented machine contract (schema_version 2; see docs/json.md)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from typing import TextIO

from opscan.records import (
    CATEGORIES,
    PHASES,
    SEVERITIES,
    STATUSES,
    Blockers,
    Coverage,
    Evidence,
    Finding,
    ModelTrace,
    OpSource,
    OpUsage,
    Report,
    Step,
    Task,
    TrainStep,
)

SCHEMA_VERSION = 2   # 2: `verdict` (kind, headline, details, checked), `summary.sites`, `baseline.new`


def _finding(finding: Finding) -> dict:
    loc = finding.location
    out = {
        "rule": finding.rule,
        "name": finding.name,
        "category": finding.category,
        "severity": finding.severity,
        "message": finding.message,
        "path": loc.path,
        "line": loc.line,
        "column": loc.column,
        "end_line": loc.end_line or loc.line,
        "end_column": loc.end_column or loc.column,
        "fix": finding.fix,
        "guarded": finding.guarded,
        "task": finding.task,
        "subject": finding.subject,
        "fixable": finding.fixable,      # `opscan fix` rewrites it (docs/fix.md)
    }
    if loc.cell is not None:
        out["cell"] = loc.cell
    return out


def _source(source: OpSource) -> dict:
    return {"path": source.path, "line": source.line, "module": source.module}


def evidence_json(evidence: Evidence) -> dict:
    """The evidence's fields that are set (`compared` only when true: a probe that ran the op)."""
    return {k: v for k, v in asdict(evidence).items() if v is not None and not (k == "compared" and not v)}


def merge_ops(traces: tuple[ModelTrace, ...]) -> list[tuple[OpUsage, tuple[str, ...]]]:
    """Merge the ops of several traces: one OpUsage per op name, with the targets that use it."""
    merged: dict[str, OpUsage] = {}
    models: dict[str, set[str]] = {}
    for trace in traces:
        for usage in trace.ops:
            models.setdefault(usage.op, set()).add(trace.target)
            prev = merged.get(usage.op)
            if prev is None:
                merged[usage.op] = usage
                continue
            merged[usage.op] = OpUsage(
                op=usage.op,
                count=prev.count + usage.count,
                phases=tuple(p for p in PHASES
                             if p in prev.phases or p in usage.phases),
                dtypes=tuple(sorted(set(prev.dtypes) | set(usage.dtypes))),
                sources=tuple(sorted(set(prev.sources) | set(usage.sources))),
                modes=tuple(sorted(set(prev.modes) | set(usage.modes))),
                custom=prev.custom or usage.custom,
                step_calls=prev.step_calls + usage.step_calls,
                step_bytes=prev.step_bytes + usage.step_bytes,
            )
    return [(merged[name], tuple(sorted(models[name]))) for name in sorted(merged)]


def _op(usage: OpUsage, models: tuple[str, ...], coverage: Coverage | None) -> dict:
    out = {
        "op": usage.op,
        "count": usage.count,
        "phases": list(usage.phases),
        "dtypes": list(usage.dtypes),
        "modes": list(usage.modes),
        "custom": usage.custom,
        "models": list(models),
        "sources": [_source(s) for s in usage.sources],
    }
    if coverage is not None:
        out["status"] = coverage.status
        out["confidence"] = coverage.confidence
        out["via"] = coverage.via
        out["parts"] = list(coverage.parts)
        out["evidence"] = [evidence_json(e) for e in coverage.evidence]
    return out


def _with_cost(op: dict, cost) -> dict:
    """An op entry with its `fallback` cost per training step when it runs, or may run, on the CPU."""
    if cost is not None:
        op["fallback"] = {"bytes_per_step": cost.bytes_per_step, "syncs_per_step": cost.syncs_per_step,
                          "calls_per_step": cost.calls_per_step,
                          "traced": {"bytes_per_step": cost.traced_bytes, "syncs_per_step": cost.traced_syncs,
                                     "calls_per_step": cost.traced_calls},
                          "scaled_by": cost.scaled_by}
    return op


def _trace(trace: ModelTrace) -> dict:
    return {
        "target": trace.target,
        "mode": trace.mode,
        "device": trace.device,
        "complete": trace.complete,
        "stopped_at": trace.stopped_at,
        "stop_hint": trace.stop_hint,
        "distinct_ops": len(trace.ops),
        "stand_ins": [
            {"op": s.op, "kind": s.kind, "value": s.value, "count": s.count,
             "source": _source(s.source) if s.source else None}
            for s in trace.stand_ins
        ],
        "supplied_fakes": list(trace.supplied_fakes),
        "retried": trace.retried,
        "shrink": None if trace.shrink is None else asdict(trace.shrink),
        **({"built_by": trace.built_by} if trace.built_by else {}),
        **({"containment": dict(trace.containment)} if trace.containment else {}),
        **({"steps": trace.steps} if trace.steps is not None else {}),   # `opscan run` only
        **({"step": _train_step(trace.step)} if trace.step is not None else {}),
        **({"replaced": [{"kind": r.kind, "subject": r.subject, "detail": r.detail, "path": r.path, "line": r.line}
                         for r in trace.replaced]} if trace.replaced else {}),   # stand-ins of a run (docs/run.md)
    }


def _train_step(step: TrainStep) -> dict:
    """The training step a train-mode trace ran: its script ("" = none read) and each part with its source."""
    return {"script": step.script, "own": step.own, "backward": step.backward,
            "parts": [{"part": p.part, "name": p.name, "detail": p.detail, "source": p.source,
                       "applied": p.applied} for p in step.parts]}


def _task(task: Task) -> dict:
    return {
        "id": task.id,
        "kind": task.kind,
        "subject": task.subject,
        "title": task.title,
        "action": task.action,
        "why": task.why,
        "sources": list(task.sources),
        "priority": task.priority,
        "effort_hours": task.effort_hours,
        "effort_low_hours": task.effort_range[0],
        "effort_high_hours": task.effort_range[2],
        "sized": task.sized,
        "effort_basis": task.effort_basis,
        "depends_on": list(task.depends_on),
        "depends_reasons": [task.reason_for(dep) for dep in task.depends_on],
        "ops": list(task.ops),
        "blocking_sites": task.blocking_sites,   # NOTE [sites] in opscan/assess/verdict.py
        "sites": [
            {"path": s.path, "line": s.line, "column": s.column, **({"cell": s.cell} if s.cell else {}),
             **({"cause": s.cause} if s.cause else {})}   # NOTE [sites the user can change]
            for s in task.sites
        ],
    }


def summary(report: Report) -> dict:
    """Counts shown by every reporter: findings by category and severity, ops by status, effort."""
    by_category = Counter(f.category for f in report.findings)
    by_severity = Counter(f.severity for f in report.findings)
    by_status = Counter(c.status for c in report.coverage)
    ops = merge_ops(report.traces)
    totals = report.effort
    out = {
        "files_scanned": report.files_scanned,
        "findings": len(report.findings),
        "by_category": {k: by_category.get(k, 0) for k in CATEGORIES},
        "by_severity": {k: by_severity.get(k, 0) for k in SEVERITIES},
        "ops": len(ops),
        "by_status": {k: by_status.get(k, 0) for k in STATUSES},
        "custom_ops": sum(1 for usage, _ in ops if usage.custom),
        "tasks": len(report.tasks),
        "sites": report.sites,                           # NOTE [sites] in opscan/assess/verdict.py
        "blockers": report.blockers.count,               # NOTE [blockers] in opscan/assess/verdict.py
        "fixable": report.fixable,                       # what `opscan fix` rewrites (docs/fix.md)
        "effort_hours": totals.likely_hours,
        "effort_days": round(totals.days(totals.likely_hours), 2),
        "effort_low_hours": totals.low_hours,
        "effort_high_hours": totals.high_hours,
        "unsized_tasks": list(totals.unsized),
    }
    return out


def to_dict(report: Report) -> dict:
    """The report as the JSON document's dict (key order is part of the contract)."""
    coverage = {c.op: c for c in report.coverage}
    costs = {f.op: f for f in report.fallbacks}
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "opscan", "version": report.tool_version},
        "backend": report.backend,
        "verdict": None if report.verdict is None else {
            "kind": report.verdict.kind, "headline": report.verdict.headline,
            "details": list(report.verdict.details),
            "checked": {"source": report.verdict.source_checked, "ops": report.verdict.ops_checked},
            "blockers": _blockers(report.verdict.blockers),
            "unchecked": list(report.verdict.unchecked),   # models given but not checked: exit 2
            "remedy": report.verdict.remedy,   # one line for every cause of missing modules ("" = none)
            **({"step": _step(report.verdict.step)} if report.verdict.step is not None else {})},
        "findings": [_finding(f) for f in sorted(report.findings, key=Finding.sort_key)],
        "ops": [_with_cost(_op(usage, models, coverage.get(usage.op)), costs.get(usage.op))
                for usage, models in merge_ops(report.traces)],
        "traces": [_trace(t) for t in report.traces],
        "tasks": [_task(t) for t in report.tasks],
        "caveats": [_caveat(c) for c in report.caveats],
        "release_notes": [{"packet": n.packet, "ops": list(n.ops), "via": n.via, "text": n.text,
                           "evidence": [evidence_json(e) for e in n.evidence], "tests": list(n.tests)}
                          for n in report.release_notes],
        "notes": list(report.notes),
        "baseline": None if report.baseline is None else {
            "path": report.baseline.path, "known": report.baseline.known, "new": len(report.findings),
            "stale": list(report.baseline.stale)},
        "summary": summary(report),
        "discovery": None if report.discovery is None else _discovery(report.discovery),
        **_entries(report),
        "compile": _compile(report),
        **_host_ops(report),
        **_containment(report),
    }


def _place(source) -> dict | None:
    return None if source is None else {"path": source.path, "line": source.line}


def _compile(report: Report) -> dict:
    """`compile` (docs/json.md, "compile"): the compile signatures of each step and the ops whose
    signatures vary (several traces: step k joins their step k; none traced: empty lists),
    torch.compile under TorchNeuron's rules, and compile seconds from the user's assumption."""
    forecasts = [t.compile for t in report.traces if t.compile is not None]
    steps = []
    for number in range(max((len(f.steps) for f in forecasts), default=0)):
        parts = [f.steps[number] for f in forecasts if number < len(f.steps)]
        phases: dict[str, int] = {}
        for part in parts:
            for phase, count in part.phases:
                phases[phase] = phases.get(phase, 0) + count
        new = sorted((n for part in parts for n in part.new), key=lambda n: n.signature)
        steps.append({
            "step": number + 1,
            "signatures": sorted({s for part in parts for s in part.signatures}),
            "host_signatures": sorted({s for part in parts for s in part.host_signatures}),
            "phases": phases,
            "new": [{"signature": n.signature, "op": n.op, "phases": list(n.phases), "source": _place(n.source),
                     "cause": n.cause, "origin": _place(n.origin)} for n in new],
        })
    varying = sorted({v for f in forecasts for v in f.varying},
                     key=lambda v: (v.op, v.cause, v.origin.path if v.origin else "", v.origin.line if v.origin else 0))
    return {
        "steps": steps,
        "varying_ops": [{"op": v.op, "cause": v.cause, "origin": _place(v.origin),
                         "sources": [_place(s) for s in v.sources], "steps": list(v.steps),
                         "new_signatures": v.new_signatures, "detail": v.detail} for v in varying],
        "torch_compile": _torch_compile(report.torch_compile),
        "estimate": _estimate(report.compile_estimate),
    }


def _torch_compile(check) -> dict | None:
    if check is None:
        return None
    return {
        "regions": [{"target": target, "path": r.path, "line": r.line, "compiles": r.target,
                     "options": dict(r.options), "calls": r.calls, "explained": r.explained,
                     "not_explained": r.not_explained, "graphs": r.graphs,
                     "graph_break_count": r.graph_break_count,
                     "graph_breaks": [{"path": b.path, "line": b.line, "reason": b.reason, "count": b.count}
                                      for b in r.graph_breaks],
                     "ops": list(r.ops)}
                    for target, r in check.regions],
        "options": [{"name": o.name, "value": o.value, "rule": o.rule, "severity": o.severity,
                     "effect": o.effect, "source": o.source, "path": o.path, "line": o.line}
                    for o in check.options],
        "no_kernel_ops": [{"op": o.op, "status": o.status, "regions": list(o.regions),
                           "blocks": o.op in check.blocking_ops} for o in check.no_kernel_ops],
        "fallback": {"compile": check.no_kernel_compile, "rule": check.fallback_rule,
                     "sources": list(check.fallback_sources)},
    }


def _estimate(estimate) -> dict | None:
    if estimate is None:
        return None
    return {"seconds_per_signature": estimate.seconds_per_signature, "assumed": True,
            "counts": [{"what": what, "compiles": n} for what, n in estimate.counts],
            "seconds": [{"what": what, "seconds": sec} for what, sec in estimate.seconds]}


def _containment(report: Report) -> dict:
    """Which parts of the containment held over the run's children (docs/json.md, "containment"):
    present only when a model was traced in a contained child."""
    if not report.containment:
        return {}
    parts = dict(report.containment)
    return {"containment": {"held": all(state == "held" for state in parts.values()), "parts": parts}}


def _step(step: Step) -> dict:
    """The step the verdict answered for (NOTE [the step answered for] in opscan/assess/step.py)."""
    return {"kind": step.kind, "text": step.text, "command": step.command, "why": step.why,
            "accepted": step.accepted}


def _entries(report: Report) -> dict:
    """The training commands found by reading, best first (the first was run unless a model was configured)."""
    if not report.entries:
        return {}
    return {"entries": [{"command": e.command, "kind": e.kind, "path": e.path, "line": e.line, "cwd": e.cwd,
                         "why": e.why} for e in report.entries]}


def _host_ops(report: Report) -> dict:
    """`opscan run`'s ops on host tensors (data loading, metrics), not checked: present only when
    a trace has them (docs/run.md)."""
    host = tuple(ModelTrace(t.target, t.mode, t.device, ops=t.host_ops) for t in report.traces if t.host_ops)
    return {"host_ops": [_op(usage, models, None) for usage, models in merge_ops(host)]} if host else {}


def _blockers(blockers: Blockers) -> dict:
    """The blocking count and its parts (NOTE [blockers] in opscan/assess/verdict.py; docs/json.md)."""
    return {"count": blockers.count, "sites": blockers.sites, "files": blockers.files,
            "kernels": blockers.kernels, "libraries": blockers.libraries,
            "unsupported_ops": blockers.unsupported_ops, "unreadable_files": blockers.unreadable_files,
            "syntax_errors": list(blockers.syntax_errors), "dependencies": blockers.dependencies,
            "compiled_fallback_ops": blockers.compiled_fallback_ops}


def _caveat(caveat) -> dict:
    """A release caveat the traced dtypes hit (docs/json.md, "caveats")."""
    return {"kind": caveat.kind, "message": caveat.message, "ops": list(caveat.ops),
            "dtypes": list(caveat.dtypes), "sources": [_source(s) for s in caveat.sources],
            "tests": list(caveat.tests), "evidence": [evidence_json(e) for e in caveat.evidence]}


def _discovery(found) -> dict:
    """What opscan found to trace when no model was configured (docs/json.md, "discovery")."""
    def cand(c) -> dict:
        return {"target": c.target, "kind": c.kind, "path": c.path, "line": c.line, "ready": c.ready,
                "note": c.note}
    return {"traced": list(found.traced), "refused": [cand(c) for c in found.refused],
            "candidates": [cand(c) for c in found.candidates]}


def render(report: Report, out: TextIO) -> None:
    """Write the report as JSON (sorted, indented, newline-terminated: byte-stable)."""
    json.dump(to_dict(report), out, indent=2, ensure_ascii=False)
    out.write("\n")
