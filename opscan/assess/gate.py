"""The CI gate: which `--fail-on` conditions a finished report meets (exit 1 when any does).

The default condition, `error`, fails on exactly the blockers the verdict carries (NOTE
[blockers] in opscan/assess/verdict.py) and says them in the headline's words and count, so the verdict
and the exit code never contradict each other: blocked exits 1, every other verdict exits 0 under
the default gate. The other conditions are stricter opt-ins.

A model opscan was given (configured, `--model`, or PATH itself) but could not build or trace is
not a pass: `could_not_check` lists them and the run exits 2 ("could not check"), even under
`--exit-zero`, unless `--allow-unchecked` (or `allow-unchecked = true`) asks for the source gate alone.
"""

from __future__ import annotations

from collections.abc import Callable

from opscan.records import Report, Severity, VerdictKind
from opscan.assess.verdict import blockers_of, judged_ops, plural
from opscan.reporters.texts import blockers_words


def _error(report: Report) -> list[str]:
    blockers = blockers_of(report)
    if not blockers.count:
        return []
    return [f"error: {plural(blockers.count, 'blocker')} ({blockers_words(blockers)})"]


def _warning(report: Report) -> list[str]:
    out = []
    hits = [f for f in report.findings if f.severity.at_least(Severity.WARNING)]
    if hits:
        out.append(f"warning: {plural(len(hits), 'finding')} of severity warning or error (guarded ones included)")
    unsupported = judged_ops(report).unsupported
    if unsupported:
        out.append(f"warning: {plural(len(unsupported), 'unsupported op')}: {', '.join(unsupported[:5])}")
    return out


def _fallback(report: Report) -> list[str]:
    out = []
    ops = judged_ops(report)
    if ops.fallback:
        out.append(f"fallback: {plural(len(ops.fallback), 'op')} on CPU fallback: {', '.join(ops.fallback[:5])}")
    if ops.maybe_fallback:
        out.append(f"fallback: {plural(len(ops.maybe_fallback), 'op')} that may run on the CPU: "
                   f"{', '.join(ops.maybe_fallback[:5])}")
    return out


def _unknown(report: Report) -> list[str]:
    hits = judged_ops(report).unknown
    return [f"unknown: {plural(len(hits), 'op')} of unknown status: {', '.join(hits[:5])}"] if hits else []


def _custom_kernel(report: Report) -> list[str]:
    custom_ops = sorted({u.op for t in report.traces for u in t.ops if u.custom})
    sites = [f for f in report.findings if f.is_kernel]
    if not (sites or custom_ops):
        return []
    return [f"custom-kernel: {plural(len(sites), 'custom-kernel finding')}, {plural(len(custom_ops), 'custom op')}"]


# NOTE [not ready]: `not-ready` is the gate of a team that wants CI to pass only on proven
# support: every verdict short of `ready` fails where ops were checked (or were meant to be: a run
# that found no model is not proven). A run that asked for the source alone (`--no-trace`,
# `opscan scan`, the pre-commit hook) cannot be `ready` by design; it is judged on its source
# verdict: `unchecked` (the source holds nothing open, the ops were left out as asked) passes,
# `unknown` (a guarded kernel, known findings hidden by a baseline) and `blocked` fail.
def _not_ready(report: Report) -> list[str]:
    verdict = report.verdict
    if verdict is None or verdict.kind is VerdictKind.READY:
        return []
    if verdict.source_only and verdict.kind is VerdictKind.UNCHECKED:
        return []
    return [f"not-ready: the verdict is {verdict.kind}: {verdict.headline}"]


# The `--fail-on` conditions (config.FAIL_ON says each) and the lines each one's failure gives.
CONDITIONS: dict[str, Callable[[Report], list[str]]] = {
    "error": _error, "warning": _warning, "fallback": _fallback, "unknown": _unknown,
    "custom-kernel": _custom_kernel, "not-ready": _not_ready,
}


def failures(report: Report, fail_on: tuple[str, ...]) -> list[str]:
    """One line per met condition, e.g. "error: 3 blockers (3 CUDA-pinned sites in 1 file)"; [] = pass."""
    out: list[str] = []
    for condition in fail_on:
        check = CONDITIONS.get(condition)
        if check is not None:
            out.extend(check(report))
    return out


def could_not_check(report: Report) -> tuple[str, ...]:
    """One line per model given but not checked ("TARGET: why", the whole reason); () = none."""
    return report.verdict.unchecked if report.verdict is not None else ()
