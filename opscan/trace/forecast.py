"""The compile forecast (NOTE [compile signatures] in signatures.py): a run's CompileLog as optimizer
steps, the signatures each later step adds with their cause (NOTE [shape origins]), and the ops whose
signatures vary; `merged` and `joined` put the two modes of `--mode both` together."""

from __future__ import annotations

from opscan.records import PHASES, CompileCause, OpSource
from opscan.trace.signatures import CompileLog, Seen


def steps_of(log: CompileLog, *, drop_rest: bool) -> list[dict[str, Seen]]:
    """The log's segments as optimizer steps (docs/json.md, "compile"): with P optimizers stepping
    in turn, each P segments ended by an optimizer step are one step; what follows the last step
    is dropped when `drop_rest` (the partial step the run stopped in), else joined to the last step
    (or is the only step of a run with no optimizer step)."""
    segments = list(log.segments)
    if log.current:
        segments.append((None, log.current))
    stepped = [s for s in segments if s[0] is not None]
    rest = [s for s in segments if s[0] is None]
    width = max(1, len({key for key, _ in stepped}))
    out: list[dict[str, Seen]] = []
    for start in range(0, len(stepped), width):
        merged: dict[str, Seen] = {}
        for _, part in stepped[start:start + width]:
            _join(merged, part)
        out.append(merged)
    if rest and not drop_rest or not out:
        if not out:
            out.append({})
        for _, part in rest:
            _join(out[-1], part)
    return out


def _join(into: dict[str, Seen], part: dict[str, Seen]) -> None:
    for sig, seen in part.items():
        known = into.get(sig)
        if known is None:
            into[sig] = seen
        else:
            known.phases |= seen.phases


def phase_counts(step: dict[str, Seen]) -> tuple[tuple[str, int], ...]:
    """Distinct signatures per phase (a signature seen in two phases counts in both)."""
    return tuple((p, sum(1 for s in step.values() if p in s.phases)) for p in PHASES
                 if any(p in s.phases for s in step.values()))


def _cause(seen: Seen) -> tuple[str, OpSource | None]:
    """Why a signature is new in a later step, and the line that made its shape (NOTE [shape origins])."""
    if seen.origin is None:
        return "number", seen.source
    return seen.origin[0], seen.origin[1]


def _key(source: OpSource | None) -> tuple:
    return (source.path, source.line, source.module) if source is not None else ("", 0, "")


def forecast(log: CompileLog, host: CompileLog | None = None, *, drop_rest: bool = False):
    """The run's CompileForecast: each step's signatures, the new ones of later steps with their
    cause, and the ops whose signatures vary (seen in the steps run, or predicted from sizes the
    data decides: data-dependent ops, a loader's short last batch)."""
    from opscan.records import CompileForecast, CompileStep, NewSignature, VaryingOp

    steps = steps_of(log, drop_rest=drop_rest)
    host_steps = steps_of(host, drop_rest=drop_rest) if host is not None else []
    varying: dict[tuple, list] = {}   # (op, cause, origin) -> [sources, steps, count, detail]

    def vary(op, cause, origin, source, step=0, detail=""):
        entry = varying.setdefault((op, cause, origin), [set(), set(), 0, detail])
        if source is not None and source.path:
            entry[0].add(source)
        if step:
            entry[1].add(step)
            entry[2] += 1

    earlier: set[str] = set()
    calls: set[tuple] = set()   # (op, line) of the earlier steps
    out = []
    for number, step in enumerate(steps, 1):
        new = []
        if number > 1:
            for sig in sorted(set(step) - earlier):
                seen = step[sig]
                cause, origin = _cause(seen)
                if (seen.op, _key(seen.source)) not in calls:
                    cause, origin = CompileCause.FIRST_RUN, seen.source
                new.append(NewSignature(sig, seen.op, tuple(p for p in PHASES if p in seen.phases),
                                        seen.source, cause, origin))
                if cause != CompileCause.FIRST_RUN:
                    vary(seen.op, cause, origin, seen.source, number)
        earlier |= set(step)
        calls |= {(seen.op, _key(seen.source)) for seen in step.values()}
        hosted = tuple(sorted(host_steps[number - 1])) if number <= len(host_steps) else ()
        out.append(CompileStep(tuple(sorted(step)), hosted, phase_counts(step), tuple(new)))
    for step in steps:   # predicted: sizes the data decides
        for seen in step.values():
            if seen.origin is None:
                continue
            cause, origin, tail = seen.origin
            if cause == CompileCause.DATA_DEPENDENT:
                vary(seen.op, cause, origin, seen.source)
            elif tail and (seen.op, "data", origin) not in varying:
                vary(seen.op, CompileCause.TAIL_BATCH, origin, seen.source, detail=tail)
    ordered = sorted(varying.items(), key=lambda kv: (kv[0][0], kv[0][1], _key(kv[0][2])))
    likely = sum(1 for seen in steps[-1].values()
                 if seen.origin is not None and seen.origin[0] == CompileCause.DATA_DEPENDENT) if steps else 0
    return CompileForecast(tuple(out), tuple(
        VaryingOp(op, cause, origin, tuple(sorted(v[0], key=_key))[:5], tuple(sorted(v[1])), v[2], v[3])
        for (op, cause, origin), v in ordered), likely)


def merged(first: CompileLog, second: CompileLog) -> CompileLog:
    """Two logs of one model (`--mode both`: inference, then train) as one: step k holds the distinct
    signatures of step k of each, a signature seen in both counted once in each of its phases."""
    ones, others = steps_of(first, drop_rest=False), steps_of(second, drop_rest=False)
    log = CompileLog(first.origins)
    for number in range(max(len(ones), len(others))):
        step: dict[str, Seen] = {}
        for part in (ones, others):
            for sig, seen in (part[number] if number < len(part) else {}).items():
                known = step.get(sig)
                if known is None:
                    known = step[sig] = Seen(seen.op, seen.source, seen.origin)
                known.phases |= seen.phases
        log.segments.append(("step", step))
    return log


def joined(first, second):
    """Two forecasts of one model (`--mode both`: inference, then train) as one: step by step, each
    step's signatures joined; the varying ops of both."""
    from dataclasses import replace

    if first is None or second is None:
        return first or second
    steps = []
    for number in range(max(len(first.steps), len(second.steps))):
        parts = [f.steps[number] for f in (first, second) if number < len(f.steps)]
        if len(parts) == 1:
            steps.append(parts[0])
            continue
        a, b = parts
        phases = dict(a.phases)
        for phase, count in b.phases:   # the modes run apart: a phase's signatures may repeat
            phases[phase] = phases.get(phase, 0) + count
        steps.append(replace(a, signatures=tuple(sorted(set(a.signatures) | set(b.signatures))),
                             host_signatures=tuple(sorted(set(a.host_signatures) | set(b.host_signatures))),
                             phases=tuple((p, phases[p]) for p in PHASES if p in phases),
                             new=tuple(sorted({*a.new, *b.new}, key=lambda n: n.signature))))
    varying = sorted({*first.varying, *second.varying}, key=lambda v: (v.op, v.cause, _key(v.origin)))
    return type(first)(tuple(steps), tuple(varying), first.likely_new + second.likely_new)


__all__ = ["forecast", "joined", "merged", "phase_counts", "steps_of"]
