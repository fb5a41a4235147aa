"""torch.compile under TorchNeuron's rules: the regions the traces met, the options the compile rules
flag, and the traced ops with no kernel inside a compiled region (docs/compile.md).

NOTE [compile semantics]
In eager mode an op with no Neuron kernel runs on the CPU (the release's documented default). Inside
a torch.compile region it is part of a graph that TorchNeuron lowers to StableHLO and compiles as a
whole (the best-practices page's execution paths: eager ATen op -> StableHLO -> neuronx-cc, compiled
Dynamo -> AOTAutograd -> StableHLO -> neuronx-cc). What happens then is release data: the release
file's `no_kernel.compile` (coverage_db/README.md), one of
  - `error`: the op raises inside a compiled region: a traced op of status `cpu-fallback` that ran
    inside a region blocks (`Blockers.compiled_fallback_ops`), and the CPU-fallback task becomes a
    blocker;
  - `cpu-fallback`: it falls back there too: nothing more to say;
  - `unknown` (or a release without the rule): not known, and the verdict cannot be better than
    `unknown` while such an op runs in a region (an open point, never a blocker).
The 2.33 file says `unknown`: the pages read do not say what an op without a kernel does in a
compiled graph (the supported-operators page covers it, unread). What they do say is written with
the answer: with TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION at its 2.33 default (true) "a graph that
fails to compile raises instead of running the original graph eagerly", and =0 runs it eagerly; the
April 2026 pre-release source documents the variable with default false (shared neuron-facts:
torchneuron-2.33.0.yaml `environment_variables`; torchneuron-devsnapshot-2026-04-21.yaml
`compilation.compile_path_fallback`). So an op with no lowering that fails its graph's compile
raises by default: likely, not stated. A release file that records `compile: error` (a probe of
compiled graphs on Trainium, a page that says so) turns the open point into a blocker.
Ops of status `device-or-cpu` or `unknown` inside a region may have no kernel: named, not counted.
The ops of a region are those dispatched while it ran (opscan/trace/compiled.py); at a graph break
Dynamo runs the code between graphs eagerly, so for a region with graph breaks the list may hold a
few ops that are not in any graph.

The options come from the rules that flag them in source (rules/compile-*.yaml: their `keyword`
and `value` regex, their message and first source), applied to the keyword values the call really
received, so a value read from a config file is judged as a literal one would be.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from opscan.plan.cost import CostConfig, compile_seconds
from opscan.records import (CompiledOp, CompileEstimate, CompileOption, Coverage, ModelTrace, NoKernel, Report,
                            Severity, Status, Task, TaskKind, TorchCompile, CompileCause)

if TYPE_CHECKING:
    from opscan.db import Release
    from opscan.scan.rule_records import Rule

ENV_VARS_URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html"
SNAPSHOT_DOC = ("https://github.com/parmoham-aws/test-repo-parmoham/blob/98154b867aa24562a3213e520d9ad7fd41032291/"
                "docs/environment_variables.md")
BEST_PRACTICES_URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/best-practices-pytorch-neuron.html"
FALLBACK_FACT = ("with TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION at its 2.33 default (true) a graph that fails "
                 "to compile raises instead of running eagerly; =0 runs it eagerly (the pre-release source "
                 "documents the default as false)")
FALLBACK_TEXT = {
    NoKernel.ERROR: "the release records that an op with no kernel raises inside a compiled graph (no_kernel.compile: "
                    "error); " + FALLBACK_FACT,
    NoKernel.CPU_FALLBACK: "the release records that an op with no kernel falls back to the CPU inside a compiled "
                           "graph too (no_kernel.compile: cpu-fallback)",
    NoKernel.UNKNOWN: "what an op with no kernel does inside a compiled graph is not known for this release "
                      "(no_kernel.compile: unknown); likely it fails the graph's compile, having no lowering, and "
                      + FALLBACK_FACT,
}
FALLBACK_SOURCES = (ENV_VARS_URL, BEST_PRACTICES_URL, SNAPSHOT_DOC)
# the statuses of an op with no kernel known that the backend does not reject: cpu-fallback, device-or-cpu, unknown
NO_KERNEL = tuple(s for s in Status if not s.runs_on_device and not s.blocks)
COMPILE_CALLS = ("torch.compile", ".compile")


def option_rules(rules: Iterable[Rule]) -> list[tuple[str, re.Pattern[str], Rule]]:
    """(keyword, value regex, rule) of every rule matching a keyword value of torch.compile."""
    out = []
    for rule in rules:
        for matcher in rule.match:
            calls = matcher.get("call") or ()
            keyword, value = matcher.get("keyword"), matcher.get("value")
            if keyword and value and any(c in COMPILE_CALLS for c in calls):
                out.append((keyword, re.compile(value), rule))
    return sorted(out, key=lambda item: item[2].id)


def _text(value_repr: str) -> str:
    """The value as the scan matches it: a string's content, any other value's repr."""
    try:
        value = ast.literal_eval(value_repr)
    except (ValueError, SyntaxError):
        return value_repr
    return value if isinstance(value, str) else value_repr


def judge(traces: tuple[ModelTrace, ...], coverage: tuple[Coverage, ...], rules: Iterable[Rule] | None = None,
          release: Release | None = None) -> TorchCompile | None:
    """torch.compile under TorchNeuron's rules (NOTE [compile semantics]); None when no trace compiled.
    `release`: its `no_kernel.compile` says what an op with no kernel does in a compiled graph."""
    regions = tuple((t.target, replace(r, ops=tuple(op for op in r.ops if op in {u.op for u in t.ops})))
                    for t in traces for r in t.compiled)   # the ops the trace lists (no prim::, no artifacts)
    if not regions:
        return None
    if rules is None:
        from opscan.scan.rules import load_rules

        rules = load_rules()
    checks = option_rules(rules)
    options: dict[tuple[str, int, str, str], CompileOption] = {}
    for _target, region in regions:
        for name, value in region.options:
            text = _text(value)
            for keyword, regex, rule in checks:
                if keyword == name and regex.search(text):
                    key = (region.path, region.line, name, rule.id)
                    options[key] = CompileOption(name, value, rule.id, Severity(rule.severity),
                                                 rule.format(rule.message, value=text),
                                                 rule.sources[0] if rule.sources else "", region.path, region.line)
    status = {c.op: c.status for c in coverage}
    where: dict[str, set[str]] = {}
    for _target, region in regions:
        for op in region.ops:
            if status.get(op) in NO_KERNEL:
                where.setdefault(op, set()).add(f"{region.path}:{region.line}")
    ops = tuple(CompiledOp(op, status[op], tuple(sorted(places))) for op, places in sorted(where.items()))
    said = getattr(release, "no_kernel", None) if release is not None else None   # the release's no_kernel rule
    mode = NoKernel(said.compile) if said is not None and said.compile in FALLBACK_TEXT else NoKernel.UNKNOWN
    sources: tuple[str, ...] = FALLBACK_SOURCES
    if said is not None and release is not None:
        sources += tuple(url for e in release.evidence(said.sources) if (url := getattr(e, "url", None)))
    return TorchCompile(regions=regions, options=tuple(options[k] for k in sorted(options)), no_kernel_ops=ops,
                        fallback_rule=FALLBACK_TEXT[mode], fallback_sources=tuple(dict.fromkeys(sources)),
                        no_kernel_compile=mode)


def plan(tasks: tuple[Task, ...], check: TorchCompile | None) -> tuple[Task, ...]:
    """The port tasks with the CPU-fallback task saying where its ops run inside a compiled region and
    what to do, made a blocker when the release says they raise there (NOTE [compile semantics]); re-ordered."""
    from opscan.plan import ordering, task_kinds as kinds

    if check is None or check.no_kernel_compile is NoKernel.CPU_FALLBACK:
        return tasks
    inside = {o.op for o in check.no_kernel_ops if o.status.falls_back}
    if not any(t.kind is TaskKind.CPU_FALLBACK and inside & set(t.ops) for t in tasks):
        return tasks
    where = sorted({r for o in check.no_kernel_ops if o.op in inside for r in o.regions})
    blocks = check.no_kernel_compile is NoKernel.ERROR
    out = []
    for task in tasks:
        if task.kind is TaskKind.CPU_FALLBACK and inside & set(task.ops):
            ops = ", ".join(sorted(inside & set(task.ops)))
            what = "raises" if blocks else "may raise (not known for this release)"
            task = replace(task, priority=1 if blocks else task.priority,
                           sources=tuple(dict.fromkeys(task.sources + (ENV_VARS_URL,))),
                           action=f"{task.action}; {ops} run inside the torch.compile region"
                                  f"{'s' * (len(where) != 1)} at {', '.join(where)}, where an op with no kernel "
                                  f"{what}: move it out of the compiled region (or replace it), or set "
                                  "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0 to run the graph eagerly")
        out.append(task)
    every = (*kinds.SOURCE_KINDS, kinds.LIBRARY_KIND, kinds.KERNEL_KIND, kinds.UNSUPPORTED_KIND,
             kinds.FALLBACK_KIND, kinds.UNKNOWN_KIND, kinds.MAYBE_FALLBACK_KIND)
    stage: dict[str, str] = {k.id: k.stage for k in every}
    return ordering.order(out, {t.id: stage.get(t.kind, "performance") for t in out})


def open_point(check: TorchCompile | None) -> str:
    """The verdict's open point when ops with no kernel run in a region and the release does not say
    what they do there (NOTE [compile semantics]); "" otherwise."""
    if check is None or check.no_kernel_compile is not NoKernel.UNKNOWN:
        return ""
    n = sum(1 for o in check.no_kernel_ops if o.status.falls_back)
    return (f"{n} op{'s' * (n != 1)} with no kernel inside torch.compile regions (what "
            f"{'it does' if n == 1 else 'they do'} there is not known for this release)") if n else ""


def details(check: TorchCompile | None) -> list[str]:
    """The verdict's lines on torch.compile: regions and graph breaks, options, ops with no kernel."""
    if check is None:
        return []
    lines = []
    breaks = [(r, b) for _t, r in check.regions for b in r.graph_breaks]
    explained = [r for _t, r in check.regions if r.explained]
    count = sum(r.graph_break_count for r in explained)
    text = (f"torch.compile: {len(check.regions)} compiled region{'s' * (len(check.regions) != 1)}, "
            f"{count} graph break{'s' * (count != 1)} (torch._dynamo.explain on the CPU)")
    if breaks:
        shown = [f"{b.path}:{b.line} ({b.reason})" for _r, b in breaks[:3]]
        text += ": " + "; ".join(shown) + (" …" if len(breaks) > 3 else "")
    lines.append(text)
    for _t, region in check.regions:
        if not region.explained and region.not_explained:
            lines.append(f"torch.compile at {region.path}:{region.line}: "
                         f"graph breaks not checked — {region.not_explained}")
    for _t, region in check.regions:
        if ("fullgraph", "True") in region.options and region.graph_break_count:
            lines.append(f"torch.compile at {region.path}:{region.line}: fullgraph=True with "
                         f"{region.graph_break_count} graph break{'s' * (region.graph_break_count != 1)} "
                         "raises on the first call (on any backend)")
    for option in check.options:
        lines.append(f"torch.compile at {option.path}:{option.line}: {option.effect} ({option.rule})")
    none = [o for o in check.no_kernel_ops if o.status.falls_back]
    maybe = [o for o in check.no_kernel_ops if not o.status.falls_back]
    if none and check.no_kernel_compile is not NoKernel.CPU_FALLBACK:
        verb = "raise" + "s" * (len(none) == 1) if check.no_kernel_compile is NoKernel.ERROR else "may raise"
        lines.append(f"{len(none)} op{'s' * (len(none) != 1)} with no kernel inside torch.compile regions "
                     f"{verb} ({_names(none)}): {check.fallback_rule}")
    if maybe and check.no_kernel_compile is not NoKernel.CPU_FALLBACK:
        lines.append(f"{len(maybe)} op{'s' * (len(maybe) != 1)} of unknown or conditional support inside "
                     f"torch.compile regions would raise if {'it has' if len(maybe) == 1 else 'they have'} "
                     f"no kernel ({_names(maybe)})")
    return lines


# NOTE [compile counts]
# The estimate multiplies counts of compiles by the user's assumed seconds per compile. The counts
# are read from the report in `compile_counts`, the one place to add a count: the eager signatures
# of the first step (each a compile of TorchNeuron's eager cache), the new ones of the later steps
# run (the most any later step brought; shapes from the data, numbers, tail batches; not code first
# run after step 1), and the torch.compile graphs explain found (one compile per graph and input
# signature; the first call of each region).
def compile_counts(report: Report) -> tuple[tuple[str, int], ...]:
    """(what, how many compiles) the report counts (NOTE [compile counts])."""
    counts = []
    forecasts = [t.compile for t in report.traces   # a trace that stopped before any op forecasts nothing
                 if t.compile is not None and t.compile.steps and t.ops]
    if forecasts:
        counts.append(("eager signatures in the first step",
                       len({s for f in forecasts for s in f.steps[0].signatures})))
        later = [sum(1 for n in step.new if n.cause != CompileCause.FIRST_RUN)
                 for f in forecasts for step in f.steps[1:]]
        if later:
            counts.append(("new eager signatures in the busiest later step", max(later)))
    check = report.torch_compile
    if check is not None and any(r.explained for _t, r in check.regions):
        counts.append(("torch.compile graphs (first call of each region)",
                       sum(r.graphs for _t, r in check.regions if r.explained)))
    return tuple(counts)


def estimate(report: Report, cost: CostConfig | None) -> CompileEstimate | None:
    """Compile seconds as count x the user's assumption (None when nothing was counted)."""
    counts = compile_counts(report)
    if not counts:
        return None
    cost = cost or CostConfig()
    return CompileEstimate(cost.compile_seconds_per_signature, counts, compile_seconds(counts, cost))


def _names(ops: Iterable[CompiledOp]) -> str:
    names = [o.op for o in ops]
    return ", ".join(names[:5]) + (" …" if len(names) > 5 else "")


__all__ = ["FALLBACK_SOURCES", "FALLBACK_TEXT", "compile_counts", "details", "estimate", "judge", "option_rules"]
