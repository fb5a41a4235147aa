"""The CI gate: which `--fail-on` conditions a finished report meets (exit 1 when any does)."""

from __future__ import annotations

from opscan.model import Report

_SEVERITY_RANK = {"error": 0, "warning": 1, "note": 2}


def failures(report: Report, fail_on: tuple[str, ...]) -> list[str]:
    """One line per met condition, e.g. "error: 3 findings of severity error"; [] = pass."""
    status = {c.op: c.status for c in report.coverage}
    ops = sorted({u.op for t in report.traces for u in t.ops})
    custom_ops = sorted({u.op for t in report.traces for u in t.ops if u.custom})
    out: list[str] = []
    for condition in fail_on:
        if condition in ("error", "warning"):
            worst = _SEVERITY_RANK[condition]
            hits = [f for f in report.findings if _SEVERITY_RANK.get(f.severity, 2) <= worst]
            unsupported = [op for op in ops if status.get(op) == "unsupported"]
            if hits:
                out.append(f"{condition}: {len(hits)} finding(s) of severity {condition}"
                           + (" or error" if condition == "warning" else ""))
            if unsupported:
                out.append(f"{condition}: {len(unsupported)} unsupported op(s): {', '.join(unsupported[:5])}")
        elif condition == "fallback":
            hits = [op for op in ops if status.get(op) == "cpu-fallback"]
            if hits:
                out.append(f"fallback: {len(hits)} op(s) on CPU fallback: {', '.join(hits[:5])}")
        elif condition == "unknown":
            hits = [op for op in ops if status.get(op, "unknown") == "unknown"]
            if hits:
                out.append(f"unknown: {len(hits)} op(s) of unknown status: {', '.join(hits[:5])}")
        elif condition == "custom-kernel":
            sites = [f for f in report.findings if f.category == "custom-kernel"]
            if sites or custom_ops:
                out.append(f"custom-kernel: {len(sites)} custom-kernel finding(s), "
                           f"{len(custom_ops)} custom op(s)")
    return out
