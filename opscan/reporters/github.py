"""GitHub Actions workflow-command annotations (`::error file=...,line=...::message`).

GitHub shows at most 10 annotations per level per step, so each level is sorted most important
first (unguarded before guarded, kernels and libraries before device pins, then by file and line);
past 9 the 10th annotation summarises the rest, and every annotation that did not fit is still
printed as a plain log line. The verdict (read from the report) opens the output: a notice when
ready, an error when blocked, a warning (a caution) for every other kind.
"""

from __future__ import annotations

from typing import TextIO

from opscan.records import Report
from opscan.reporters.sarif import uri
from opscan.reporters.words import plural

LIMIT = 10
_LEVEL = {"error": "error", "warning": "warning", "note": "notice"}
_CATEGORY_RANK = {"custom-kernel": 0, "cuda-only-lib": 1, "device-string": 2, "cuda-api": 3, "input": 4}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _command(level: str, message: str, file: str = "", line: int = 0, col: int = 0,
             end_line: int = 0, end_col: int = 0, title: str = "") -> str:
    props = []
    if file:
        props.append(f"file={_prop(file)}")
        if line:
            props.append(f"line={line}")
            if end_line and end_line >= line:
                props.append(f"endLine={end_line}")
        if col:
            props.append(f"col={col}")
            if end_col and end_line == line and end_col > col:
                props.append(f"endColumn={end_col}")
    if title:
        props.append(f"title={_prop(title)}")
    head = f"::{level}" + (" " + ",".join(props) if props else "")
    return f"{head}::{_data(message)}"


def _plain(command: str) -> str:
    """A workflow command as a plain log line (`error file=a.py,line=3: message`)."""
    head, _, message = command[2:].partition("::")
    return f"{head}: {message}"


def annotations(report: Report) -> dict[str, list[tuple[tuple, str]]]:
    """Per level, (sort key, command line) pairs."""
    out: dict[str, list[tuple[tuple, str]]] = {"error": [], "warning": [], "notice": []}
    for f in report.findings:
        loc = f.location
        level = _LEVEL.get(f.severity, "warning")
        key = (f.guarded, _CATEGORY_RANK.get(f.category, 5), loc.path, loc.line, loc.column, f.rule)
        message = f.message + (f" — fix: {f.fix}" if f.fix else "")
        if loc.cell is not None:   # a cell's line is not a line of the .ipynb JSON: name it, point at line 1
            message = f"cell {loc.cell}, line {loc.line}: {message}"
            command = _command(level, message, uri(report.root, loc.path), 1, 1, 0, 0, f"{f.rule} {f.name}")
        else:
            command = _command(level, message, uri(report.root, loc.path), loc.line, loc.column,
                               loc.end_line, loc.end_column, f"{f.rule} {f.name}")
        out[level].append((key, command))
    status = {c.op: c.status for c in report.coverage}
    seen: set[str] = set()
    for trace in report.traces:
        for usage in trace.ops:
            st = status.get(usage.op)
            if st is None or not (st.blocks or st.falls_back) or usage.op in seen:
                continue
            seen.add(usage.op)
            level = "error" if st.blocks else "warning"
            text = "is unsupported" if st.blocks else "runs on the CPU (fallback)"
            message = f"{usage.op} {text} on {report.backend or 'the backend'}; dispatched {usage.count}x"
            inside = [s for s in usage.sources if report.project_sources is None or s.path in report.project_sources]
            source = inside[0] if inside else None   # library frames: an annotation without a file
            key = (False, -1, source.path if source else "", source.line if source else 0, 0, usage.op)
            out[level].append((key, _command(level, message, uri(report.root, source.path) if source else "",
                                             source.line if source else 0, 0, 0, 0, f"op {usage.op}")))
    for level in out:
        out[level].sort(key=lambda pair: pair[0])
    return out


def render(report: Report, out: TextIO) -> None:
    """Write the annotations, most important first, with a summary past the per-level limit."""
    judged = report.verdict
    lines = []
    verdict_level = ""
    if judged is not None:   # a caution (warning) unless ready; an error when blocked
        verdict_level = "notice" if judged.kind.is_ready else "error" if judged.kind.blocks else "warning"
        step = [f"step: {judged.step.text}"] if judged.step is not None else []   # NOTE [the step answered for]
        lines.append(_command(verdict_level, judged.headline + "".join(f"; {d}" for d in [*step, *judged.details]),
                              title=f"opscan verdict: {judged.kind}"))
    overflow: list[str] = []
    for level, items in annotations(report).items():
        room = LIMIT - 1 if level == verdict_level else LIMIT   # the verdict takes one slot of its level
        if len(items) <= room:
            lines.extend(line for _, line in items)
            continue
        shown, rest = items[:room - 1], items[room - 1:]
        lines.extend(line for _, line in shown)
        lines.append(_command(level, f"{len(rest)} more {level} annotation{'s' * (len(rest) != 1)} not shown here "
                                     "(GitHub shows 10 per level); they follow in the log",
                              title=f"opscan: {len(rest)} more"))
        overflow.extend(_plain(line) for _, line in rest)
    if overflow:
        lines.append("opscan: annotations beyond the limit:")
        lines.extend("  " + line for line in overflow)
    if report.baseline is not None and report.baseline.stale:
        lines.append(f"opscan: {len(report.baseline.stale)} stale baseline entr"
                     f"{'y' if len(report.baseline.stale) == 1 else 'ies'} in {report.baseline.path} "
                     "(fixed since; re-run `opscan baseline` to drop them):")
        lines.extend(f"  {entry}" for entry in report.baseline.stale)
    totals = report.effort
    known = f", {report.baseline.known} known (baseline)" if report.baseline is not None else ""
    blockers = report.blockers.count   # NOTE [blockers] in opscan/assess/verdict.py
    lines.append(f"opscan: {plural(len(report.findings), 'new finding' if known else 'finding')}{known}, "
                 f"{plural(blockers, 'blocker')}, "
                 f"{plural(report.sites, 'site')} in {plural(len(report.tasks), 'port task')}, "
                 f"{totals.days(totals.likely_hours):.1f} engineer-days likely "
                 f"({totals.days(totals.low_hours):.1f}-{totals.days(totals.high_hours):.1f})")
    out.write("\n".join(lines) + "\n")
