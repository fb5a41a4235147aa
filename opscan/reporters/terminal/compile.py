"""Terminal section: torch.compile under TorchNeuron's rules (regions, graph breaks, options, ops
with no kernel inside) and compile seconds from the user's assumption (docs/compile.md)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from opscan.records import NoKernel, Report, Severity
from opscan.reporters.words import plural as _n


def section(report: Report, console: Console) -> None:
    """Print the torch.compile regions and the compile estimate; nothing when neither was found."""
    check, estimate = report.torch_compile, report.compile_estimate
    if check is None and estimate is None:
        return
    if check is not None:
        breaks = sum(r.graph_break_count for _t, r in check.regions if r.explained)
        head = Text("torch.compile", style="bold")
        head.append(f" — {_n(len(check.regions), 'compiled region')}, {_n(breaks, 'graph break')} "
                    "(torch._dynamo.explain on the CPU)", style="")
        console.print(head)
        for _target, r in check.regions:
            options = " ".join(f"{k}={v}" for k, v in r.options)
            line = Text(f"  {r.path}:{r.line}  {r.target}" + (f"  {options}" if options else ""))
            if r.explained:
                line.append(f"  {_n(r.graphs, 'graph')}, {_n(r.graph_break_count, 'break')}",
                            style="yellow" if r.graph_break_count else "green")
            else:
                line.append(f"  graph breaks not checked: {r.not_explained}", style="dim")
            console.print(line)
            for b in r.graph_breaks:
                times = f" (x{b.count})" if b.count > 1 else ""
                console.print(Text(f"    break at {b.path}:{b.line}{times}: {b.reason}", style="yellow"))
        for o in check.options:
            console.print(Text(f"  {o.path}:{o.line} {o.name}={o.value}: {o.effect} ({o.rule}; {o.source})",
                               style="red" if o.severity is Severity.ERROR else "yellow"))
        for o in check.no_kernel_ops:
            where = ", ".join(o.regions)
            if o.op in check.blocking_ops:
                console.print(Text(f"  {o.op} has no kernel inside the region at {where}: raises",
                                   style="bold red"))
            elif o.status.falls_back:
                console.print(Text(f"  {o.op} has no kernel inside the region at {where}: may raise "
                                   f"(no_kernel.compile: {check.no_kernel_compile})", style="yellow"))
            elif check.no_kernel_compile is not NoKernel.CPU_FALLBACK:
                console.print(Text(f"  {o.op} ({o.status}) inside the region at {where}: may raise if it has "
                                   "no kernel", style="yellow"))
        if check.no_kernel_ops:
            console.print(Text(f"  {check.fallback_rule} ({', '.join(check.fallback_sources)})", style="dim"))
    if estimate is not None:
        counted = ", ".join(f"{n} {what}" for what, n in estimate.counts)
        if estimate.seconds_per_signature is None:
            console.print(Text(f"compile time: unknown — {counted}; set compile-seconds-per-signature in "
                               "[tool.opscan.cost] to estimate it (an assumption, never measured)", style="dim"))
        else:
            total = ", ".join(f"{sec:g} s for {what}" for what, sec in estimate.seconds)
            console.print(Text(f"compile time, assumed {estimate.seconds_per_signature:g} s per signature "
                               f"([tool.opscan.cost]; not measured): {total}", style="dim"))
    console.print()
