"""Check a traced op inventory against a release: coverage per op plus the run notes (pairing, counts)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from opscan.db import registry
from opscan.db.lookup import check
from opscan.db.release import Release
from opscan.records import STATUSES, Coverage, ModelTrace, OpName, OpNote, Status


def status_counts(coverage: Iterable[Coverage]) -> dict[str, int]:
    """Ops per status, every status of the vocabulary present (in vocabulary order)."""
    counts = Counter(c.status for c in coverage)
    return {status: counts.get(status, 0) for status in STATUSES}


def release_notes(release: Release) -> tuple[str, ...]:
    """Run notes about using `release` here: no torch, or a torch that does not pair with it."""
    version = registry.torch_version()
    if version is None:
        return ("torch is not importable: composite ops were not expanded, so they are unknown",)
    warning = release.pairing_warning(version)
    return (warning,) if warning else ()


def op_notes(release: Release, op_names: Iterable[str]) -> tuple[OpNote, ...]:
    """The release notes (Release.release_notes) that concern the traced ops: by the op's name, as an
    overload (or in-place or out form) of the note's packet, or as parts of it when every part the
    packet decomposes into was traced (one part alone, `mul`, says nothing about the parent)."""
    ops = sorted(set(op_names))
    packets = {OpName.parse(op).packet for op in ops}
    out = []
    for note in release.release_notes:
        hits = {op: note.via(op) for op in ops if note.via(op)}
        direct = sorted(op for op, via in hits.items() if via != "part")
        parts = sorted(op for op, via in hits.items() if via == "part")
        if direct:
            via = "op" if note.packet in direct else "overload"
        elif parts and {OpName.parse(p).packet for p in note.parts} <= packets:
            direct, via = parts, "part"
        else:
            continue
        out.append(OpNote(note.packet, tuple(direct), via, note.text, release.evidence(note.sources), note.tests))
    return tuple(out)


# the statuses the counts line always names, even at 0
_ALWAYS_COUNTED = (Status.NATIVE, Status.CPU_FALLBACK, Status.UNKNOWN)


def annotate(release: Release, op_names: Iterable[str]) -> tuple[tuple[Coverage, ...], tuple[str, ...]]:
    """(coverage sorted by op, notes): a torch pairing warning, the counts line, what unknown means."""
    coverage = check(release, op_names)
    notes = list(release_notes(release))
    counts = status_counts(coverage)
    shown = ", ".join(f"{n} {s}" for s, n in counts.items() if n or s in _ALWAYS_COUNTED)
    notes.append(f"coverage against {release.spec}: {len(coverage)} ops: {shown}")
    if counts["unknown"] and release.kernel_list == "partial":
        notes.append(f"{release.spec} lists only some ops ({release.unlisted.note}); run `opscan db probe` on "
                     "an install to turn unknown into native or cpu-fallback")
    maybe = [c.op for c in coverage if c.status.maybe_falls_back]
    rule = release.no_kernel
    if maybe and rule is not None:
        compile_says = rule.compile_note or f"{rule.compile}"
        notes.append(f"{len(maybe)} traced op{'s' * (len(maybe) != 1)} not listed for {release.spec} run on the "
                     f"device or on the CPU: {rule.note or 'the documented eager default'}; under torch.compile: "
                     f"{compile_says}")
    return coverage, tuple(notes)


def with_dtype_fallbacks(release: Release, coverage: Iterable[Coverage],
                         traces: Iterable[ModelTrace]) -> tuple[Coverage, ...]:
    """`coverage` with each op the release runs on the CPU for a dtype the trace called it with
    (`dtype_fallbacks:`, e.g. a compatibility table's "CPU_FALLBACK: float32") turned `cpu-fallback`
    for this model, citing that row. The only place a per-dtype fallback changes an op's status:
    the verdict and the fallback cost read the coverage it returns (a float32 model using an op
    that falls back for float32 is never "ready"). The op's fallback cost then counts all its calls
    (the trace records bytes per op, not per dtype), an upper bound when the model also calls it
    with dtypes the backend runs."""
    rows = {f.op: f for f in release.dtype_fallbacks}
    if not rows:
        return tuple(coverage)
    dtypes: dict[str, set[str]] = {}
    for trace in traces:
        for usage in trace.ops:
            dtypes.setdefault(usage.op, set()).update(d.removeprefix("torch.") for d in usage.dtypes)
    out = []
    for answer in coverage:
        row = rows.get(answer.op)
        hit = sorted(set(row.dtypes) & dtypes.get(answer.op, set())) if row is not None else []
        if hit and answer.status.has_kernel:
            answer = Coverage(op=answer.op, status="cpu-fallback", evidence=release.evidence(row.sources),
                              confidence=answer.confidence,
                              via=f"falls back to the CPU for {', '.join(hit)}, a dtype this model calls it with"
                                  + (f" ({row.note})" if row.note else ""))
        out.append(answer)
    return tuple(out)
