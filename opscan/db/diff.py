"""What changed between two releases: ops added, removed and changed status (the per-release changelog)."""

from __future__ import annotations

from dataclasses import dataclass

from opscan.db.release import Entry, Release


@dataclass(frozen=True)
class Change:
    """One op's line in a changelog. `old`/`new` are None when the op is not listed on that side."""

    op: str
    old: Entry | None
    new: Entry | None

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

    def of_kind(self, kind: str) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.kind == kind)


def _meta(release: Release) -> dict[str, str]:
    return {
        "packages": ", ".join(f"{p.name} {p.version} (torch {p.torch})" for p in release.packages),
        "op_names": release.op_names,
        "kernel_list": release.kernel_list,
        "unlisted": release.unlisted.status,
        "sdpa_policy": release.sdpa_policy,
    }


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
        changes.append(Change(op, a, b))
    before, after = _meta(old), _meta(new)
    header = tuple((k, before[k], after[k]) for k in before if before[k] != after[k])
    return Changelog(old=old, new=new, changes=tuple(changes), header=header)
