"""Terminal section: which model was traced without configuration, or which models opscan found.

Read from `Report.discovery` (opscan/targets/discovery.py); the TOML lines are the ones `opscan init` writes,
carried in the report (`Discovery.config_blocks`, `Discovery.factory_hint`): reporters never import discovery.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from opscan.records import Report

SHOWN = 5


def section(report: Report, console: Console) -> None:
    """Print the models found or refused; nothing when models were configured."""
    found = report.discovery
    if found is None:
        return
    traced = {t.target for t in report.traces if t.ops or t.complete}   # a model never built is not traced
    shown = [t for t in found.traced if t in traced]   # one not built, or refused, is said once: gaps.py
    for target in shown:
        console.print(Text(f"Model: {target} (found by opscan, traced with no configuration)", style="bold"))
    if shown:
        console.print()
    if found.traced or found.refused:
        return
    hint = found.factory_hint
    blocks = dict(zip(found.candidates, found.config_blocks))
    ready = [c for c in found.candidates if c.ready]
    other = [c for c in found.candidates if not c.ready]
    if not found.candidates:
        console.print(Text("No model found to trace (no model factory, nn.Module class, model folder or "
                           ".pt2 file). To check the ops, " + hint,
                           style="yellow"))
        console.print()
        return
    if ready:
        console.print(Text("Models found (read, not run). To trace them, add to pyproject.toml "
                           "(or run `opscan init`):", style="bold"))
        for cand in ready[:SHOWN]:
            where = f"  # {cand.path}:{cand.line}" if cand.line else f"  # {cand.kind}"
            block = blocks.get(cand, "").rstrip("\n").split("\n")
            console.print(Text(block[0] + where, style="cyan"), soft_wrap=True)
            for line in block[1:]:
                console.print(Text(line, style="cyan"), soft_wrap=True)
        if len(ready) > SHOWN:
            console.print(Text(f"  … and {len(ready) - SHOWN} more (`opscan init --dry-run` lists them all)",
                               style="dim"))
    if other:
        console.print(Text("Other model code found (needs a step before it can be traced):", style="bold"))
        for cand in other[:SHOWN]:
            where = f"{cand.path}:{cand.line}" if cand.line else cand.path
            console.print(Text(f"  {where}: {cand.note.splitlines()[0]}", style="dim"), soft_wrap=True)
        console.print(Text("  To trace those, " + hint.replace("\n", "\n  "), style="dim"), soft_wrap=True)
    console.print()
