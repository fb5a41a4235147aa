"""Zoo markdown: summary, the ops to prioritise, one row per model, and an op x model excerpt."""

from __future__ import annotations

from typing import TextIO

from opscan.zoo.render.common import (
    blocking_ops,
    cell,
    cost_basis,
    explain,
    fallback,
    fallback_ops,
    headline,
    megabytes,
    matrix_ops,
    new_compiles,
    verdict_label,
)
from opscan.zoo.execution import ZooRun

MATRIX_OPS = 12


def _esc(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _sample(models: tuple[str, ...]) -> str:
    return ", ".join(models[:5]) + (" ..." if len(models) > 5 else "")


def render(run: ZooRun, out: TextIO) -> None:
    meta = run.meta
    tools = meta.get("tools", {})
    out.write("# opscan zoo\n\n")
    out.write(f"{headline(run)}.\n\n")
    out.write(f"torch {tools.get('torch', '?')}, transformers {tools.get('transformers', '?')}, "
              f"opscan {tools.get('opscan', '?')}; options {meta.get('options', {})}.\n\n")
    ops = blocking_ops(run)
    out.write("## Ops that block the most models\n\nOps that cannot run (unsupported) or whose status is "
              "unknown, by how many models they keep from running; *step* counts the models that dispatch "
              "the op on every training step.\n\n")
    if ops:
        out.write("| op | status | models | step | example models |\n|---|---|---:|---:|---|\n")
        for stat in ops:
            out.write(f"| `{stat.op}` | {stat.status} | {len(stat.models)} | {stat.step_models} "
                      f"| {_esc(_sample(stat.models))} |\n")
    else:
        out.write("None: every op met runs, on the device or on the CPU.\n")
    slow = fallback_ops(run)
    out.write("\n## Ops that may fall back to the CPU\n\nOps that run, but on the CPU (cpu-fallback) or "
              "perhaps (device-or-cpu: not listed, and the release documents a CPU fallback), most costly "
              "first: *MB/step* is what the op copies between host and device per training step in the "
              f"model where it costs most, {cost_basis(run)}.\n\n")
    if slow:
        out.write("| op | status | MB/step | models | step | example models |\n|---|---|---:|---:|---:|---|\n")
        for stat in slow:
            out.write(f"| `{stat.op}` | {stat.status} | {megabytes(stat.bytes_per_step)} | {len(stat.models)} "
                      f"| {stat.step_models} | {_esc(_sample(stat.models))} |\n")
    else:
        out.write("None.\n")
    out.write("\n## Models\n\n| model | verdict | status | ops | native | fallback | unsupported "
              "| unknown | new compiles per step | custom ops | stand-ins | s | why |\n"
              "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|---|\n")
    for row in run.rows:
        note = f" ({row.note})" if row.note else ""
        out.write(f"| {_esc(row.name)}{_esc(note)} | {verdict_label(row.verdict)} | {row.status} | {row.ops} "
                  f"| {row.native} | {fallback(row)} | {row.counts.get('unsupported', 0)} "
                  f"| {row.counts.get('unknown', 0)} | {new_compiles(row)} | {_esc(', '.join(row.custom_ops))} "
                  f"| {_esc('; '.join(row.stand_ins))} | {row.seconds:.1f} | {_esc(explain(row))} |\n")
    columns = matrix_ops(run, MATRIX_OPS)
    if columns:
        status = {s.op: s.status for s in run.ops}
        out.write(f"\n## Op x model matrix (first {len(columns)} of {len(run.ops)} ops)\n\n"
                  "Cell: status letter (N native, L limited, C composite, D device-or-cpu, F cpu-fallback, "
                  "X unsupported, ? unknown) and the phases that dispatch it (F forward, L loss, B backward, "
                  "O optimizer, I inference only).\n\n")
        out.write("| model | " + " | ".join(f"`{op}`" for op in columns) + " |\n")
        out.write("|---|" + "---|" * len(columns) + "\n")
        for row in run.rows:
            if row.op_cells:
                out.write(f"| {_esc(row.name)} | " + " | ".join(cell(row, op, status[op]) for op in columns) + " |\n")
