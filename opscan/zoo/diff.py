"""`opscan zoo diff OLD.json NEW.json`: which models became ready, broke, improved or regressed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from opscan.errors import InputError
from opscan.records import VerdictKind
from opscan.zoo.render.jsonout import SCHEMA, SCHEMAS_READ
from opscan.zoo.results import RowVerdict
from opscan.containment.outcome import TraceStatus

# Lower is better: the one ranking of verdicts (records.VerdictKind.rank), then the zoo's own row
# state "failed" (nothing to judge) worst; "incomplete" is only in files written before the zoo used
# the analysis verdict (it is now "unknown").
RANK = {**{kind.value: kind.rank for kind in VerdictKind}, "incomplete": VerdictKind.UNKNOWN.rank,
        RowVerdict.FAILED: VerdictKind.BLOCKED.rank + 1}
class ChangeKind(StrEnum):
    """How a model changed between two zoo runs (Change.kind), in the order the diff lists them."""

    BECAME_READY = "became-ready"
    BROKE = "broke"
    IMPROVED = "improved"
    REGRESSED = "regressed"
    OPS_CHANGED = "ops-changed"
    ADDED = "added"
    REMOVED = "removed"

    @property
    def description(self) -> str:
        return _KINDS[self]

    @property
    def worse(self) -> bool:
        """A worse answer than before (`opscan zoo diff` exits 1)."""
        return self in (ChangeKind.BROKE, ChangeKind.REGRESSED)


_KINDS: dict[str, str] = {
    "became-ready": "not ready before, ready now",
    "broke": "ready before, not ready now",
    "improved": "a better verdict, still not ready",
    "regressed": "a worse verdict, still not ready",
    "ops-changed": "same verdict, different ops keep it from being ready",
    "added": "only in the new run",
    "removed": "only in the old run",
}
KINDS: dict[str, str] = {k.value: k.description for k in ChangeKind}


@dataclass(frozen=True)
class Change:
    """One model whose verdict or blocking ops changed between two zoo runs."""

    model: str
    kind: ChangeKind               # one of KINDS
    old: str = ""                  # old verdict
    new: str = ""                  # new verdict
    fixed: tuple[str, ...] = ()    # ops that blocked before and do not now
    new_blockers: tuple[str, ...] = ()
    error: str = ""                # the new row's error, if any


def load(path: Path) -> dict:
    """Read a zoo JSON file; a wrong or unreadable file is an InputError naming it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read zoo results: {exc}", path=str(path)) from exc
    if not isinstance(data, dict) or data.get("schema") not in SCHEMAS_READ:
        raise InputError(f"not an opscan zoo JSON file (expected schema {SCHEMA!r})", path=str(path))
    return data


def diff(old: dict, new: dict) -> list[Change]:
    """Changes between two zoo JSON documents, sorted by kind then model."""
    before = {m["name"]: m for m in old["models"]}
    after = {m["name"]: m for m in new["models"]}
    changes = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None:
            changes.append(Change(name, ChangeKind.ADDED, new=b["verdict"], error=b.get("error", "")))
            continue
        if b is None:
            changes.append(Change(name, ChangeKind.REMOVED, old=a["verdict"]))
            continue
        fixed = tuple(sorted(set(a.get("blockers", ())) - set(b.get("blockers", ()))))
        broke = tuple(sorted(set(b.get("blockers", ())) - set(a.get("blockers", ()))))
        va, vb = a["verdict"], b["verdict"]
        ready_before, ready_now = va == VerdictKind.READY, vb == VerdictKind.READY
        if not ready_before and ready_now:
            kind = ChangeKind.BECAME_READY
        elif ready_before and not ready_now:
            kind = ChangeKind.BROKE
        elif RANK.get(vb, 9) < RANK.get(va, 9):
            kind = ChangeKind.IMPROVED
        elif RANK.get(vb, 9) > RANK.get(va, 9):
            kind = ChangeKind.REGRESSED
        elif fixed or broke:
            kind = ChangeKind.OPS_CHANGED
        else:
            continue
        changes.append(Change(name, kind, va, vb, fixed, broke, b.get("error", "")))
    order = list(ChangeKind)
    return sorted(changes, key=lambda c: (order.index(c.kind), c.model))


@dataclass(frozen=True)
class OpChange:
    """One model traced completely in both runs whose traced ops differ (op names, or the phases of
    a training step an op is seen in: its matrix cell)."""

    model: str
    gone: tuple[str, ...] = ()       # ops only the old run traced
    added: tuple[str, ...] = ()      # ops only the new run traced
    cells: tuple[tuple[str, str, str], ...] = ()   # (op, old cell, new cell) of ops in both, cell changed


def op_changes(old: dict, new: dict) -> tuple[int, list[OpChange]]:
    """The op sets of the models complete (status ok) in both runs: how many were compared, and the
    models whose ops or cells differ, by model name. Op sets do not depend on the coverage release,
    so this tells a change of the tracer from a change of the database."""
    before = {m["name"]: m for m in old["models"] if m.get("status") == TraceStatus.OK}
    after = {m["name"]: m for m in new["models"] if m.get("status") == TraceStatus.OK}
    both = sorted(set(before) & set(after))
    changes = []
    for name in both:
        a, b = before[name].get("op_cells", {}), after[name].get("op_cells", {})
        cells = tuple((op, a[op], b[op]) for op in sorted(set(a) & set(b)) if a[op] != b[op])
        change = OpChange(name, tuple(sorted(set(a) - set(b))), tuple(sorted(set(b) - set(a))), cells)
        if change.gone or change.added or change.cells:
            changes.append(change)
    return len(both), changes


def render_text(changes: list[Change], old: dict, new: dict) -> str:
    """Plain-text diff report, grouped by kind."""
    def side(doc: dict) -> str:
        meta = doc.get("meta", {})
        return f"{meta.get('backend', '?')} (torch {meta.get('tools', {}).get('torch', '?')})"

    lines = [f"zoo diff: {side(old)} -> {side(new)}"]
    if not changes:
        lines.append("no model changed")
    for kind, meaning in KINDS.items():
        group = [c for c in changes if c.kind == kind]
        if not group:
            continue
        lines.append(f"{kind} ({len(group)}): {meaning}")
        for c in group:
            detail = f"{c.old or '-'} -> {c.new or '-'}"
            if c.fixed:
                detail += f"; fixed: {', '.join(c.fixed)}"
            if c.new_blockers:
                detail += f"; now blocked by: {', '.join(c.new_blockers)}"
            if c.error and c.new in (RowVerdict.FAILED, "incomplete"):
                detail += f"; error: {c.error}"
            lines.append(f"  {c.model}: {detail}")
    return "\n".join(lines) + "\n"


def to_dict(changes: list[Change]) -> dict:
    return {"schema": "opscan-zoo-diff/1",
            "changes": [{"model": c.model, "kind": c.kind, "old": c.old, "new": c.new, "fixed": list(c.fixed),
                         "new_blockers": list(c.new_blockers), "error": c.error} for c in changes]}
