"""Terminal section: the verdict line, first thing on screen, with its caveats (read from the report)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from opscan.records import Report
from opscan.reporters.tasklist import total

# Only "ready" is green: "likely" (unverified evidence) and "unchecked" (half not checked) are cautions.
STYLE = {"blocked": ("bold red", "✗"), "unknown": ("bold yellow", "?"), "fallback": ("bold yellow", "!"),
         "unchecked": ("bold yellow", "–"), "likely": ("bold yellow", "~"), "ready": ("bold green", "✓")}


def section(report: Report, console: Console) -> None:
    """Print the verdict and the caveats under it."""
    judged = report.verdict
    if judged is None:   # a hand-built report without a verdict
        return
    style, mark = STYLE[judged.kind]
    _hanging(console, f"{mark} ", judged.headline, style)
    if judged.step is not None:   # NOTE [the step answered for]
        _hanging(console, "  · ", f"step: {judged.step.text}", "dim")
    if judged.ops_checked:
        _hanging(console, "  · ", f"ops checked against {report.backend or 'an unknown backend release'}", "dim")
    for detail in judged.details:
        _hanging(console, "  · ", detail, "dim")
    if report.baseline is not None:
        stale = len(report.baseline.stale)
        if stale:
            console.print(Text(f"  · baseline {report.baseline.path}: {stale} stale entr{'y' if stale == 1 else 'ies'}",
                               style="dim"), soft_wrap=True)
        for entry in report.baseline.stale[:10]:
            console.print(Text(f"      stale: {entry}", style="dim"), soft_wrap=True)
        if stale > 10:
            console.print(Text(f"      … and {stale - 10} more (run `opscan baseline` to refresh)", style="dim"),
                          soft_wrap=True)
    console.print()


def _hanging(console: Console, mark: str, text: str, style: str) -> None:
    """`mark text`, wrapped at spaces to the console width under the text's first column (so a
    `path:line` in it stays whole: NOTE [whole locations] in location.py)."""
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column()
    grid.add_row(Text(mark, style=style), Text(text, style=style))
    console.print(grid)


def recap(report: Report, console: Console) -> None:
    """The verdict again as the last line (for terminals, where the details scroll it away)."""
    judged = report.verdict
    if judged is None:
        return
    style, mark = STYLE[judged.kind]
    text = judged.headline + (f" — {len(report.tasks)} port task(s), {total(report)}" if report.tasks else "")
    console.rule(style="dim")
    _hanging(console, f"{mark} ", text, style)
