"""Terminal section: the verdict line, first thing on screen (its caveats are folded: caveats.py)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from opscan.records import Report
from opscan.reporters.tasklist import total
from opscan.reporters.words import plural

# Only "ready" is green: "likely" (unverified evidence) and "unchecked" (half not checked) are cautions.
STYLE = {"blocked": ("bold red", "✗"), "unknown": ("bold yellow", "?"), "fallback": ("bold yellow", "!"),
         "unchecked": ("bold yellow", "–"), "likely": ("bold yellow", "~"), "ready": ("bold green", "✓")}


def section(report: Report, console: Console) -> None:
    """Print the verdict's headline (what was not checked and the caveats follow the top tasks)."""
    judged = report.verdict
    if judged is None:   # a hand-built report without a verdict
        return
    style, mark = STYLE[judged.kind]
    hanging(console, f"{mark} ", judged.headline, style)
    console.print()


def hanging(console: Console, mark: str, text: str, style: str) -> None:
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
    tasks = len(report.tasks)
    text = judged.headline + (f" — {plural(tasks, 'port task')}, {total(report)}" if tasks else "")
    console.rule(style="dim")
    hanging(console, f"{mark} ", text, style)
