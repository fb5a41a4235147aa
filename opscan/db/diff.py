"""What changed between two releases: ops added, removed and changed status (the per-release changelog).

NOTE [release change vs evidence change]
Two release files differ for two reasons: the backend changed between the releases, or what we
know changed (a newer document, a note we found later, our own inference). Only the first belongs
in a release changelog. A change is a *release* change when
  - both files read the dispatcher of an install (kernel_list: complete, i.e. probed), so each
    side is a measurement of its own release; or
  - the newer entry's `since` (the date its evidence gives for the change, e.g. a release note's
    "added in 1.13.0.1.6.0 (2023-03-28)") falls after the older release's date.
Everything else is an *evidence* change: an entry the old file lacks because its evidence did not
exist or was not read then (sort's partitioner note), a new condition found in a later document
(sqrt and complex64), a change of confidence, note or kind of evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

from opscan.db.release import Entry, Release


@dataclass(frozen=True)
class Change:
    """One op's line in a changelog. `old`/`new` are None when the op is not listed on that side."""

    op: str
    old: Entry | None
    new: Entry | None
    cause: str = "evidence"          # "release" | "evidence" (NOTE [release change vs evidence change])

    @property
    def kind(self) -> str:
        if self.old is None:
            return "added"
        if self.new is None:
            return "removed"
        if self.old.status != self.new.status:
            return "status"
        return "evidence"


@dataclass(frozen=True)
class Changelog:
    """The difference between two release files, entry by entry, sorted by op."""

    old: Release
    new: Release
    changes: tuple[Change, ...]
    header: tuple[tuple[str, str, str], ...] = ()   # (field, old value, new value) for release metadata

    def of_kind(self, kind: str, cause: str | None = None) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.kind == kind and (cause is None or c.cause == cause))

    def of_cause(self, cause: str) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.cause == cause)


def _meta(release: Release) -> dict[str, str]:
    return {
        "packages": ", ".join(f"{p.name} {p.version} (torch {p.torch})" for p in release.packages),
        "op_names": release.op_names,
        "kernel_list": release.kernel_list,
        "unlisted": release.unlisted.status,
        "sdpa_policy": release.sdpa_policy,
        "dtype_narrowing": ", ".join(f"{n.dtype} as {n.computed_as}" if n.effect == "narrowed"
                                     else f"{n.dtype} {n.effect}" for n in release.narrowing),
        "known_failures": f"{len(release.known_failures)} op/dtype rows" if release.known_failures else "",
    }


def _cause(old: Release, new: Release, a: Entry | None, b: Entry | None) -> str:
    """'release' or 'evidence' (NOTE [release change vs evidence change])."""
    if a is not None and b is not None and a.status == b.status:
        return "evidence"
    if old.kernel_list == "complete" and new.kernel_list == "complete":
        return "release"
    if b is not None and b.since and old.released and b.since > old.released:
        return "release"
    return "evidence"


def diff(old: Release, new: Release) -> Changelog:
    """Entries added, removed, changed in status, or in confidence/note/kind of evidence, old -> new."""
    changes = []
    for op in sorted(set(old.entries) | set(new.entries)):
        a, b = old.entries.get(op), new.entries.get(op)
        if a is not None and b is not None:
            # Each release cites its own copy of a page; only a change in the kind of evidence counts.
            kinds_a = sorted({e.kind for e in old.evidence(a.sources)})
            kinds_b = sorted({e.kind for e in new.evidence(b.sources)})
            if (a.status, a.confidence, a.note, a.parts, kinds_a) == \
                    (b.status, b.confidence, b.note, b.parts, kinds_b):
                continue
        changes.append(Change(op, a, b, _cause(old, new, a, b)))
    before, after = _meta(old), _meta(new)
    header = tuple((k, before[k], after[k]) for k in before if before[k] != after[k])
    return Changelog(old=old, new=new, changes=tuple(changes), header=header)
