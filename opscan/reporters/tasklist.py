"""Shared wording of the port-task list for the terminal, markdown and dot reporters."""

from __future__ import annotations

from opscan.records import Location, Report, Task

PRIORITY = {1: "blocker", 2: "every step", 3: "one-off"}


def effort(hours: float, hours_per_day: float = 8.0) -> str:
    """`3.5 h` below a day, `2.1 d` from a day up."""
    if hours < hours_per_day:
        return f"{hours:g} h"
    return f"{hours / hours_per_day:.1f} d"


def _span(low: float, likely: float, high: float, hours_per_day: float) -> str:
    """`2.6-7.2 h`, `1.1-3.6 d`: in the unit the likely value is shown in."""
    if likely < hours_per_day:
        return f"{round(low, 1):g}-{round(high, 1):g} h"
    return f"{low / hours_per_day:.1f}-{high / hours_per_day:.1f} d"


def task_effort(task: Task, hours_per_day: float = 8.0) -> str:
    """A task's likely effort with its range: `2.6 d (1.4-4.8 d)`; `not sized` when it has none."""
    if not task.sized:
        return "not sized"
    low, likely, high = task.effort_range
    if low == likely == high:
        return effort(likely, hours_per_day)
    return f"{effort(likely, hours_per_day)} ({_span(low, likely, high, hours_per_day)})"


def total(report: Report) -> str:
    """Total effort: `9.9 engineer-days likely (6.1-17.3)` (in hours below 0.05 days, which reads
    `0.0` in days: `0.28 engineer-hours likely (0.2-0.6)`), plus the tasks that are not sized."""
    totals = report.effort
    days = totals.days
    if 0 < totals.likely_hours < 0.05 * totals.hours_per_day:   # "0.0 engineer-days" says nothing: hours
        text = f"{round(totals.likely_hours, 2):g} engineer-hours likely"
        if totals.low_hours != totals.high_hours:
            text += f" ({round(totals.low_hours, 1):g}-{round(totals.high_hours, 1):g})"
    else:
        text = f"{days(totals.likely_hours):.1f} engineer-days likely"
        if totals.low_hours != totals.high_hours:
            text += f" ({days(totals.low_hours):.1f}-{days(totals.high_hours):.1f})"
    if totals.unsized:
        n = len(totals.unsized)
        text += f" + {n} task{'s' * (n != 1)} not sized"
    return text


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


def size(count: int) -> str:
    """Bytes as people read them: "6.0 MB", "12.3 kB", "512 B" (fallback costs)."""
    if count >= 100_000:
        return f"{count / 1e6:.1f} MB"
    return f"{count / 1e3:.1f} kB" if count >= 1000 else f"{count} B"
