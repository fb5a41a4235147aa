"""Terminal sections owned by the scan: findings by file with the source line, summary by category."""

from __future__ import annotations

import io

from rich.console import Console

from opscan.model import Finding, Location, Report
from opscan.reporters.terminal import findings, summary


def _render(report: Report) -> str:
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None, highlight=False, soft_wrap=False)
    findings.section(report, console)
    summary.section(report, console)
    return out.getvalue()


def _finding(path, line, rule="OPS101", category="device-string", severity="error", guarded=False):
    return Finding(rule=rule, name="n", category=category, severity=severity, message=f"msg {rule}",
                   location=Location(path, line, 5), fix="use dev", guarded=guarded, snippet=f"    code({line})")


def test_grouped_by_file_with_source_and_summary():
    report = Report(root="r", tool_version="0", files_scanned=4, findings=(
        _finding("b.py", 3), _finding("a.py", 10, "OPS203", "cuda-api", "warning", guarded=True), _finding("a.py", 2)))
    lines = [line.rstrip() for line in _render(report).splitlines()]
    text = "\n".join(lines)
    assert text.index("a.py") < text.index("b.py")
    assert "│ code(2)" in text and "fix: use dev" in text and "[guarded]" in text
    assert text.count("fix: use dev") == 2          # repeated fix in one file is shown once
    assert "Summary — 4 files scanned, 3 findings (1 guarded)" in text
    row = next(line for line in lines if line.startswith("device-string"))
    assert row.split() == ["device-string", "2", "·", "·", "2"]


def test_clean_report_says_so():
    text = _render(Report(root="r", tool_version="0", files_scanned=2, notes=("checked",)))
    assert "Findings" not in text and "No CUDA pins found." in text and "note: checked" in text
