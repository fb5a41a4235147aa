"""Terminal section: the traced ops (count, phases, dtypes, first source) and their coverage."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from opscan.records import STATUS, Coverage, Mode, OpStatus, OpUsage, Report, joined_stop, status_of
from opscan.reporters.texts import containment_line
from opscan.reporters.json import merge_ops
from opscan.reporters.tasklist import size
from opscan.reporters.terminal.location import budget, fit
from opscan.reporters.terminal.verdict import hanging
from opscan.reporters.words import plural

_PHASE_SHORT = {"forward": "fwd", "loss": "loss", "backward": "bwd", "optimizer": "opt"}
WIDE = 150   # from this console width on, the first source gets its own column
OP_COLUMN = 48       # widest op column below WIDE
_NARROW_OTHER = 56   # the other columns of a narrow table (count, phases, dtypes, status, padding)
_WIDE_OTHER = 110    # the columns before "first source" in a wide table
_MODE_SHORT = {Mode.INFERENCE: "inf", Mode.TRAIN: "train"}


def _status_style(status: OpStatus) -> str:
    """Red blocks, green runs on the device with nothing to look at, dim is unchecked, else yellow."""
    if status.blocks:
        return "red"
    if not status.needs_attention:
        return "green"
    return "dim" if status is STATUS["unknown"] else "yellow"


def section(report: Report, console: Console) -> None:
    """Print each trace's header (completeness, stand-ins) and one table of every op."""
    traces = [t for t in report.traces if t.ops or t.complete]   # a model never built is in the verdict
    if not traces:
        return
    console.print(Text("Ops", style="bold"))
    if report.containment:   # which parts of the child's containment held (docs/reliability.md)
        held = all(state == "held" for _, state in report.containment)
        console.print(Text(f"  {containment_line(report.containment)}", style="dim" if held else "bold yellow"))
    for trace in traces:
        dispatches = sum(u.count for u in trace.ops)
        head = Text(f"  {trace.target}  ", style="bold")
        head.append(f"{trace.mode} on {trace.device}: {plural(len(trace.ops), 'op')}, "
                    f"{plural(dispatches, 'dispatch', 'dispatches')}",
                    style="")
        if trace.seconds:
            head.append(f", {trace.seconds:.1f}s", style="dim")   # one word: never wrapped apart from its unit
        console.print(head)
        if trace.built_by:
            console.print(Text(f"  {trace.built_by}", style="dim"))
        if not trace.complete:
            why = ("why: under the verdict" if report.verdict is not None
                   else joined_stop(trace.stopped_at, trace.stop_hint))   # said once
            console.print(Text(f"  ! the trace stopped early: the ops below are those seen until then ({why})",
                               style="bold yellow"))
        if trace.retried:
            console.print(Text(f"  ~ traced with {trace.retried}", style="yellow"))
        for op in trace.supplied_fakes:
            console.print(Text(f"  ~ fake kernel supplied by opscan for {op} (PyTorch's is stricter than "
                               "the real kernels; shapes only)", style="dim"))
        for stand_in in trace.stand_ins:
            where = f"{stand_in.source.path}:{stand_in.source.line}" if stand_in.source else "?"
            console.print(Text(f"  ~ stand-in: {stand_in.op} ({stand_in.kind}) = {stand_in.value}, "
                               f"{stand_in.count}x at {where}; the branch taken may differ from a real run",
                               style="yellow"))
    coverage = {c.op: c for c in report.coverage}
    costs = {f.op: f for f in report.fallbacks}   # ops that may run on the CPU: bytes per step (model.Fallback)
    merged = merge_ops(report.traces)
    show_modes = any(t.mode == Mode.BOTH for t in report.traces)
    wide = console.width >= WIDE
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    op_width = None if wide else _op_width(console, merged, coverage, show_modes, bool(costs))
    table.add_column("op" if wide else "op / first source", overflow="fold",
                     max_width=None if wide else OP_COLUMN, min_width=op_width)
    table.add_column("count", justify="right", no_wrap=True)
    table.add_column("phases", no_wrap=True)
    if show_modes:
        table.add_column("modes", no_wrap=True)
    table.add_column("dtypes", no_wrap=True)   # packed into lines of whole names (packed)
    if coverage:
        table.add_column("status", no_wrap=True)
    if wide:
        table.add_column("first source", overflow="ellipsis")   # fitted to its room: NOTE [whole locations]
    notes = _evidence_notes(merged, coverage)
    # the first source fits its column whole (NOTE [whole locations] in location.py)
    width = budget(console, _WIDE_OTHER if wide else _NARROW_OTHER)
    if not wide:
        width = min(width, OP_COLUMN - 2, op_width - 2)
    for usage, _models in merged:
        row = _row(usage, coverage.get(usage.op), show_modes, bool(coverage), wide, notes, width,
                   op_width if not wide else None)
        cost = costs.get(usage.op)
        if cost is not None and cost.bytes_per_step and bool(coverage):   # the status cell: its fallback cost
            row[-2 if wide else -1].append(f" {size(cost.bytes_per_step)}/step" + "*" * bool(cost.scaled_by),
                                           style="yellow")
        table.add_row(*row)
    console.print(table)
    if coverage:
        for text, number in notes.items():
            hanging(console, f"  [{number}] ", text, "dim")
    scaled = [f for f in report.fallbacks if f.scaled_by]
    if scaled:   # NOTE [fallback scaling] in opscan/assess/assessment.py
        how = "; ".join(sorted({f.scaled_by for f in scaled}))
        traced = sum(f.traced_bytes for f in scaled)
        console.print(Text(f"  * CPU fallback cost per training step scaled back to the real model ({how}): "
                           f"{size(sum(f.bytes_per_step for f in scaled))}, as traced {size(traced)}", style="dim"))
    if report.release_notes:   # release facts about traced ops that are no known failure (never the verdict)
        console.print(Text("release notes on traced ops:", style="bold"))
        for note in report.release_notes:
            hanging(console, "  ", f"{note.packet} ({VIA[note.via]} {', '.join(note.ops)}): {note.text}", "dim")
    console.print()


VIA = {"op": "traced:", "overload": "traced as", "part": "decomposed, its parts traced:"}


DTYPES_WIDTH = 16   # the dtypes column: names packed into lines of at most this many characters


def packed(words: list[str], width: int, sep: str = ",") -> str:
    """`words` joined by `sep` into lines of at most `width` characters, a line break only between
    two words (NOTE [whole words]: rich folds a word longer than its column mid-word)."""
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + len(sep) + len(word) <= width:
            lines[-1] += sep + word
        else:
            lines.append(word)
    return (sep + "\n").join(lines)


def _evidence_notes(merged, coverage: dict[str, Coverage]) -> dict[str, int]:
    """Number each distinct evidence text once, in table order, so a status reads "native [1]"."""
    notes: dict[str, int] = {}
    for usage, _ in merged:
        cov = coverage.get(usage.op)
        if cov is not None and cov.evidence and cov.evidence[0].text not in notes:
            notes[cov.evidence[0].text] = len(notes) + 1
    return notes


def _op_width(console: Console, merged, coverage: dict, show_modes: bool, costs: bool = False) -> int:
    """NOTE [whole op names]: the op column of a narrow table, as wide as its longest name when the
    other columns leave room (rich then never breaks a name: it folds only what is longer than its
    column), else what they leave; a name longer than that is shortened in the middle (short_op)."""
    longest = max((len(u.op) + (9 if u.custom else 0) for u, _ in merged), default=2)
    status = max((len(coverage[u.op].status) + 5 if u.op in coverage else 7 for u, _ in merged), default=0) \
        + (14 if costs else 0)   # " 1.2 KiB/step*" after a fallback's status
    others = [max([5] + [len(str(u.count)) for u, _ in merged]),
              max([6] + [len(",".join(_PHASE_SHORT.get(p, p) for p in u.phases)) for u, _ in merged]),
              max([6] + [len(line) for u, _ in merged
                         for line in packed([d.replace("torch.", "") for d in u.dtypes], DTYPES_WIDTH).split("\n")])]
    if show_modes:
        others.append(5)
    if coverage:
        others.append(status)
    room = console.width - sum(others) - 2 * len(others)
    return max(MIN_OP, min(longest, OP_COLUMN, room))


MIN_OP = 20


def short_op(op: str, width: int) -> str:
    """`aten::_foreach_addcdiv_.ScalarList` in at most `width` characters: the namespace and the
    overload kept, the middle of the name made `…` (never broken across lines)."""
    if len(op) <= width:
        return op
    head, _, overload = op.partition(".")
    tail = ("." + overload) if overload else ""
    keep = width - len(tail) - 1
    if keep < 8:   # no room for the overload: the start of the name
        return op[: width - 1] + "…"
    return head[:keep] + "…" + tail


def _row(usage: OpUsage, cov: Coverage | None, show_modes: bool, with_status: bool, wide: bool,
         notes: dict[str, int], width: int, op_width: int | None = None) -> list:
    shown = usage.op if op_width is None else short_op(usage.op, op_width - (9 if usage.custom else 0))
    name = Text(shown, style="bold magenta" if usage.custom else "")
    if usage.custom:
        name.append(" [custom]", style="magenta")
    phases = ",".join(_PHASE_SHORT.get(p, p) for p in usage.phases)
    dtypes = packed([d.replace("torch.", "") for d in usage.dtypes], DTYPES_WIDTH)
    source = ""
    if usage.sources:   # on one line: the module only where it fits beside the place
        first = usage.sources[0]
        others = len(usage.sources) - 1
        for more in ((f"  +{others} more", f" +{others}") if others else ("",)):   # the short form if need be
            source = fit(first.path, f":{first.line}", width - len(more))
            if len(source + more) <= width:
                break
        module = f" ({first.module})" if first.module else ""
        source += (module if len(source + module + more) <= width else "") + more
    row = [name, str(usage.count), phases]
    if show_modes:
        only = len(usage.modes) == 1
        row.append(Text(_MODE_SHORT.get(usage.modes[0], usage.modes[0]) + " only" if only else Mode.BOTH,
                        style="yellow" if only else ""))
    row.append(dtypes)
    if with_status:
        status = cov.status if cov is not None else "unknown"
        cell = Text(status, style=_status_style(status_of(status)))
        if cov is not None and cov.evidence:
            cell.append(f" [{notes[cov.evidence[0].text]}]", style="dim")
        row.append(cell)
    if wide:
        row.append(source)
    elif source:
        name.append("\n  " + source, style="dim")
    return row
