"""Terminal section: the port-task list as one compact table, with the total in engineer-days."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from opscan.model import Report
from opscan.reporters.tasklist import PRIORITY, sites_by_file, task_effort, total

_PRIORITY_STYLE = {1: "red", 2: "yellow", 3: "green"}


def _where(report: Report, index: int) -> str:
    files = sites_by_file(report.tasks[index])
    if not files:
        return ""
    shown = ", ".join(f"{path}:{','.join(map(str, lines[:3]))}{'…' if len(lines) > 3 else ''}"
                      for path, lines in files[:2])
    return shown + (f" (+{len(files) - 2} files)" if len(files) > 2 else "")


def section(report: Report, console: Console) -> None:
    """Print the task table; nothing when there are no tasks."""
    if not report.tasks:
        return
    table = Table(title=Text(f"Port tasks — {total(report)}", style="bold"),
                  title_justify="left", show_edge=False, pad_edge=False, expand=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("task", overflow="fold", ratio=1)
    table.add_column("priority", no_wrap=True)
    table.add_column("effort (range)", justify="right", no_wrap=True)
    for i, task in enumerate(report.tasks):
        body = Text(task.title.replace("`", ""))
        where = _where(report, i)
        if where:
            body.append(f"\n{where}", style="dim")
        table.add_row(str(i + 1), body,
                      Text(PRIORITY.get(task.priority, "?"), style=_PRIORITY_STYLE.get(task.priority, "")),
                      task_effort(task, report.hours_per_day))
    console.print(table)
    console.print(Text("  details: --format markdown (every site, why, sources), --format dot (graph)",
                       style="dim"))
    console.print()
