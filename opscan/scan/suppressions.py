"""Unused suppressions (OPS003, like ruff's RUF100): `# opscan: ignore[...]` that suppresses nothing.

The scanner reports, per file, which lines carry suppression comments (line -> codes, "*" for a
bare `# opscan: ignore`) and which (line, code) pairs a suppression actually silenced. A code is
unused when nothing on its line was silenced for it; a bare ignore is unused when nothing on its
line was silenced at all. Codes of rules that are not active in this run (deselected with
`select`/`ignore`) are not judged; codes that name no rule at all are reported as unknown.

A job of the scan (`scan_paths(..., unused_suppressions=True)`, scan/tree.py): each Suppression
carries its line's text as the scan read it (scan/builder.py), so no file is read again for the
finding's snippet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from opscan.records import Category, Finding, Location, Severity, TaskKind

if TYPE_CHECKING:
    from opscan.scan.results import ScanResult, Suppression
    from opscan.scan.rules import RuleSet

CODE = "OPS003"
NAME = "unused-suppression"
ALL = "*"

# The rule itself (severity, docs, fix, examples) is data: rules/unused-suppression.yaml;
# `unused_suppression_findings` runs this check when that rule is selected.


def unused(path: str, declared: Mapping[int, frozenset[str]], used: Iterable[tuple[int, str]],
           active: Iterable[str], known: Iterable[str], texts: Mapping[int, str] | None = None) -> list[Finding]:
    """OPS003 findings for the suppressions in one file.

    Args:
        path: the file, relative to the scanned root.
        declared: line -> codes in the suppression comment on it ("*" for a bare ignore).
        used: (line, code) pairs a suppression silenced in this run.
        active: the rule codes that ran.
        known: every rule code opscan knows (built-in and extra rules, active or not).
        texts: line -> the text of a suppression's line, for the finding's snippet (optional).
    """
    used_by_line: dict[int, set[str]] = {}
    for line, code in used:
        used_by_line.setdefault(line, set()).add(code.upper())
    active_set = {c.upper() for c in active} | {CODE}
    known_set = {c.upper() for c in known} | {CODE}
    out: list[Finding] = []
    for line in sorted(declared):
        codes = declared[line]
        silenced = used_by_line.get(line, set())
        snippet = texts.get(line, "") if texts else ""
        if ALL in codes:
            if not silenced:
                out.append(_finding(path, line, "`# opscan: ignore` suppresses nothing on this line", snippet))
            continue
        stale = sorted(c for c in codes if c in active_set and c not in silenced and c != CODE)
        unknown = sorted(c for c in codes if c not in known_set)
        if stale:
            out.append(_finding(path, line, f"unused suppression of {', '.join(stale)}: no such finding "
                                            "on this line", snippet))
        if unknown:
            out.append(_finding(path, line, f"suppression names unknown rule code(s) {', '.join(unknown)}",
                                snippet))
    return out


def _finding(path: str, line: int, message: str, snippet: str) -> Finding:
    column = snippet.find("#") + 1 if "#" in snippet else 1
    return Finding(rule=CODE, name=NAME, category=Category.INPUT, severity=Severity.WARNING, message=message,
                   location=Location(path, line, column), snippet=snippet)


def unused_suppression_findings(result: ScanResult, rules: RuleSet, known: Iterable[str]) -> list[Finding]:
    """OPS003 findings (rules/unused-suppression.yaml) from the scan's per-file suppression usage.

    Args:
        result: the scan, with its suppressions and which codes they silenced.
        rules: the rules that ran; nothing is reported when the unused-suppression rule is not among them.
        known: every rule code opscan knows (built-in and extra rules, selected or not).
    """
    rule = rules.input_rule("unused-suppression")
    if rule is None:
        return []
    by_path: dict[str, list[Suppression]] = {}
    for item in result.suppressions:
        by_path.setdefault(item.path, []).append(item)
    active = {r.id for r in rules}
    out: list[Finding] = []
    for path, items in sorted(by_path.items()):
        if path.endswith(".ipynb"):   # suppression lines there are not cell lines: not judged
            continue
        declared = {s.line: frozenset(s.codes) for s in items}
        used = [(s.line, code) for s in items for code in s.used]
        texts = {s.line: s.text for s in items}
        for finding in unused(path, declared, used, active, set(known) | active, texts):
            out.append(replace(finding, rule=rule.id, name=rule.name, category=rule.category,
                               severity=Severity(rule.severity),
                               message=rule.format(rule.message, value=finding.message),
                               fix=rule.format(rule.fix), task=TaskKind(rule.task)))
    return out
