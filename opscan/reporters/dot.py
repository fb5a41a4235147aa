"""The port-task graph in Graphviz dot: one node per task, an edge per dependency."""

from __future__ import annotations

from typing import TextIO

from opscan.model import Report
from opscan.reporters.tasklist import PRIORITY, effort

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
            f"{PRIORITY.get(task.priority, '?')} · {effort(task.effort_hours, report.hours_per_day)}"
        lines.append(f'  {_quote(task.id)} [label="{label}", fillcolor="{_COLOUR.get(task.priority, "#ffffff")}"];')
    for task in report.tasks:
        for dep in task.depends_on:
            lines.append(f"  {_quote(dep)} -> {_quote(task.id)};")
    lines.append("}")
    out.write("\n".join(lines) + "\n")
