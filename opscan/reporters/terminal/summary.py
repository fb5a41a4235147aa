"""Terminal section: counts of findings by category and severity, files scanned, and the run's notes."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.table import Table
from rich.text import Text

from opscan.records import CATEGORIES, SEVERITIES, Report
from opscan.reporters.terminal.verdict import hanging
from opscan.reporters.texts import blockers_words
from opscan.reporters.words import plural


def section(report: Report, console: Console) -> None:
    """Print the summary table (a clean scan says so) and the notes; a run that scanned no
    files (a trace alone) prints only its notes."""
    if not report.files_scanned and not report.findings:
        for note in report.notes:
            hanging(console, "note: ", note, "dim")
        return
    counts = Counter((f.category, f.severity) for f in report.findings)
    guarded = sum(1 for f in report.findings if f.guarded)
    known = report.baseline.known if report.baseline is not None else None
    new = "new " if known is not None else ""
    head = Text("Summary", style="bold")
    head.append(f" — {plural(report.files_scanned, 'file')} scanned, {plural(len(report.findings), new + 'finding')}",
                style="")
    if known is not None:
        head.append(f", {known} known (hidden by the baseline)", style="")
    if guarded:
        head.append(f" ({guarded} guarded)", style="dim")
    blockers = report.blockers   # the verdict's and the gate's count (NOTE [blockers] in opscan/assess/verdict.py)
    if blockers.count:   # with the headline's words, so the two read as one count
        head.append(f"; {plural(blockers.count, 'blocker')} ({blockers_words(blockers)})",
                    style="bold red")
    if report.tasks:   # the same count as the task list (NOTE [sites] in opscan/assess/verdict.py)
        sites = report.sites
        head.append(f"; {plural(sites, 'site')} in {plural(len(report.tasks), 'port task')}", style="")
    console.print(head)
    if report.findings:
        table = Table(show_edge=False, pad_edge=False, expand=False, box=None)
        table.add_column("category")
        for severity in SEVERITIES:
            table.add_column(severity, justify="right")
        table.add_column("total", justify="right")
        for category in CATEGORIES:
            row = [counts.get((category, s), 0) for s in SEVERITIES]
            if sum(row):
                table.add_row(category, *[str(n) if n else "·" for n in row], str(sum(row)))
        console.print(table)
    elif known:
        console.print(Text(f"No new findings: {known} known, hidden by the baseline {report.baseline.path}."))
    else:
        console.print(Text("No CUDA pins found.", style="green"))
    for note in report.notes:
        hanging(console, "note: ", note, "dim")
    fixable = report.fixable
    if fixable:   # last, as ruff ends with its fixable count (docs/fix.md)
        console.print(Text(f"{fixable} fixable with `opscan fix`", style="green"))
