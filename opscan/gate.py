"""The CI gate: which `--fail-on` conditions a finished report meets (exit 1 when any does).

The default condition, `error`, fails on exactly the blockers the verdict carries (NOTE
[blockers] in opscan/verdict.py) and says them in the headline's words and count, so the verdict
and the exit code never contradict each other: blocked exits 1, every other verdict exits 0 under
the default gate. The other conditions are stricter opt-ins.

A model opscan was given (configured, `--model`, or PATH itself) but could not build or trace is
not a pass: `could_not_check` lists them and the run exits 2 ("could not check"), even under
`--exit-zero`, unless `--allow-unchecked` (or `allow-unchecked = true`) asks for the source gate alone.
"""

from __future__ import annotations

from opscan.records import Report, status_of
from opscan.verdict import blockers_of, op_status, unsupported_ops

_SEVERITY_RANK = {"error": 0, "warning": 1, "note": 2}


def failures(report: Report, fail_on: tuple[str, ...]) -> list[str]:
    """One line per met condition, e.g. "error: 3 blockers (3 CUDA-pinned sites in 1 file)"; [] = pass."""
    status = op_status(report)
    custom_ops = sorted({u.op for t in report.traces for u in t.ops if u.custom})
    unsupported = unsupported_ops(report)
    out: list[str] = []
    for condition in fail_on:
        if condition == "error":
            blockers = blockers_of(report)
            if blockers.count:
                out.append(f"error: {blockers.count} blocker{'s' * (blockers.count != 1)} "
                           f"({blockers.describe()})")
        elif condition == "warning":
            hits = [f for f in report.findings if _SEVERITY_RANK.get(f.severity, 2) <= 1]
            if hits:
                out.append(f"warning: {len(hits)} finding(s) of severity warning or error (guarded ones included)")
            if unsupported:
                out.append(f"warning: {len(unsupported)} unsupported op(s): {', '.join(unsupported[:5])}")
        elif condition == "fallback":
            hits = [op for op, st in status.items() if st == "cpu-fallback"]
            maybe = [op for op, st in status.items() if status_of(st).may_fall_back and st != "cpu-fallback"]
            if hits:
                out.append(f"fallback: {len(hits)} op(s) on CPU fallback: {', '.join(hits[:5])}")
            if maybe:
                out.append(f"fallback: {len(maybe)} op(s) that may run on the CPU: {', '.join(maybe[:5])}")
        elif condition == "unknown":
            hits = [op for op, st in status.items() if st == "unknown"]
            if hits:
                out.append(f"unknown: {len(hits)} op(s) of unknown status: {', '.join(hits[:5])}")
        elif condition == "custom-kernel":
            sites = [f for f in report.findings if f.is_kernel]
            if sites or custom_ops:
                out.append(f"custom-kernel: {len(sites)} custom-kernel finding(s), "
                           f"{len(custom_ops)} custom op(s)")
    return out


def could_not_check(report: Report) -> tuple[str, ...]:
    """One line per model given but not checked ("TARGET: why", the whole reason); () = none."""
    return report.verdict.unchecked if report.verdict is not None else ()
