"""Check a traced op inventory against a release: coverage per op plus the run notes (pairing, counts)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from opscan.db import registry
from opscan.db.lookup import check, for_model
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


def traced_dtypes(traces: Iterable[ModelTrace]) -> dict[str, set[str]]:
    """op -> every dtype the traces called it with (OpUsage.dtypes, "torch.float32")."""
    out: dict[str, set[str]] = {}
    for trace in traces:
        for usage in trace.ops:
            out.setdefault(usage.op, set()).update(usage.dtypes)
    return out


def annotate(release: Release, op_names: Iterable[str], dtypes: Mapping[str, Iterable[str]] | None = None
             ) -> tuple[tuple[Coverage, ...], tuple[str, ...]]:
    """(coverage sorted by op, notes): a torch pairing warning, the counts line, what unknown means.
    With `dtypes` (op -> the dtypes the model calls it with, `traced_dtypes`), each op is judged for
    those dtypes, its composite parts too (NOTE [dtypes after decomposition] in opscan/db/lookup.py)."""
    coverage = check(release, op_names, dtypes)
    notes = list(release_notes(release))
    counts = status_counts(coverage)
    shown = ", ".join(f"{n} {s}" for s, n in counts.items() if n or s in _ALWAYS_COUNTED)
    n = len(coverage)
    notes.append(f"coverage against {release.spec}: {n} op{'s' * (n != 1)}: {shown}" if n else
                 f"coverage against {release.spec}: no op traced")
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
    """`coverage` judged again for the dtypes the traces called each op with (`for_model`: a
    per-dtype CPU fallback such as a compatibility table's "CPU_FALLBACK: float32" makes the op, or a
    composite reaching it on that dtype, `cpu-fallback` for this model). The assessment does the same
    in one step (`annotate` given `traced_dtypes`); the op's fallback cost then counts all its calls
    (the trace records bytes per op, not per dtype), an upper bound when the model also calls it with
    dtypes the backend runs."""
    dtypes = traced_dtypes(traces)
    return tuple(for_model(release, answer.op, dtypes.get(answer.op, ())) if dtypes.get(answer.op) else answer
                 for answer in coverage)
