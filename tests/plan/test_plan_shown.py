"""What users see of ranges and unsized tasks: terminal, markdown and JSON say the same totals."""

from __future__ import annotations

import io
import json

from rich.console import Console

from tests.support import sample

from opscan.records import Finding, Location
from opscan.reporters import render
from opscan.reporters.terminal import tasks as task_section


def _with_uncatalogued():
    extra = Finding("OPS900", "my-lib", "cuda-only-lib", "error", "m", Location("x.py", 1), task="library",
                    subject="mycudalib")
    return sample.report(findings=(*sample.findings(), extra))


def _text(fmt, report):
    out = io.StringIO()
    render(fmt, report, out)
    return out.getvalue()


def test_unsized_task_is_shown_and_left_out_of_every_total():
    report = _with_uncatalogued()
    doc = json.loads(_text("json", report))
    task = next(t for t in doc["tasks"] if t["id"] == "library:mycudalib")
    assert task["sized"] is False and task["effort_hours"] == 0
    assert doc["summary"]["unsized_tasks"] == ["library:mycudalib"]
    sized = [t for t in doc["tasks"] if t["sized"]]
    assert doc["summary"]["effort_low_hours"] == round(sum(t["effort_low_hours"] for t in sized), 2)
    assert doc["summary"]["effort_high_hours"] == round(sum(t["effort_high_hours"] for t in sized), 2)
    assert doc["summary"]["effort_low_hours"] < doc["summary"]["effort_hours"] < doc["summary"]["effort_high_hours"]

    out = io.StringIO()
    task_section.section(report, Console(file=out, width=140, color_system=None))
    terminal = out.getvalue()
    low, likely, high = (doc["summary"][k] / 8 for k in ("effort_low_hours", "effort_hours", "effort_high_hours"))
    assert f"{likely:.1f} engineer-days likely ({low:.1f}-{high:.1f}) + 1 task not sized" in terminal
    assert "not sized" in next(line for line in terminal.splitlines() if "mycudalib" in line)

    markdown = _text("markdown", report)
    assert "Not sized (no catalog entry): `library:mycudalib`." in markdown
    assert "| not sized |" in markdown


def test_each_task_row_shows_likely_and_range():
    report = sample.report()
    markdown = _text("markdown", report)
    for task in report.tasks:
        low, likely, high = task.effort_range
        assert low < likely < high
    kernel = next(t for t in report.tasks if t.id == "kernel:selective_scan")
    low, likely, high = (h / 8 for h in kernel.effort_range)
    assert f"| {likely:.1f} d ({low:.1f}-{high:.1f} d) |" in markdown
