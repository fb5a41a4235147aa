"""Renders the pre-flight checklist as markdown (to attach to a review) or JSON."""

from __future__ import annotations

import json

from opscan.workflow.preflight import Checklist, CheckStatus

SCHEMA_VERSION = 1
_MARK = {s: s.value.upper() for s in CheckStatus}   # OK, WARN, FAIL, STOP, INFO, SKIP


def to_dict(checklist: Checklist, exit_on_missing: bool = False) -> dict:
    """The JSON record (key order is part of the contract; see docs/workflow.md)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "ready": checklist.ready,
        "checks": [
            {"id": c.id, "title": c.title, "status": c.status, "value": c.value,
             "detail": c.detail, "sources": list(c.sources)}
            for c in checklist.checks
        ],
        "ops": {
            "by_status": dict(checklist.ops_by_status),
            "missing": list(checklist.missing_ops),
            "unknown": list(checklist.unknown_ops),
            "unknown_counts_as_missing": checklist.unknown_missing,
        },
        "blockers": checklist.blockers,
        "exit_on_missing": exit_on_missing,
        "report": checklist.report_source or None,
    }


def render_json(checklist: Checklist, exit_on_missing: bool = False) -> str:
    return json.dumps(to_dict(checklist, exit_on_missing), indent=2, ensure_ascii=False) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(checklist: Checklist) -> str:
    """A markdown checklist: a status table, the missing ops, and the sources cited."""
    lines = ["# opscan pre-flight checklist", ""]
    verdict = "ready to book hardware" if checklist.ready else "NOT ready"
    lines += [f"**Verdict: {verdict}** (any FAIL or STOP blocks)", ""]
    lines += ["| status | check | result | detail |", "|---|---|---|---|"]
    for check in checklist.checks:
        lines.append(f"| {_MARK[check.status]} | {_cell(check.title)} | `{_cell(check.value)}` | "
                     f"{_cell(check.detail)} |")
    if checklist.missing_ops:
        lines += ["", "## Ops without a Neuron kernel", ""]
        lines += [f"- [ ] `{op}`" for op in checklist.missing_ops]
    if checklist.unknown_ops and not checklist.unknown_missing:
        lines += ["", f"## Ops of unknown status ({len(checklist.unknown_ops)}, not counted as missing)", ""]
        lines += [f"- `{op}`" for op in checklist.unknown_ops[:50]]
        if len(checklist.unknown_ops) > 50:
            lines.append(f"- ... and {len(checklist.unknown_ops) - 50} more (see --format json)")
    sources = sorted({s for c in checklist.checks for s in c.sources})
    if sources:
        lines += ["", "## Sources", ""]
        lines += [f"- {s}" for s in sources]
    return "\n".join(lines) + "\n"
