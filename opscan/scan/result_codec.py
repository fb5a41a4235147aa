"""A FileResult as JSON-able data and back: the form the scan cache stores (scan/cache.py)."""

from __future__ import annotations

from typing import Any

from opscan.records import Finding, Location
from opscan.scan.facts import decode_facts, encode_facts
from opscan.scan.results import FileResult, Suppression


def encode_result(result: FileResult) -> dict[str, Any]:
    """A FileResult as JSON-able data (for the cache)."""
    return {
        "path": result.path, "scanned": result.scanned, "lines": result.lines,
        "findings": [[f.rule, f.name, f.category, f.severity, f.message, f.location.path, f.location.line,
                      f.location.column, f.location.end_line, f.location.end_column, f.location.cell, f.fix,
                      f.guarded, f.snippet, f.task, f.subject, f.fixable] for f in result.findings],
        "requires": [list(r) for r in result.requires],
        "suppressions": [[s.line, list(s.codes), list(s.used), s.text] for s in result.suppressions],
        "exports": list(result.exports), "imports": list(result.imports),
        "facts": encode_facts(result.facts), "parsed": result.parsed,
        "marked": result.marked, "notes": list(result.notes), "fix_needs": [list(n) for n in result.fix_needs],
        "demos": [list(span) for span in result.demos], "modules": list(result.modules),
        "members": [list(member) for member in result.members],
    }


def decode_result(data: dict[str, Any]) -> FileResult:
    """The inverse of encode_result."""
    findings = tuple(
        Finding(rule=f[0], name=f[1], category=f[2], severity=f[3], message=f[4],
                location=Location(f[5], f[6], f[7], f[8], f[9], f[10]), fix=f[11], guarded=f[12], snippet=f[13],
                task=f[14], subject=f[15], fixable=bool(f[16]) if len(f) > 16 else False)
        for f in data["findings"])
    return FileResult(
        data["path"], findings, tuple(tuple(r) for r in data["requires"]),
        tuple(Suppression(data["path"], s[0], tuple(s[1]), tuple(s[2]), str(s[3]) if len(s) > 3 else "")
              for s in data["suppressions"]),
        data["scanned"], data["lines"], tuple(data.get("exports", ())), tuple(data.get("imports", ())),
        decode_facts(data.get("facts")), data.get("parsed", True), bool(data.get("marked", False)),
        tuple(str(n) for n in data.get("notes", ())), tuple(tuple(n) for n in data.get("fix_needs", ())),
        tuple((int(a), int(b)) for a, b in data.get("demos", ())), tuple(data.get("modules", ())),
        tuple((str(a), str(b), int(c), str(d)) for a, b, c, d in data.get("members", ())))
