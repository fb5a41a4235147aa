"""Shared wording of the port-task list for the terminal, markdown and dot reporters."""

from __future__ import annotations

from opscan.model import Location, Task

PRIORITY = {1: "blocker", 2: "every step", 3: "one-off"}


def effort(hours: float, hours_per_day: float = 8.0) -> str:
    """`3.5 h` below a day, `2.1 d` from a day up."""
    if hours < hours_per_day:
        return f"{hours:g} h"
    return f"{hours / hours_per_day:.1f} d"


def total(tasks: tuple[Task, ...], hours_per_day: float = 8.0) -> str:
    """Total effort as engineer-days."""
    days = sum(t.effort_hours for t in tasks) / (hours_per_day or 8.0)
    return f"{days:.1f} engineer-days"


def site(location: Location) -> str:
    """`path:line` (or `path:cell N:line L` for notebooks)."""
    if location.cell is not None:
        return f"{location.path}:cell {location.cell}:line {location.line}"
    return f"{location.path}:{location.line}"


def sites_by_file(task: Task) -> list[tuple[str, list[int]]]:
    """The task's sites grouped per file: [(path, [lines...])], sorted."""
    files: dict[str, list[int]] = {}
    for loc in task.sites:
        files.setdefault(loc.path, []).append(loc.line)
    return [(path, sorted(set(lines))) for path, lines in sorted(files.items())]
