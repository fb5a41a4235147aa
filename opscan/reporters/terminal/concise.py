"""The concise terminal view (the pre-commit hook's): one line per finding, then one summary line.

Not a section of the full report: `opscan scan --concise` prints it instead of the report, so a
commit shows what it adds and not the port plan (which stays behind `opscan PATH`).
"""

from __future__ import annotations

from typing import TextIO

from opscan.records import Finding, Report
from opscan.reporters.terminal.verdict import STYLE


def _line(finding: Finding) -> str:
    loc = finding.location
    where = f"{loc.path}:cell {loc.cell}:{loc.line}" if loc.cell is not None else f"{loc.path}:{loc.line}:{loc.column}"
    flags = "".join(tag for tag, on in ((" [guarded]", finding.guarded), (" [fixable]", finding.fixable)) if on)
    return f"{where}: {finding.rule} {finding.severity}: {finding.message}{flags}"


def render(report: Report, out: TextIO, failing: list[str], full: str = "opscan .") -> None:
    """Each finding as `path:line:col: CODE severity: message`, then one line: the counts, the
    verdict when something blocks or is open, the `--fail-on` conditions met, and `full`, the
    command that prints the whole report."""
    findings = sorted(report.findings, key=Finding.sort_key)
    for finding in findings:
        out.write(_line(finding) + "\n")
    files = len({f.location.path for f in findings})   # the files the findings are in, as the report's Findings header
    scanned = report.files_scanned
    if not findings:
        files = scanned
    parts = [f"opscan: {len(findings)} finding{'s' * (len(findings) != 1)} in {files} file{'s' * (files != 1)}"]
    fixable = report.fixable   # NOTE [fixable is what fix fixes] in opscan/fix/preview.py
    extra = ([f"{scanned} scanned"] if findings and scanned != files else []) + \
        ([f"{fixable} fixable with `opscan fix`"] if fixable else [])
    if extra:
        parts[0] += f" ({'; '.join(extra)})"
    verdict = report.verdict
    if verdict is not None and verdict.kind.found_problem:   # the source view's
        parts.append(f"{STYLE[verdict.kind][1]} {verdict.headline}")
    if failing:
        parts.append(f"fail-on {','.join(failing)}: exit 1")
    parts.append(f"the whole report and port plan: `{full}`")
    out.write(" — ".join(parts) + "\n")
