"""The port-task graph in Graphviz dot: one node per task, an edge per dependency."""

from __future__ import annotations

from typing import TextIO

from opscan.records import Report
from opscan.reporters.tasklist import PRIORITY, task_effort

_COLOUR = {1: "#f4cccc", 2: "#fff2cc", 3: "#d9ead3"}


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("`", "")


def _quote(text: str) -> str:
    return f'"{_escape(text)}"'


def render(report: Report, out: TextIO) -> None:
    """Write the task graph (`dot -Tsvg` renders it)."""
    lines = ["digraph opscan_tasks {", "  rankdir=LR;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica"];']
    for task in report.tasks:
        label = _escape(task.title) + "\\n" + \
            f"{PRIORITY.get(task.priority, '?')} · {task_effort(task, report.hours_per_day)}"
        lines.append(f'  {_quote(task.id)} [label="{label}", fillcolor="{_COLOUR.get(task.priority, "#ffffff")}"];')
    for task in report.tasks:
        for dep in task.depends_on:
            reason = task.reason_for(dep)
            label = f" [tooltip={_quote(reason)}]" if reason else ""
            lines.append(f"  {_quote(dep)} -> {_quote(task.id)}{label};")
    lines.append("}")
    out.write("\n".join(lines) + "\n")
