"""Terminal section: the top port tasks and their size, on the first screen under the verdict.

NOTE [the first screen]: at 80 columns and 24 lines a newcomer reads the answer before any detail:
the verdict (verdict.py), the first TOP tasks of the ordered list, one line each where the width
allows, with the likely effort (top.py), what was not checked, said once, and the caveats folded to
one line with their count (gaps.py). The details follow: every task with its sites (tasks.py),
findings, ops, torch.compile, the caveats in full (caveats.py), the summary.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from opscan.records import Report
from opscan.reporters.tasklist import PRIORITY, effort, total
from opscan.reporters.words import plural

TOP = 5
PRIORITY_STYLE = {1: "red", 2: "yellow", 3: "green"}


def longest_word(report: Report, console: Console) -> int:
    """NOTE [whole words]: rich wraps a cell at spaces and folds only a word longer than its column,
    mid-word; a task column at least as wide as the longest word of a title (an op name), up to half
    the console, never folds one."""
    words = [w for t in report.tasks for w in t.title.replace("`", "").split()]
    return min(max(map(len, words), default=1), console.width // 2)


def section(report: Report, console: Console) -> None:
    """Print the first TOP tasks (title, priority, likely effort) and how many more follow."""
    if not report.tasks:
        return
    console.print(Text(f"Port tasks — {total(report)}", style="bold"))
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="dim", expand=False)
    table.add_column("#", justify="right", no_wrap=True, style="dim")
    table.add_column("task", overflow="fold", ratio=1, min_width=longest_word(report, console))   # NOTE [whole words]
    table.add_column("priority", no_wrap=True)
    table.add_column("effort", justify="right", no_wrap=True)
    hours_per_day = report.hours_per_day or 8.0
    shown = report.tasks if len(report.tasks) <= TOP + 1 else report.tasks[:TOP]   # never "1 more"
    for i, task in enumerate(shown, 1):
        table.add_row(str(i), Text(task.title.replace("`", "")),
                      Text(PRIORITY.get(task.priority, "?"), style=PRIORITY_STYLE.get(task.priority, "")),
                      effort(task.effort_hours, hours_per_day) if task.sized else "not sized")
    console.print(table)
    rest = len(report.tasks) - len(shown)
    more = f"+ {plural(rest, 'more task')}; " if rest else ""
    console.print(Text(f"  {more}every task's effort range and sites are below", style="dim"))
    console.print()
