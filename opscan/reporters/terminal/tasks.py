"""Terminal section: every port task with its effort range and its sites, in the details (the top
tasks lead the report: top.py)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from opscan.records import Report
from opscan.reporters.tasklist import PRIORITY, sites_by_file, task_effort, total
from opscan.reporters.terminal.location import budget, fit
from opscan.reporters.terminal.top import PRIORITY_STYLE, longest_word
from opscan.reporters.words import plural


# Columns of a task row besides the task text: number, priority, effort and the table's rules.
_OTHER_COLUMNS = 40


def _where(report: Report, index: int, width: int) -> str:
    """The first files of a task's sites, one `path:lines` a line, each fitted to `width`
    (NOTE [whole locations] in location.py): fewer line numbers before a shorter path."""
    files = sites_by_file(report.tasks[index])
    shown = []
    for path, lines in files[:2]:
        suffixes = [f":{','.join(map(str, lines[:3]))}{'…' if len(lines) > 3 else ''}"]
        if len(lines) > 1:
            suffixes.append(f":{lines[0]}…")
        suffix = next((s for s in suffixes if len(path.rpartition("/")[2] + s) <= width), suffixes[-1])
        shown.append(fit(path, suffix, width))
    if len(files) > 2:
        shown.append(f"(+{plural(len(files) - 2, 'file')})")
    return "\n".join(shown)


def section(report: Report, console: Console) -> None:
    """Print the task table; nothing when there are no tasks."""
    if not report.tasks:
        return
    table = Table(title=Text(f"Port tasks and their sites — {total(report)}", style="bold"),
                  title_justify="left", show_edge=False, pad_edge=False, expand=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("task", overflow="fold", ratio=1, min_width=longest_word(report, console))   # NOTE [whole words]
    table.add_column("priority", no_wrap=True)
    table.add_column("effort (range)", justify="right", no_wrap=True)
    for i, task in enumerate(report.tasks):
        body = Text(task.title.replace("`", ""))
        where = _where(report, i, budget(console, _OTHER_COLUMNS))
        if where:
            body.append(f"\n{where}", style="dim")
        table.add_row(str(i + 1), body,
                      Text(PRIORITY.get(task.priority, "?"), style=PRIORITY_STYLE.get(task.priority, "")),
                      task_effort(task, report.hours_per_day))
    console.print(table)
    console.print(Text("  details: --format markdown (every site, why, sources), --format dot (graph)",
                       style="dim"))
    console.print()
