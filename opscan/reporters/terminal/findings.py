"""Terminal section: findings grouped by file, each with its source line and its TorchNeuron fix."""

from __future__ import annotations

from itertools import groupby

from rich.console import Console, Group, NewLine, RenderableType
from rich.text import Text

from opscan.records import Finding, Report
from opscan.reporters.terminal.grid import FindingsGrid
from opscan.reporters.terminal.location import fit

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "note": "cyan"}
SNIPPET_MAX = 88


def _where(finding: Finding) -> str:
    loc = finding.location
    if loc.cell is not None:
        return f"cell {loc.cell}:line {loc.line}"
    return f"{loc.line}:{loc.column}"


def _body(finding: Finding, show_fix: bool, snippet_max: int = SNIPPET_MAX) -> Text:
    body = Text(finding.message)
    if finding.guarded:
        body.append("  [guarded]", style="dim")
    if finding.fixable:   # `opscan fix` rewrites it (docs/fix.md)
        body.append("  [fixable]", style="green")
    snippet = finding.snippet.strip()
    if snippet:
        if len(snippet) > snippet_max:
            snippet = snippet[:snippet_max - 1] + "…"
        body.append(f"\n│ {snippet}", style="dim")
    if show_fix and finding.fix:
        body.append("\nfix: ", style="green")
        body.append(finding.fix)
    return body


def section(report: Report, console: Console) -> None:
    """Print every finding under its file; a fix is shown once per run of identical fixes in a file."""
    if not report.findings:
        return
    findings = sorted(report.findings, key=Finding.sort_key)
    snippet_max = min(SNIPPET_MAX, console.width - 26)   # one line beside "  12:5 OPS101 warning "
    files = len({f.location.path for f in findings})
    # one print of the whole section: the same lines as a print of each part (~0.03-0.09 ms a print)
    parts: list[RenderableType] = [
        Text(f"Findings — {len(findings)} in {files} file{'s' if files != 1 else ''}", style="bold")]
    for path, group in groupby(findings, key=lambda f: f.location.path):
        parts.append(NewLine())
        parts.append(Text(fit(path, "", console.width), style="bold underline"))   # location.py
        rows = []   # printed as a Table.grid would print them: NOTE [the findings grid] in grid.py
        last_fix = None
        for finding in group:
            style = SEVERITY_STYLE.get(finding.severity, "")
            code = Text(finding.rule, style=style)
            code.append(f" {finding.severity}", style=style)
            rows.append((Text(" " + _where(finding)), code, _body(finding, finding.fix != last_fix, snippet_max)))
            last_fix = finding.fix
        parts.append(FindingsGrid(rows))
    parts.append(NewLine())
    console.print(Group(*parts))
