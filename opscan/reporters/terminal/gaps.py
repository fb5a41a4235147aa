"""Terminal section: what the answer does not cover, said once, and its caveats folded to one line
(NOTE [the first screen] in top.py; the caveats in full: caveats.py)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from opscan.records import Report
from opscan.reporters.terminal.verdict import hanging
from opscan.reporters.words import plural


def caveat_count(report: Report) -> int:
    """The caveats caveats.py lists: the verdict's, the stand-in step, stale baseline entries (one)."""
    judged = report.verdict
    if judged is None:
        return 0
    stale = report.baseline is not None and bool(report.baseline.stale)
    return len(judged.caveats) + (judged.step is not None) + stale


def section(report: Report, console: Console) -> None:
    """Print what was not checked, a line each, then one line: the release the ops were checked
    against and the caveats' count."""
    judged = report.verdict
    if judged is None:
        return
    for line in judged.not_checked:
        hanging(console, "– ", line, "yellow")
    said = []
    if judged.ops_checked and any(t.ops for t in report.traces):
        said.append(f"ops checked against {report.backend or 'an unknown backend release'}")
    count = caveat_count(report)
    if count:
        said.append(f"{plural(count, 'caveat')} (under Caveats, below)")
    if said:
        console.print(Text(" · ".join(said), style="dim"))
    if judged.not_checked or said:
        console.print()
