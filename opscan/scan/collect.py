"""The files' results as one ScanResult: findings sorted, `fixable` from the rules where no
enrichment set it, the fix check applied (scan/fixes.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from opscan.records import Finding
from opscan.scan.facts import merge
from opscan.scan.fixes import check_fixes as _check_fixes
from opscan.scan.results import FileResult, ScanResult, Suppression
from opscan.scan.rules import Rule, RuleSet

if TYPE_CHECKING:
    from opscan.scan.fixes import TorchProbe


def collect(results: Sequence[FileResult], rules: RuleSet, check_fixes: bool,
             probe: TorchProbe | None = None) -> ScanResult:
    """The files' results as one ScanResult: findings sorted, `fixable` from the rules where no
    enrichment set it, the fix check applied, the files' notes after the run's."""
    by_id = {r.id: r for r in rules}
    findings: list[Finding] = []
    requires: list[tuple[str, ...]] = []
    needs: list[tuple[str, ...]] = []
    supps: list[Suppression] = []
    file_notes: list[str] = []
    scanned = lines = 0
    for result in results:
        scanned += result.scanned
        lines += result.lines
        findings.extend(result.findings if result.marked else _rule_marked(result.findings, by_id))
        requires.extend(result.requires or [()] * len(result.findings))
        needs.extend(result.fix_needs or [()] * len(result.findings))
        supps.extend(result.suppressions)
        file_notes.extend(result.notes)
    order = sorted(range(len(findings)), key=lambda i: findings[i].sort_key())
    findings = [findings[i] for i in order]
    requires = [requires[i] for i in order]
    needs = [needs[i] for i in order]
    notes: list[str] = []
    if check_fixes:
        findings = _unmark_missing(findings, needs, probe)
        findings, notes = _check_fixes(findings, requires, probe)
    return ScanResult(tuple(findings), scanned, tuple(sorted(supps, key=lambda s: (s.path, s.line))),
                      tuple(notes + file_notes), lines, merge(r.facts for r in results))


def _unmark_missing(findings: list[Finding], needs: list[tuple[str, ...]], probe: TorchProbe | None
                    ) -> list[Finding]:
    """`findings` with `fixable` unset where the rewrite relies on a torch name the installed torch
    lacks (asked once each, through `probe`; none asked when no fixable finding relies on one)."""
    wanted = sorted({name for f, names in zip(findings, needs) if f.fixable for name in names})
    if not wanted:
        return findings
    if probe is None:
        from opscan.scan.fixes import TorchProbe

        probe = TorchProbe()
    if not probe.installed:
        return findings
    missing = {name for name in wanted if not probe.has(name)}
    if not missing or not probe.installed:     # asking may find torch broken: then nothing is unmarked
        return findings
    return [replace(f, fixable=False) if f.fixable and missing.intersection(names) else f
            for f, names in zip(findings, needs)]


def _rule_marked(findings: tuple[Finding, ...], by_id: dict[str, Rule]) -> list[Finding]:
    """`fixable` from each finding's rule alone (`autofix`, docs/fix.md): the mark of a scan without
    the fixer's plan (`scan_memory`, rule examples; NOTE [fixable is what fix fixes] in fix/preview.py)."""
    out = []
    for f in findings:
        rule = by_id.get(f.rule)
        fixable = rule is not None and rule.autofix is not None and rule.autofix.fixes(f.subject, f.guarded)
        out.append(f if f.fixable == fixable else replace(f, fixable=fixable))
    return out
