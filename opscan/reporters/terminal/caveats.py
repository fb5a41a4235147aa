"""Terminal section: the caveats of the answer in full (the first screen folds them to a count:
gaps.py), near the end of the report; markdown and JSON carry the same lines."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from opscan.records import Report
from opscan.reporters.terminal.gaps import caveat_count
from opscan.reporters.terminal.verdict import hanging
from opscan.reporters.words import plural

STALE_SHOWN = 10


def section(report: Report, console: Console) -> None:
    """Print "Caveats (N)" and each one; nothing when there are none."""
    judged = report.verdict
    count = caveat_count(report)
    if judged is None or not count:
        return
    console.print(Text(f"Caveats ({count})", style="bold"))
    if judged.step is not None:   # NOTE [the step answered for]
        hanging(console, "  · ", f"step: {judged.step.text}", "dim")
    for detail in judged.caveats:
        hanging(console, "  · ", detail, "dim")
    baseline = report.baseline
    stale = baseline.stale if baseline is not None else ()
    if baseline is not None and stale:
        console.print(Text(f"  · baseline {baseline.path}: {plural(len(stale), 'stale entry', 'stale entries')}",
                           style="dim"), soft_wrap=True)
        for entry in stale[:STALE_SHOWN]:
            console.print(Text(f"      stale: {entry}", style="dim"), soft_wrap=True)
        if len(stale) > STALE_SHOWN:
            console.print(Text(f"      … and {len(stale) - STALE_SHOWN} more (run `opscan baseline` to refresh)",
                               style="dim"), soft_wrap=True)
    console.print()
