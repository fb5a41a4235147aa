"""The verdict of a run, computed once in the analysis and carried in `Report.verdict`.

`judge(report, ...)` reads a finished report (findings, traces, coverage, tasks, baseline) and
says, in one line, whether the project will run on the backend. Kinds are the closed vocabulary
`model.VERDICT_KINDS`, worst first: blocked, unknown, fallback, unchecked, likely, ready.

The same facts decide the CI gate (opscan/assess/gate.py): the default `--fail-on error` fails on exactly
the blockers counted here, so a "blocked" verdict always exits 1 and any other verdict never does
under the default gate.

NOTE [sites]: a *site* is one line of port work inside one task: the line of a finding (of a
file, or of a notebook cell) or the source line an op was dispatched from, counted once per task
(`Location.site` is the unit; `Task.sites` holds one location per site, the first column of the
line). Two findings on one line are one site; one line in two tasks (a process group's backend
and its device) is a site of each. Every count of sites a task list shows (task titles, summary,
markdown, JSON `summary.sites`) is `len(task.sites)` or a sum of it over tasks (`site_count`,
`Report.sites`). The headline's "N CUDA-pinned sites" counts the same unit (`site_key`) over the
blocking findings, so it is the sum of the tasks' "K blocking" (`Task.blocking_sites`), less the
dependency pins, which the headline names on their own.

NOTE [blockers]: the blocking count is defined here once, as `model.Blockers`, and written into
the verdict (`Verdict.blockers`); the headline, the gate line, the terminal and markdown summaries,
JSON `verdict.blockers` and the preflight all read it. Each unguarded finding of severity error
counts once, by what it is: a kernel finding counts its kernel (one per kernel task), a CUDA-only
library import its library, a file opscan could not read its file, any other its location (a
CUDA-pinned site); a manifest line holding torch off the release's pairing (task torch-version)
counts once as a dependency pin; each traced op the backend rejects counts once. Warnings and guarded findings
never block: they are sites of port tasks, not blockers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import NamedTuple

from opscan.assess import compile_check
from opscan.assess.step import HOST_ONLY, host_only
from opscan.records import (BlockUnit, Blockers, Checked, Confidence, Coverage, Finding, JudgedOps, ModelTrace,
                            NotChecked, NothingToCheck, Report, SourceCheck, Status, Task, TaskKind, Verdict,
                            VerdictKind, joined_stop, CaveatKind, Category, EvidenceKind, CompileCause)
from opscan.reporters.texts import blockers_words

# probed counts only when `Evidence.compared` (see `unverified`)
VERIFIED_EVIDENCE = (EvidenceKind.DOCUMENTED, EvidenceKind.PROBED)
DATED_EVIDENCE = (EvidenceKind.SOURCE_SNAPSHOT, EvidenceKind.PROBED)   # unverified evidence the headline dates

NO_BLOCKERS = Blockers()
NO_MODEL = "no model found (configure [[tool.opscan.models]] or pass --model)"
SOURCE_ONLY = "`opscan scan` reads the source only (`opscan PATH` also traces the model)"


def plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else (plural or word + 's')}"


# --- the facts the gate shares ------------------------------------------------------------------

def blocking_findings(report: Report) -> list[Finding]:
    """Unguarded findings of severity error: each one blocks (NOTE [blockers])."""
    return [f for f in report.findings if f.blocking]


def traced_ops(report: Report) -> list[str]:
    """Every op any trace dispatched, sorted."""
    return sorted({u.op for t in report.traces for u in t.ops})


def op_status(report: Report) -> dict[str, Status]:
    """op -> coverage status; a traced op without an entry is "unknown"."""
    status = {c.op: c.status for c in report.coverage}
    return {op: status.get(op, Status.UNKNOWN) for op in traced_ops(report)}


def judged_ops(report: Report) -> JudgedOps:
    """The traced ops by status as the verdict carries them; judged afresh only for a hand-built
    report without a verdict."""
    return report.verdict.ops if report.verdict is not None else JudgedOps.of(op_status(report))


def unsupported_ops(report: Report) -> list[str]:
    """Traced ops the backend rejects: each one blocks (and fails the default gate)."""
    return list(judged_ops(report).unsupported)


def unverified(coverage: Coverage) -> str:
    """Why a supported op is not proven -- the one place that decides what "ready" needs of an op:
    "source-snapshot" (pre-release source), "registered" (a probe read its registration but ran
    nothing: no `--samples`), "inferred" (opscan's derivation or no evidence at all), "confidence"
    (documented, imported or compared-probe evidence, but below high confidence: a stale or partial
    list such as the XLA line's, medium); "" when documented evidence (a docs page, an imported
    compatibility table), or a probe that ran the op and compared its results with the CPU, backs
    it at high confidence.

    A composite is judged by its parts (NOTE [composite confidence] in opscan/db/lookup.py: a
    composite ranks one level below its weakest part), so it needs medium: parts at high. A
    composite that reaches no backend op (a view such as `aten::detach`: the installed torch's
    composite kernel dispatches nothing to the device) claims nothing about the backend, so there
    is nothing to verify: "". Otherwise every trained model would stay "likely" on a probed file.
    (A composite answer always carries its derivation as evidence; a bare status has none.)
    """
    if coverage.status.decomposes and not coverage.parts and coverage.evidence:
        return ""
    kinds = {e.kind for e in coverage.evidence}
    if EvidenceKind.SOURCE_SNAPSHOT in kinds:
        return "source-snapshot"
    if EvidenceKind.DOCUMENTED in kinds or any(e.kind is EvidenceKind.PROBED and e.compared for e in coverage.evidence):
        needed = READY_CONFIDENCE["composite" if coverage.status.decomposes else "op"]
        return "" if coverage.confidence in needed else "confidence"
    if EvidenceKind.PROBED in kinds:   # a registration read from the dispatcher, never run (probe without --samples)
        return "registered"
    return "inferred"


# the confidence an op's answer needs for "ready" (a composite ranks one below its weakest part)
READY_CONFIDENCE = {"op": (Confidence.HIGH,), "composite": (Confidence.HIGH, Confidence.MEDIUM)}


# --- sites --------------------------------------------------------------------------------------

def site_key(finding: Finding) -> tuple[str, str, int, int]:
    """The site a finding is at, within its task: (task kind, path, cell, line) (NOTE [sites])."""
    return (finding.task, *finding.location.site)


def site_count(tasks: Iterable[Task]) -> int:
    """Sites of `tasks`, see NOTE [sites]."""
    return sum(len(t.sites) for t in tasks)


def file_count(tasks: Iterable[Task]) -> int:
    """Distinct files the sites of `tasks` are in."""
    return len({s.path for t in tasks for s in t.sites})


# --- blockers -----------------------------------------------------------------------------------

def count_blockers(report: Report, ops: JudgedOps | None = None) -> Blockers:
    """The blocking count of `report` (NOTE [blockers]); the verdict carries it."""
    kernel_tasks = [t for t in report.tasks if t.kind is TaskKind.KERNEL]
    kernels: set[str] = set()
    libraries: set[str] = set()
    unreadable: set[str] = set()
    syntax: dict[str, str] = {}   # file -> its first syntax error's "path:line"
    sites = set()
    pins = set()   # manifest lines holding torch off the release's pairing (task torch-version)
    for finding in blocking_findings(report):
        where = finding.location
        unit = finding.blocks_as
        if unit is BlockUnit.FILE:
            unreadable.add(where.path)
            if finding.name == "parse-error" and where.path not in syntax:
                syntax[where.path] = f"{where.path}:{where.line}"
        elif unit is BlockUnit.KERNEL:
            task = next((t for t in kernel_tasks if where.site in {s.site for s in t.sites}), None)
            kernels.add(task.id if task is not None else f"file:{where.path}")
        elif unit is BlockUnit.LIBRARY:
            libraries.add(finding.subject or where.path)
        elif unit is BlockUnit.PIN:
            pins.add(site_key(finding))
        else:
            sites.add(site_key(finding))
    compiled = report.torch_compile.blocking_ops if report.torch_compile is not None else ()
    unsupported = ops.unsupported if ops is not None else tuple(unsupported_ops(report))
    return Blockers(sites=len(sites), files=len({path for _, path, _, _ in sites}), kernels=len(kernels),
                    libraries=len(libraries), unsupported_ops=len(unsupported),
                    unreadable_files=len(unreadable), syntax_errors=tuple(syntax[p] for p in sorted(syntax)),
                    dependencies=len(pins),
                    compiled_fallback_ops=len(compiled))   # NOTE [compile semantics] in opscan/assess/compile_check.py


def blockers_of(report: Report) -> Blockers:
    """The blockers the verdict carries; counted afresh only for a hand-built report without one."""
    return report.verdict.blockers if report.verdict is not None else count_blockers(report)


# --- the verdict ---------------------------------------------------------------------------------

def judge(report: Report, *, ops_not_checked: str = "", source: SourceCheck = Checked(),
          unchecked: tuple[tuple[str, str], ...] = (), pairing: str = "", remedy: str = "",
          source_only: bool = False) -> Verdict:
    """The verdict of `report`.

    Args:
        ops_not_checked: why no model was traced (shown when `report.traces` is empty);
            "" = the default reason, no model found.
        source: whether the source was scanned (NOTE [checked or not] in opscan/records/report.py):
            Checked(), NotChecked(why), or NothingToCheck() (the zoo judges models alone).
        unchecked: (target, why) of each model opscan was given (configured, --model, or PATH
            itself) but could not build or trace; carried in `Verdict.unchecked` for the gate.
        pairing: "" when the installed torch pairs with the release (or it is not known), else the
            pairing warning: composite answers rest on a torch the release is not built for, so
            the verdict is never "ready" (a caution naming the pairing).
        remedy: one line for every model that missed modules not installed here (their causes name
            the modules; NOTE [every missing module at once] in opscan/targets/absent.py): shown
            once, after the "could not check" lines, and carried in `Verdict.remedy`.
        source_only: the run asked for the source alone (no trace asked for): carried in
            `Verdict.source_only`, which `--fail-on not-ready` reads (opscan/assess/gate.py).
    """
    causes: dict[str, list[str]] = {}   # one line per distinct cause, naming its models in order
    for target, why in unchecked:
        causes.setdefault(why, []).append(target)
    lines = tuple(f"{', '.join(dict.fromkeys(targets))}: {why}" for why, targets in causes.items())
    if unchecked and all(t.target in dict(unchecked) for t in report.traces):
        ops_not_checked = f"could not check {plural(len(unchecked), 'model')}"
    verdict = _judge(report, ops_not_checked, source, {target for target, _ in unchecked}, pairing)
    gaps = tuple(f"could not check {line}" for line in lines) + ((remedy,) if remedy else ())
    return replace(verdict, details=gaps + verdict.details, not_checked=gaps + verdict.not_checked, unchecked=lines,
                   remedy=remedy, source_only=source_only)


def _judge(report: Report, ops_not_checked: str, source: SourceCheck, unchecked: set[str],
           pairing: str = "") -> Verdict:
    status = op_status(report)
    judged = JudgedOps.of(status)
    blockers = count_blockers(report, judged)
    by_op = {c.op: c for c in report.coverage}
    fallback, maybe, unknown = list(judged.fallback), list(judged.maybe_fallback), list(judged.unknown)
    weak: dict[str, list[str]] = {}
    dates: dict[str, set[str]] = {}   # why -> the dates of the unverified evidence (snapshot date, probe date)
    for op, st in status.items():
        if st.runs_on_device and op in by_op:
            why = unverified(by_op[op])
            if why:
                weak.setdefault(why, []).append(op)
                dates.setdefault(why, set()).update(e.date for e in by_op[op].evidence
                                                    if e.date and e.kind in DATED_EVIDENCE)
    # a run that reached its optimizer step without dispatching one op to the device (a script whose
    # model and batches stay on the CPU) checked no op: never "ready" on it
    ops_checked = any(t.target not in unchecked and not host_only(t) for t in report.traces)
    if not ops_checked and report.traces and not ops_not_checked and all(map(host_only, report.traces)):
        ops_not_checked = HOST_ONLY   # NOTE [a step that never reaches the device] in step.py
    source_checked = isinstance(source, Checked)
    source_not_checked = source.reason if isinstance(source, NotChecked) else ""   # a gap in the answer
    incomplete = [t for t in report.traces if not t.complete and t.target not in unchecked]
    known = report.baseline.known if report.baseline is not None else 0

    ops_gap = "" if ops_checked else f"ops: not checked — {ops_not_checked or NO_MODEL}"
    source_gap = f"source: not checked — {source_not_checked}" if source_not_checked else ""
    stopped = [f"trace of {trace.target} stopped early: {joined_stop(trace.stopped_at, trace.stop_hint)}"
               for trace in incomplete]
    gaps = Gaps([g for g in (ops_gap, source_gap) if g] + stopped, stopped)   # what the answer does not cover
    details: list[str] = []   # the caveats: what the answer rests on
    if report.baseline is not None:
        details.append(f"baseline {report.baseline.path}: {known} known, "
                       f"{plural(len(report.findings), 'new finding')}")
    if unknown:
        details.append(f"{len(unknown)} of {plural(len(status), 'traced op')} "
                       f"{'has' if len(unknown) == 1 else 'have'} unknown status on {report.backend or 'the backend'}")
    cost = {f.op: f for f in report.fallbacks}
    moved = sum(f.bytes_per_step for f in cost.values())
    if moved:
        calls = sum(f.calls_per_step for f in cost.values())
        costly = sorted(cost.values(), key=lambda f: (-f.bytes_per_step, f.op))[:3]
        how = "; ".join(sorted({f.scaled_by for f in cost.values() if f.scaled_by}))
        details.append(f"CPU fallbacks would copy {size(moved)} between host and device per training step "
                       f"{f'scaled back to the real model ({how})' if how else 'at the traced shapes'}, "
                       f"with {plural(calls, 'sync')} ("
                       + ", ".join(f"{f.op} {size(f.bytes_per_step)}" for f in costly) + ")")
    if fallback:
        details.append(f"{plural(len(fallback), 'op')} on CPU fallback: {_names(fallback)}")
    if maybe:
        details.append(f"{plural(len(maybe), 'op')} may run on the CPU (not listed; the release documents "
                       f"that an op without a kernel falls back to the CPU): {_names(maybe)}")
    notes = {op: by_op[op].confidence_note for op in weak.get("confidence", ())}   # why each is below high
    if weak:
        details.append(_unverified_text(weak, dates, notes))
    if pairing:
        details.append(pairing)
    caveats = report.caveats   # release facts the traced dtypes hit (opscan/db/caveats.py)
    details.extend(c.message for c in caveats)
    details.extend(compile_lines(report.traces))
    details.extend(compile_check.details(report.torch_compile))   # torch.compile under TorchNeuron's rules
    tasks = report.tasks
    if blockers.count:
        headline = "blocked by " + blockers_words(blockers)
        if known:
            headline += f" (new; {known} known hidden by the baseline)"
        return _verdict(VerdictKind.BLOCKED, judged, headline, gaps.all, details, source_checked, ops_checked,
                        blockers)

    to_check = [t for t in tasks if t.kind in (TaskKind.KERNEL, TaskKind.LIBRARY)]
    open_points = []
    if unknown:
        open_points.append(f"{plural(len(unknown), 'op')} of unknown status")
    if to_check:
        open_points.append(plural(len(to_check), "custom kernel or library", "custom kernels or libraries")
                           + " to check")
    if incomplete:
        open_points.append(plural(len(incomplete), "incomplete trace"))
    if unchecked and ops_checked:   # others were traced: never "ready" with a model left unchecked
        open_points.append(plural(len(unchecked), "model") + " not checked")
    failing = [c for c in caveats if c.kind is CaveatKind.KNOWN_FAILURE]   # narrowing caveats are numerics notes
    if failing:
        open_points.append(plural(len(failing), "known failure") + " of the backend on the traced dtypes")
    compiled = compile_check.open_point(report.torch_compile)   # NOTE [compile semantics]
    if compiled:
        open_points.append(compiled)
    if known:
        open_points.append(f"{known} known finding{'s' * (known != 1)} hidden by the baseline, "
                           f"{len(report.findings)} new")
    if open_points:
        return _verdict(VerdictKind.UNKNOWN, judged, "no blockers found, but not proven: " + ", ".join(open_points),
                        gaps.all, details, source_checked, ops_checked)
    if fallback or maybe:
        return _verdict(VerdictKind.FALLBACK, judged, _fallback_headline(fallback, maybe), gaps.all, details,
                        source_checked, ops_checked)
    if not ops_checked or source_not_checked:
        findings = [f for f in report.findings if f.category is not Category.INPUT]
        scanned = ("source: no CUDA pins" if not findings else
                   f"source: no blockers ({plural(len(findings), 'finding')} that "
                   f"{'does' if len(findings) == 1 else 'do'} not block)")
        if source_not_checked:
            scanned = f"source: not checked — {source_not_checked}"
        elif isinstance(source, NothingToCheck):
            scanned = "source: none to scan"
        ops = (f"ops: not checked — {ops_not_checked or NO_MODEL}" if not ops_checked else
               f"ops: {plural(len(status), 'traced op')}, none known to fail")
        return _verdict(VerdictKind.UNCHECKED, judged, f"{scanned}; {ops}", gaps.stopped,   # the headline says the rest
                        details, source_checked, ops_checked)
    if weak or pairing:
        said = []
        if weak:
            said.append(f"unverified: {_unverified_counts(weak, dates, notes)}")
        if pairing:
            said.append(pairing.split(";")[0])   # "installed torch 2.13.0 does not pair with SPEC (...)"
        return _verdict(VerdictKind.LIKELY, judged,
                        f"likely — {'; '.join(said)}; confirm with `opscan db probe --report` on a "
                        "paired install",
                        gaps.all, [d for d in details if d not in (_unverified_text(weak, dates, notes), pairing)],
                        source_checked, ops_checked)
    return _verdict(VerdictKind.READY, judged, "ready", gaps.all, details, source_checked, ops_checked)


def size(count: int) -> str:
    """Bytes as people read them: "6.0 MB", "12.3 kB", "512 B"."""
    if count >= 100_000:
        return f"{count / 1e6:.1f} MB"
    return f"{count / 1e3:.1f} kB" if count >= 1000 else f"{count} B"


def _names(ops: list[str], shown: int = 5) -> str:
    return ", ".join(ops[:shown]) + (" …" if len(ops) > shown else "")


def _fallback_headline(fallback: list[str], maybe: list[str]) -> str:
    """"runs with possible CPU fallbacks: 2 ops may run on the CPU (aten::sort, aten::topk)"."""
    if not maybe:
        return f"runs with {plural(len(fallback), 'op')} on CPU fallback"
    text = f"runs with possible CPU fallbacks: {plural(len(maybe), 'op')} may run on the CPU ({_names(maybe, 3)})"
    return text + (f"; {plural(len(fallback), 'op')} on CPU fallback" if fallback else "")


def _unverified_counts(weak: dict[str, list[str]], dates: dict[str, set[str]] | None = None,
                       notes: dict[str, str] | None = None) -> str:
    """What the evidence of the unverified ops is, e.g. "31 ops rest on kernels registered in a
    pre-release source snapshot of 2026-04-21"."""
    def of(why: str) -> str:
        known = sorted((dates or {}).get(why, ()))
        return f" of {', '.join(known)}" if known else ""
    parts = []
    if weak.get("source-snapshot"):
        n = len(weak["source-snapshot"])
        parts.append(f"{plural(n, 'op')} rest{'s' * (n == 1)} on kernels registered in a pre-release source "
                     f"snapshot{of('source-snapshot')}")
    if weak.get("registered"):
        n = len(weak["registered"])
        parts.append(f"{plural(n, 'op')} only registered on a probed install{of('registered')}, never run "
                     "(probe without --samples)")
    if weak.get("inferred"):
        n = len(weak["inferred"])
        parts.append(f"{plural(n, 'op')} on opscan's inference only")
    if weak.get("confidence"):
        ops = sorted(weak["confidence"])
        by_note: dict[str, list[str]] = {}   # the real reason of each (Coverage.confidence_note), grouped
        for op in ops:
            by_note.setdefault((notes or {}).get(op) or "its evidence is below high confidence", []).append(op)
        said = "; ".join(f"{_names(named, 3)}: {note.replace(' it ', ' them ') if len(named) > 1 else note}"
                         for note, named in sorted(by_note.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:3])
        more = f"; and {len(by_note) - 3} more reasons" if len(by_note) > 3 else ""
        parts.append(f"{plural(len(ops), 'op')} below high confidence ({said}{more}; `opscan db show OP` says more)")
    return ", ".join(parts)


def _unverified_text(weak: dict[str, list[str]], dates: dict[str, set[str]] | None = None,
                     notes: dict[str, str] | None = None) -> str:
    count = sum(len(v) for v in weak.values())
    return (f"{plural(count, 'op')} supported only on unverified evidence "
            f"({_unverified_counts(weak, dates, notes)}): "
            "confirm with `opscan db probe` on a Trainium instance")


class Gaps(NamedTuple):
    """What the answer does not cover, as the verdict's first lines: `all` of them, and the traces
    that `stopped` early (the rest are said by an "unchecked" headline itself)."""

    all: list[str]
    stopped: list[str]


def _verdict(kind: VerdictKind, judged: JudgedOps, headline: str, gaps: list[str], details: list[str], source: bool,
             ops: bool, blockers: Blockers = NO_BLOCKERS) -> Verdict:
    return Verdict(kind, headline, tuple(gaps) + tuple(details), source_checked=source, ops_checked=ops,
                   blockers=blockers, ops=judged, not_checked=tuple(gaps))


def compile_lines(traces: Iterable[ModelTrace]) -> list[str]:
    """One line per traced model with a compile forecast (NOTE [compile signatures] in
    opscan/trace/signatures.py): the first step's compiles, the later steps' new ones and the lines
    that make them; a signature is one compile of TorchNeuron's eager cache, never a time."""
    out = []
    forecasts = [(t, t.compile) for t in traces   # a trace that stopped before any op forecasts nothing
                 if t.compile is not None and t.compile.steps and t.ops]
    for trace, forecast in forecasts:
        steps, varying = forecast.steps, forecast.varying
        made = {(s.source.path, s.source.line): s.op.removeprefix("aten::") for s in trace.stand_ins
                if s.source is not None and s.kind != "item"}
        text = f"the first step compiles {plural(len(steps[0].signatures), 'signature')}"
        later = [sum(1 for n in step.new if n.cause != CompileCause.FIRST_RUN) for step in steps[1:]]
        late = sum(1 for step in steps[1:] for n in step.new if n.cause == CompileCause.FIRST_RUN)

        def where(causes: tuple[str, ...]) -> str:
            counts: dict[tuple[str, int, str], int] = {}
            for v in varying:
                if v.cause in causes and v.origin is not None:
                    key = (v.origin.path, v.origin.line, v.cause)
                    counts[key] = counts.get(key, 0) + max(1, v.new_signatures)
            ranked = sorted(counts, key=lambda k: (-counts[k], k))[:3]
            return ", ".join(f"{p}:{n} ({made.get((p, n), c) if c == CompileCause.DATA_DEPENDENT else c})"
                             for p, n, c in ranked)

        if later and all(later):
            mean = round(sum(later) / len(later))
            text += f"; each later step about {mean} new one{'s' * (mean != 1)}, from {where(('data', 'number'))}"
        elif any(later):
            brought = ", ".join(f"{count} in step {n}" for n, count in enumerate(later, 2) if count)
            text += f"; new ones in some later steps ({brought}), from {where(('data', 'number'))}"
        elif len(later) == 1:
            text += "; the later step run brought no new shape"
        elif later:
            text += f"; none of the {len(later)} later steps run brought a new shape"
        if late:
            text += f"; {late} more compile{'s' * (late != 1)} in code first run after the first step"
        guessed = where(("data-dependent",))
        if guessed:
            text += f"; sizes the data decides likely make new ones every step, from {guessed}"
        tails = sorted({v.detail for v in varying if v.cause == CompileCause.TAIL_BATCH})
        if tails:
            text += f"; a short last batch compiles again once per epoch ({'; '.join(tails)})"
        prefix = f"{trace.target}: " if len(forecasts) > 1 else ""
        out.append(prefix + text + " (a count of compiles, not a time: compile time is not measured)")
    return out
