"""The one assessment after tracing: coverage, caveats, notes, port tasks and the verdict of a Report.

`opscan PATH` (opscan/app.py), `opscan trace` (opscan/commands/trace.py) and every zoo row
(opscan/zoo/results.py) hand what they traced and found to `assess`, so the three answer alike:
the same op statuses (one lookup per op in one `db.Release`), the same caveats
(opscan/db/caveats.py), the same tasks (opscan/plan) and the same verdict (opscan/verdict.py).
A caller may leave parts out (the zoo has no findings, `opscan trace` no source), never redo them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from opscan.config import CostConfig
from opscan.records import Coverage, Fallback, ModelTrace, Report, ScanFacts, status_of
from opscan.plan import build_tasks
from opscan.plan.measure import kernel_sources, usage
from opscan.verdict import judge

NO_DATABASE = "no coverage database: every traced op is reported as unknown"

# NOTE [one assessment]
# Before this module, `opscan PATH`, `opscan trace` and the zoo each built their Report: trace had
# its own notes and no tasks, the zoo no caveats, PATH only the torch-pairing note. Now all three
# get everything: the zoo rows carry the caveats, `opscan trace` the tasks, and `opscan PATH` the
# notes `opscan trace` gave (op counts per status, and how to turn unknown into known for a
# release with a partial kernel list). What differs between them is only what they hand in:
# findings and a project root (PATH), and why source or ops were not checked (for the verdict).


def assess(draft: Report, release, *, project_root: Path | None = None, cost: CostConfig | None = None,
           ops_not_checked: str = "", source_not_checked: str | None = "",
           unchecked: tuple[tuple[str, str], ...] = (), facts: ScanFacts = ScanFacts()) -> Report:
    """`draft` (what the run traced and found: traces, findings, root, ...) judged against `release`.

    Args:
        draft: a Report without coverage, caveats, tasks or verdict; its notes are kept and the
            assessment's notes (torch pairing, op counts, what unknown means) follow them.
        release: an opscan.db Release, or None (no database: every traced op is unknown).
        project_root: the scanned project, whose files the tasks measure (None: no source).
        cost: the cost model of the tasks (default: CostConfig()).
        ops_not_checked, source_not_checked: why ops or source were not checked (see `judge`).
        facts: what the scan learnt beside its findings (import bindings, library use, kernel
            spans), which the tasks are measured from (opscan/scan/facts.py).
        unchecked: (target, why) of each model given that could not be built or traced (the gate exits 2).
    Returns:
        The finished Report, with `verdict` set.
    """
    traces = draft.traces
    ops = sorted({u.op for t in traces for u in t.ops})
    notes = list(draft.notes)
    coverage: tuple[Coverage, ...] = ()
    caveats: tuple = ()
    if release is not None and traces:
        from opscan.db.annotate import annotate
        from opscan.db.caveats import op_caveats

        coverage, coverage_notes = annotate(release, ops)
        notes.extend(coverage_notes)
        notes.extend(sdpa_assumption(release, ops))
        caveats = op_caveats(release, traces)
    elif traces:
        notes.append(NO_DATABASE)
        coverage = tuple(Coverage(op, "unknown", (), "low", "no coverage database loaded") for op in ops)
    findings = draft.findings
    measured = project_root is not None and bool(findings)
    tasks = build_tasks(findings, traces, coverage, cost,
                        kernel_sources(project_root, findings, facts) if measured else None,
                        usage(findings, facts) if measured else None)
    report = replace(draft, coverage=coverage, caveats=tuple(caveats), notes=tuple(notes), tasks=tasks,
                     backend=release.spec if release is not None else draft.backend)
    report = replace(report, fallbacks=fallback_costs(traces, coverage))
    pairing = ""
    if release is not None and traces:
        from opscan.db import registry

        version = registry.torch_version()
        pairing = (release.pairing_warning(version) or "") if version is not None else ""
    return replace(report, verdict=judge(report, ops_not_checked=ops_not_checked, source_not_checked=source_not_checked,
                                         unchecked=unchecked, pairing=pairing))


def fallback_costs(traces: tuple[ModelTrace, ...], coverage: tuple[Coverage, ...]) -> tuple[Fallback, ...]:
    """The cost per training step of every traced op that runs, or may run, on the CPU (NOTE
    [fallback cost] in opscan/records.py): the bytes its train-step calls read and write on the
    device (copied to the host and back), one sync and one call per call; summed over the traces."""
    status = {c.op: c.status for c in coverage}
    totals: dict[str, list[int]] = {}
    for trace in traces:
        for usage in trace.ops:
            if status_of(status.get(usage.op, "unknown")).may_fall_back:
                cost = totals.setdefault(usage.op, [0, 0])
                cost[0] += usage.step_bytes
                cost[1] += usage.step_calls
    return tuple(Fallback(op, status[op], bytes_, calls, calls) for op, (bytes_, calls) in sorted(totals.items()))


SDPA_OPS = ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_")
SDPA_PATHS = {"math": "the math path (matmul, softmax, matmul: no fused kernel)",
              "overrideable": "the backend's fused kernel (_scaled_dot_product_fused_attention_overrideable)",
              "overrideable-4d": "the backend's fused kernel (_scaled_dot_product_fused_attention_overrideable) "
                                 "for 4-D query/key/value, the math path otherwise"}


def sdpa_assumption(release, ops: list[str]) -> tuple[str, ...]:
    """The note on which SDPA path the trace assumed, with its evidence, when the model traced attention."""
    if not any(op.startswith(SDPA_OPS) for op in ops):
        return ()
    evidence = "; ".join(e.text for e in release.evidence(release.sdpa_sources)) or "no evidence stated"
    return (f"SDPA path assumed for {release.spec}: {SDPA_PATHS.get(release.sdpa_policy, release.sdpa_policy)} "
            f"({evidence}); the ops traced for attention follow this assumption",)
