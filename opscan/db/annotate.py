"""Check a traced op inventory against a release: coverage per op plus the run notes (pairing, counts)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from opscan.db import registry
from opscan.db.lookup import check
from opscan.db.release import Release
from opscan.records import STATUSES, Coverage, OpName, OpNote


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


def annotate(release: Release, op_names: Iterable[str]) -> tuple[tuple[Coverage, ...], tuple[str, ...]]:
    """(coverage sorted by op, notes): a torch pairing warning, the counts line, what unknown means."""
    coverage = check(release, op_names)
    notes = list(release_notes(release))
    counts = status_counts(coverage)
    shown = ", ".join(f"{n} {s}" for s, n in counts.items() if n or s in ("native", "cpu-fallback", "unknown"))
    notes.append(f"coverage against {release.spec}: {len(coverage)} ops: {shown}")
    if counts["unknown"] and release.kernel_list == "partial":
        notes.append(f"{release.spec} lists only some ops ({release.unlisted.note}); run `opscan db probe` on "
                     "an install to turn unknown into native or cpu-fallback")
    maybe = [c.op for c in coverage if c.status == "device-or-cpu"]
    rule = release.no_kernel
    if maybe and rule is not None:
        compile_says = rule.compile_note or f"{rule.compile}"
        notes.append(f"{len(maybe)} traced op{'s' * (len(maybe) != 1)} not listed for {release.spec} run on the "
                     f"device or on the CPU: {rule.note or 'the documented eager default'}; under torch.compile: "
                     f"{compile_says}")
    return coverage, tuple(notes)
