"""Renders a ParityResult: the JSON record and the terminal report with its rich chart."""

from __future__ import annotations

import json
import math
from typing import TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from opscan.workflow.parity import ParityResult, StepRow

SCHEMA_VERSION = 1
_BLOCKS = "▁▂▃▄▅▆▇█"
_CHART_WIDTH = 60
_CHART_HEIGHT = 6
_TABLE_FULL = 30            # show every row up to this many; beyond, a selection


def _num(value: float | None) -> float | str | None:
    """A JSON-safe number: non-finite values become the strings "nan", "inf", "-inf"."""
    if value is None:
        return None
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def to_dict(result: ParityResult) -> dict:
    """The stable JSON record (key order is part of the contract; see docs/workflow.md)."""
    drift = result.drift
    return {
        "schema_version": SCHEMA_VERSION,
        "ok": result.ok,
        "baseline": {"path": result.baseline.path, "format": result.baseline.format,
                     "steps": len(result.baseline.losses)},
        "candidate": {"path": result.candidate.path, "format": result.candidate.format,
                      "steps": len(result.candidate.losses)},
        "tolerance": result.tolerance.absolute,
        "rel_tolerance": result.tolerance.relative,
        "tolerance_source": result.tolerance.source,
        "steps_requested": list(result.steps_requested) if result.steps_requested else None,
        "steps_compared": len(result.rows),
        "rows": [
            {"step": r.step, "baseline": _num(r.baseline), "candidate": _num(r.candidate),
             "delta": _num(r.delta), "ok": r.ok, "allowed": _num(r.allowed), "note": r.note}
            for r in result.rows
        ],
        "failed_steps": [r.step for r in result.rows if not r.ok],
        "first_divergence_step": result.first_divergence_step,
        "drift": drift.kind,
        "drift_statistics": {
            "points": drift.points,
            "floor": drift.floor,
            "max_abs_delta": drift.max_abs_delta,
            "max_abs_delta_step": drift.max_abs_delta_step,
            "mean_abs_delta": drift.mean_abs_delta,
            "first_gap_step": drift.first_gap_step,
            "slope": drift.slope,
            "intercept": drift.intercept,
            "r_squared": drift.r_squared,
            "early_mean": drift.early_mean,
            "late_mean": drift.late_mean,
            "late_over_early": _num(drift.late_over_early),
            "reason": drift.reason,
        },
        "only_in_baseline": list(result.only_in_baseline),
        "only_in_candidate": list(result.only_in_candidate),
        "require_same_steps": result.require_same_steps,
        "warnings": list(result.warnings),
    }


def render_json(result: ParityResult, out: TextIO, run: dict | None = None) -> None:
    """Write the record as indented JSON (strict: no NaN literals), newline-terminated.
    `run` (for `parity run`): the command and the two devices, added under the key "run"."""
    record = to_dict(result)
    if run is not None:
        record["run"] = run
    json.dump(record, out, indent=2, ensure_ascii=False, allow_nan=False)
    out.write("\n")


def _g(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("+inf" if value > 0 else "-inf")
    return f"{value:+.6g}" if signed else f"{value:.6g}"


def _distinct(a: float, b: float) -> tuple[str, str]:
    """Format two numbers with just enough digits to tell them apart (0.0020000000000000018 > 0.002)."""
    for digits in range(6, 18):
        left, right = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if left != right:
            return left, right
    return repr(a), repr(b)


def _selected(result: ParityResult) -> list[StepRow | None]:
    """The rows to print: all of them when few; else head, failures, tail (None = a gap)."""
    rows = list(result.rows)
    if len(rows) <= _TABLE_FULL:
        return rows
    keep = set(range(5)) | set(range(len(rows) - 5, len(rows)))
    failures = [i for i, r in enumerate(rows) if not r.ok]
    keep.update(failures[:10])
    if failures:
        keep.update(range(max(0, failures[0] - 2), failures[0]))
    peak = result.drift.max_abs_delta_step
    keep.update(i for i, r in enumerate(rows) if r.step == peak)
    out: list[StepRow | None] = []
    previous = -1
    for i in sorted(keep):
        if previous >= 0 and i - previous > 1:
            out.append(None)
        out.append(rows[i])
        previous = i
    return out


def _table(result: ParityResult) -> Table:
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for name in ("step", "baseline", "candidate", "delta", "allowed", ""):
        table.add_column(name, justify="right" if name not in ("",) else "left")
    for row in _selected(result):
        if row is None:
            table.add_row("...", "", "", "", "", "")
            continue
        mark = Text("ok", style="green") if row.ok else Text("FAIL", style="bold red")
        if row.note:
            mark.append(f"  {row.note}", style="dim")
        delta, allowed = _g(row.delta, True), _g(row.allowed)
        if not row.ok and row.delta is not None and _g(abs(row.delta)) == allowed:
            shown_delta, allowed = _distinct(abs(row.delta), row.allowed)
            delta = ("+" if row.delta >= 0 else "-") + shown_delta
        table.add_row(str(row.step), _g(row.baseline), _g(row.candidate), delta, allowed, mark)
    return table


def _buckets(rows: list[StepRow], width: int) -> list[list[StepRow]]:
    n = len(rows)
    count = min(width, n)
    return [rows[i * n // count:(i + 1) * n // count] for i in range(count)]


def _spark(values: list[float | None], low: float, high: float) -> Text:
    text = Text()
    span = high - low
    for value in values:
        if value is None:
            text.append("✗", style="bold red")
        else:
            level = 0 if span <= 0 else int((value - low) / span * (len(_BLOCKS) - 1) + 0.5)
            text.append(_BLOCKS[level])
    return text


def _mean_finite(values: list[float]) -> float | None:
    finite = [v for v in values if math.isfinite(v)]
    return math.fsum(finite) / len(finite) if len(finite) == len(values) and finite else None


def chart(result: ParityResult) -> list[Text]:
    """Both loss curves as sparklines, and |delta| as bars against the tolerance line."""
    rows = list(result.rows)
    buckets = _buckets(rows, _CHART_WIDTH)
    base = [_mean_finite([r.baseline for r in b]) for b in buckets]
    cand = [_mean_finite([r.candidate for r in b]) for b in buckets]
    finite = [v for v in base + cand if v is not None]
    lines: list[Text] = []
    low, high = (min(finite), max(finite)) if finite else (0.0, 0.0)
    label = 11
    lines.append(Text("baseline".ljust(label)) + _spark(base, low, high)
                 + Text(f"  {_g(low)}..{_g(high)}", style="dim"))
    lines.append(Text("candidate".ljust(label)) + _spark(cand, low, high))
    gaps = [max((abs(r.delta) for r in b if r.delta is not None), default=None) for b in buckets]
    bad = [any(not r.ok for r in b) for b in buckets]
    allowed = sorted(r.allowed for r in rows if r.allowed is not None)
    tol = allowed[len(allowed) // 2] if allowed else result.tolerance.absolute
    top = max([g for g in gaps if g is not None] + [tol]) or 1.0
    tol_row = min(_CHART_HEIGHT - 1, int(tol / top * _CHART_HEIGHT - 1e-9)) if tol > 0 else -1
    for level in range(_CHART_HEIGHT - 1, -1, -1):
        axis = f"{_g(top)}" if level == _CHART_HEIGHT - 1 else ("|delta|" if level == 0 else "")
        line = Text(axis.rjust(label - 1) + " ")
        for gap, failed in zip(gaps, bad):
            if gap is None:
                line.append("✗" if level == 0 else " ", style="bold red")
                continue
            filled = gap / top * _CHART_HEIGHT
            if level == tol_row and filled < level + 1:
                line.append("─", style="red" if failed else "yellow")
            elif filled >= level + 1 or (level == 0 and gap > 0 and filled < 1):
                char = "█" if filled >= level + 1 else _BLOCKS[max(0, int(filled * 8) - 1)]
                line.append(char, style="red" if failed else "green")
            elif level == tol_row:
                line.append("─", style="yellow")
            else:
                line.append(" ")
        if level == tol_row:
            line.append(f" tolerance {_g(tol)}" + (" (median band)" if result.tolerance.relative else ""),
                        style="yellow")
        lines.append(line)
    first, last = rows[0].step, rows[-1].step
    width = len(buckets)
    axis = f"step {first}".ljust(max(0, width - len(str(last)))) + str(last)
    if len(axis) > max(width, len(f"step {first} {last}")) or f"{first}{last}" in axis:
        axis = f"steps {first}..{last}"
    lines.append(Text(" " * label + axis, style="dim"))
    return lines


def render_terminal(result: ParityResult, console: Console, plot: bool = True,
                    run: dict | None = None) -> None:
    """Print the parity report: settings, per-step table, first divergence, drift, chart, verdict."""
    tol = result.tolerance
    if run is not None:
        console.print(Text(f"opscan parity run: {' '.join(run['command'])}", style="bold"))
        console.print(f"baseline TORCH_DEVICE={run['baseline_device']}, "
                      f"candidate TORCH_DEVICE={run['target_device']}")
    else:
        console.print(Text(f"opscan parity: {result.baseline.path} (baseline) vs "
                           f"{result.candidate.path} (candidate)", style="bold"))
    band = f"|delta| <= {_g(tol.absolute)}"
    if tol.relative:
        band += f" + {_g(tol.relative)} x |baseline|"
    console.print(f"tolerance: {band}  (from {tol.source})")
    which = ("steps " + ", ".join(map(str, result.steps_requested)) if result.steps_requested
             else "every step present in both logs")
    console.print(f"compared: {len(result.rows)} step(s) - {which}")
    console.print()
    console.print(_table(result))
    if len(result.rows) > _TABLE_FULL:
        console.print(Text(f"(showing a selection of {len(result.rows)} steps; "
                           "--format json lists all)", style="dim"))
    console.print()
    failed = [r for r in result.rows if not r.ok]
    if result.first_divergence_step is not None:
        row = failed[0]
        detail = row.note or "|delta| {} > {}".format(*_distinct(abs(row.delta), row.allowed))
        console.print(Text(f"first divergence: step {row.step} ({detail}); "
                           f"{len(failed)} of {len(result.rows)} step(s) outside tolerance",
                           style="bold red"))
    else:
        console.print(Text("first divergence: none", style="green"))
    drift = result.drift
    stats = []
    if drift.slope is not None:
        stats.append(f"slope {drift.slope:.3g}/step")
    if drift.r_squared is not None:
        stats.append(f"R^2 {drift.r_squared:.2f}")
    if drift.late_over_early is not None:
        stats.append("late/early " + ("inf" if math.isinf(drift.late_over_early)
                                      else f"{drift.late_over_early:.2f}x"))
    style = {"none": "green", "flat": "yellow", "growing": "bold red"}[drift.kind]
    console.print(Text(f"drift: {drift.kind}", style=style) + Text(f" - {drift.reason}"))
    if stats:
        console.print(Text("       " + ", ".join(stats), style="dim"))
    if drift.max_abs_delta is not None:
        console.print(Text(f"       max |delta| {_g(drift.max_abs_delta)} at step "
                           f"{drift.max_abs_delta_step}, mean {_g(drift.mean_abs_delta)}", style="dim"))
    for warning in result.warnings:
        console.print(Text(f"warning: {warning}", style="yellow"))
    if plot and result.rows:
        console.print()
        for line in chart(result):
            console.print(line, no_wrap=True, overflow="ignore", crop=False)
    console.print()
    if result.ok:
        console.print(Text("PARITY: the candidate matches the baseline within tolerance", style="bold green"))
    elif result.first_divergence_step is None:
        console.print(Text("NO PARITY: the step sets differ (--require-same-steps)", style="bold red"))
    else:
        console.print(Text(f"NO PARITY: diverges at step {result.first_divergence_step}", style="bold red"))
