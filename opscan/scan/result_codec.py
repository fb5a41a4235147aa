"""A FileResult as JSON-able data and back: the form the scan cache and its tree index store
(scan/cache.py). Fields at their default are left out (a tree's index holds thousands of results,
most of them with no finding), so the decoder fills in what is absent."""

from __future__ import annotations

from typing import Any

from opscan.records import Finding, Location
from opscan.scan.facts import decode_facts, encode_facts
from opscan.scan.results import FileResult, Suppression


def encode_result(result: FileResult) -> dict[str, Any]:
    """A FileResult as JSON-able data (for the cache)."""
    path = result.path
    out: dict[str, Any] = {"path": path}
    if result.findings:
        out["findings"] = [[f.rule, f.name, f.category, f.severity, f.message, f.location.path, f.location.line,
                            f.location.column, f.location.end_line, f.location.end_column, f.location.cell, f.fix,
                            f.guarded, f.snippet, f.task, f.subject, f.fixable] for f in result.findings]
    if result.requires:
        out["requires"] = [list(r) for r in result.requires]
    if result.suppressions:
        out["suppressions"] = [[s.line, list(s.codes), list(s.used), s.text] for s in result.suppressions]
    if not result.scanned:
        out["scanned"] = False
    if result.lines:
        out["lines"] = result.lines
    facts = encode_facts(result.facts, path)
    if facts is not None:
        out["facts"] = facts
    if not result.parsed:
        out["parsed"] = False
    if result.marked:
        out["marked"] = True
    for name in ("exports", "imports", "modules"):
        if getattr(result, name):
            out[name] = _words(getattr(result, name))
    if result.notes:
        out["notes"] = list(result.notes)
    for name in ("fix_needs", "demos", "members"):
        if getattr(result, name):
            out[name] = [list(item) for item in getattr(result, name)]
    return out


def decode_result(data: dict[str, Any]) -> FileResult:
    """The inverse of encode_result. A warm scan decodes a whole tree's results (thousands, most of
    them with nothing but a path), so each absent field costs one dict lookup and nothing more."""
    path = data["path"]
    if type(path) is not str:   # not one of ours: the cache reads it as corrupt and scans the file again
        raise ValueError(f"not an encoded result: path {path!r}")
    get = data.get
    findings: tuple[Finding, ...] = ()
    if "findings" in data:
        findings = tuple(
            Finding(rule=f[0], name=f[1], category=f[2], severity=f[3], message=f[4],
                    location=Location(f[5], f[6], f[7], f[8], f[9], f[10]), fix=f[11], guarded=f[12],
                    snippet=f[13], task=f[14], subject=f[15], fixable=bool(f[16]) if len(f) > 16 else False)
            for f in data["findings"])
    suppressions: tuple[Suppression, ...] = ()
    if "suppressions" in data:
        suppressions = tuple(Suppression(path, s[0], tuple(s[1]), tuple(s[2]), str(s[3]) if len(s) > 3 else "")
                             for s in data["suppressions"])
    return FileResult(
        path, findings, _tuples(get("requires")), suppressions, get("scanned", True), get("lines", 0),
        _unwords(get("exports")), _unwords(get("imports")),
        decode_facts(get("facts"), path), get("parsed", True), bool(get("marked", False)),
        tuple(str(n) for n in data["notes"]) if "notes" in data else (), _tuples(get("fix_needs")),
        tuple((int(a), int(b)) for a, b in data["demos"]) if "demos" in data else (), _unwords(get("modules")),
        tuple((str(a), str(b), int(c), str(d)) for a, b, c, d in data["members"]) if "members" in data else ())


def _words(names: tuple[str, ...]) -> str | list[str]:
    """Dotted names as one space-separated string (a tree's index parses several times faster than
    with a list of strings each); a list when a name is empty or holds a space."""
    if all(name and " " not in name for name in names):
        return " ".join(names)
    return list(names)


def _unwords(value: str | list[str] | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(value.split(" ")) if isinstance(value, str) else tuple(value)


def _tuples(rows: list[list[Any]] | None) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(row) for row in rows) if rows else ()
