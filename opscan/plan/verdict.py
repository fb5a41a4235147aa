"""The one-line answer of a report: ready, runs with ops on CPU fallback, or blocked (and by what)."""

from __future__ import annotations

from dataclasses import dataclass

from opscan.model import Report


_UNREADABLE = ("parse-error", "unreadable-file", "internal-error")


@dataclass(frozen=True)
class Verdict:
    """`kind` is one of: blocked, fallback, unknown, ready; `headline` is the line users read first."""

    kind: str
    headline: str
    details: tuple[str, ...] = ()   # caveats shown under the headline


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else (plural or word + 's')}"


def verdict(report: Report) -> Verdict:
    """Judge `report`: blockers first, then CPU fallback, then unknowns."""
    pinned = [f for f in report.findings if f.severity == "error" and not f.guarded
              and f.category in ("device-string", "cuda-api")]
    kernels = {t.id for t in report.tasks if t.id.startswith("kernel:") and t.priority == 1}
    libraries = {t.id for t in report.tasks if t.id.startswith("library:") and t.priority == 1}
    other = [f for f in report.findings if f.severity == "error" and not f.guarded
             and f.category not in ("device-string", "cuda-api", "custom-kernel", "cuda-only-lib", "input")]
    ops = {u.op for t in report.traces for u in t.ops}
    status = {c.op: c.status for c in report.coverage}
    unsupported = sorted(op for op in ops if status.get(op) == "unsupported")
    fallback = sorted(op for op in ops if status.get(op) == "cpu-fallback")
    unknown = sorted(op for op in ops if status.get(op, "unknown") == "unknown")

    details: list[str] = []
    if not report.traces:
        details.append("no model traced: source only (configure [tool.opscan.models] or pass --model)")
    for trace in report.traces:
        if not trace.complete:
            details.append(f"trace of {trace.target} stopped early: {trace.stopped_at}")
    if unknown:
        details.append(f"{len(unknown)} of {_plural(len(ops), 'traced op')} "
                       f"{'has' if len(unknown) == 1 else 'have'} unknown status on {report.backend or 'the backend'}")
    # NOTE [low-confidence coverage]: an op judged native only on low-confidence evidence (the
    # pre-release source snapshot for TorchNeuron 2.33) is not proof; say so next to any verdict.
    coverage = {c.op: c for c in report.coverage}
    unverified = sorted(op for op in ops if op in coverage and coverage[op].confidence == "low"
                        and coverage[op].status in ("native", "composite", "limited"))
    if unverified:
        details.append(f"{_plural(len(unverified), 'op')} judged supported only on low-confidence evidence "
                       f"({coverage[unverified[0]].evidence[0].text if coverage[unverified[0]].evidence else 'no source'}): "
                       "confirm with `opscan db probe` on a Trainium instance")
    unreadable = [f for f in report.findings if f.name in _UNREADABLE]
    if unreadable:
        details.append(f"{_plural(len({f.location.path for f in unreadable}), 'file')} could not be read")

    blockers = []
    if pinned:
        files = len({f.location.path for f in pinned})
        blockers.append(f"{_plural(len(pinned), 'CUDA-pinned site')} in {_plural(files, 'file')}")
    if kernels:
        blockers.append(_plural(len(kernels), "custom kernel"))
    if libraries:
        blockers.append(_plural(len(libraries), "CUDA-only library", "CUDA-only libraries"))
    if unsupported:
        blockers.append(_plural(len(unsupported), "unsupported op"))
    if other:
        blockers.append(_plural(len(other), "other CUDA-only setting"))
    if blockers:
        return Verdict("blocked", "blocked by " + ", ".join(blockers), tuple(details))
    if fallback:
        return Verdict("fallback", f"runs with {_plural(len(fallback), 'op')} on CPU fallback",
                       tuple(details))
    to_check = [t for t in report.tasks if t.id.startswith(("kernel:", "library:")) and t.priority != 1]
    incomplete = [t for t in report.traces if not t.complete]
    if unknown or to_check or incomplete:
        open_points = ([f"{_plural(len(unknown), 'op')} of unknown status"] if unknown else []) + \
            ([f"{_plural(len(to_check), 'custom kernel or library', 'custom kernels or libraries')} to check"]
             if to_check else []) + \
            ([f"{_plural(len(incomplete), 'incomplete trace')}"] if incomplete else [])
        return Verdict("unknown", "no blockers found, but not proven: " + ", ".join(open_points),
                       tuple(details))
    headline = f"ready, if the low-confidence coverage of {_plural(len(unverified), 'op')} holds" \
        if unverified else "ready"
    return Verdict("ready", headline, tuple(details))
