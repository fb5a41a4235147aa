"""Terminal section: what `opscan run` ran, first on screen (steps, where its ops run, stand-ins),
before the verdict of the source and the details. Nothing for a report without a script run."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from opscan.records import ModelTrace, Report, joined_stop, status_of


def runs(report: Report) -> list[ModelTrace]:
    """The traces of script runs (`opscan run`): those that carry the steps the script took."""
    return [t for t in report.traces if t.steps is not None]


def where_ops_run(trace: ModelTrace, report: Report) -> dict[str, int]:
    """The run's distinct device ops by where they run: on the device, may fall back to the CPU,
    rejected by the backend, unknown (the status facts of records/vocabulary.py)."""
    coverage = {c.op: c.status for c in report.coverage}
    out = {"device": 0, "fallback": 0, "rejected": 0, "unknown": 0}
    for usage in trace.ops:
        status = status_of(coverage.get(usage.op))
        if status.name.unchecked:
            out["unknown"] += 1
        elif status.blocks:
            out["rejected"] += 1
        elif status.may_fall_back:
            out["fallback"] += 1
        else:
            out["device"] += 1
    return out


def section(report: Report, console: Console) -> None:
    """`Run of train.py on neuron: 1 optimizer step, ...`, then the ops by where they run."""
    for trace in runs(report):
        name = trace.target.removeprefix("script:")
        steps = f"{trace.steps} optimizer step{'s' if trace.steps != 1 else ''}"
        ended = f"{steps} run" if trace.complete else f"stopped early after {steps}"
        said = not trace.complete and report.verdict is not None   # why: under the verdict, said once
        head = Text(f"Run of {name} on {trace.device}: {ended}" + (" (why: under the verdict)" if said else ""),
                    style="bold" if trace.complete else "bold yellow")
        console.print(head)
        if not trace.complete and not said:
            console.print(Text(f"  stopped: {joined_stop(trace.stopped_at, trace.stop_hint)}", style="yellow"))
        counts = where_ops_run(trace, report)
        parts = [f"{counts['device']} on the device", f"{counts['fallback']} may fall back to the CPU",
                 f"{counts['unknown']} unknown"] + ([f"{counts['rejected']} rejected"] if counts["rejected"] else [])
        console.print(Text(f"  ops: {len(trace.ops)} — " + ", ".join(parts)))
        invented = sum(s.count for s in trace.stand_ins)
        console.print(Text(f"  stand-ins used: {invented}" + (
            f" ({len(trace.stand_ins)} value{'s' if len(trace.stand_ins) != 1 else ''} invented; "
            "the branch a real run takes may differ: see Ops)" if invented else ""),
            style="yellow" if invented else ""))
        if trace.host_ops:
            console.print(Text(f"  host ops (data loading, metrics): {len(trace.host_ops)}, not checked", style="dim"))
        console.print(Text("  the source of the script's project follows", style="dim"))
        console.print()
