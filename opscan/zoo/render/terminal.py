"""Zoo terminal summary: verdict counts, the ops to prioritise, failures, and the model table."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.table import Table

from opscan.zoo.render.common import (blocking_ops, cost_basis, explain, fallback, fallback_ops, headline,
                                      megabytes, verdict_label)
from opscan.zoo.execution import ZooRun

TOP_OPS = 15


def render(run: ZooRun, out: TextIO, width: int | None = None) -> None:
    console = Console(file=out, width=width or 120, color_system=None if not out.isatty() else "auto",
                      highlight=False)
    table = Table(title="models", show_lines=False)
    for header in ("model", "verdict", "status", "ops", "native", "fallback", "unsup", "unknown", "s", "why"):
        table.add_column(header, justify="right" if header in ("ops", "native", "fallback", "unsup", "unknown", "s")
                                 else "left",
                         overflow="fold")
    for row in run.rows:
        table.add_row(row.name + (f" ({row.note})" if row.note else ""), verdict_label(row.verdict), row.status,
                      str(row.ops), str(row.native), str(fallback(row)),
                      str(row.counts.get("unsupported", 0)), str(row.counts.get("unknown", 0)),
                      f"{row.seconds:.1f}", explain(row))
    console.print(table)
    ops = blocking_ops(run)
    if ops:
        top = Table(title=f"ops that block the most models (top {min(TOP_OPS, len(ops))} of {len(ops)})")
        for header in ("op", "status", "models", "every step"):
            top.add_column(header, justify="right" if header in ("models", "every step") else "left")
        for stat in ops[:TOP_OPS]:
            top.add_row(stat.op, stat.status, str(len(stat.models)), str(stat.step_models))
        console.print(top)
    slow = fallback_ops(run)
    if slow:
        table = Table(title=f"ops that may fall back to the CPU (top {min(TOP_OPS, len(slow))} of {len(slow)})")
        for header in ("op", "status", "MB/step", "models", "every step"):
            table.add_column(header, justify="left" if header in ("op", "status") else "right")
        for stat in slow[:TOP_OPS]:
            table.add_row(stat.op, stat.status, megabytes(stat.bytes_per_step), str(len(stat.models)),
                          str(stat.step_models))
        console.print(table)
        console.print(f"MB/step: {cost_basis(run)}")
    meta = run.meta
    console.print(f"{headline(run)}")
    console.print(f"traced {meta.get('traced', 0)}, from trace cache {meta.get('trace_cache', 0)}, "
                  f"from row cache {meta.get('row_cache', 0)}; engine {meta.get('engine', 'local')}, "
                  f"{meta.get('workers', 1)} workers, {meta.get('wall_seconds', 0)} s")
