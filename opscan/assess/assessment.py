"""The one assessment after tracing: coverage, caveats, notes, port tasks and the verdict of a Report.

`opscan PATH` (opscan/pipeline/analyse.py), `opscan trace` (opscan/commands/trace.py) and every zoo row
(opscan/zoo/results.py) hand what they traced and found to `assess`, so the three answer alike:
the same op statuses (one lookup per op in one `db.Release`), the same caveats
(opscan/db/caveats.py), the same tasks (opscan/plan) and the same verdict (opscan/assess/verdict.py).
A caller may leave parts out (the zoo has no findings, `opscan trace` no source), never redo them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opscan.assess import compile_check
from opscan.assess.library_ops import known_libraries
from opscan.plan.cost import CostConfig
from opscan.records import (Coverage, Draft, Fallback, ModelTrace, OpCaveat, OpNote, OpUsage, Report, ScanFacts,
                            Shrink, Status, StepKind, TaskKind, status_of)
from opscan.plan import build_tasks
from opscan.plan.measure import kernel_sources, usage
from opscan.assess import step
from opscan.assess.verdict import judge

if TYPE_CHECKING:
    from opscan.db.release import Release

NO_DATABASE = "no coverage database: every traced op is reported as unknown"

# NOTE [one assessment]
# Before this module, `opscan PATH`, `opscan trace` and the zoo each built their Report: trace had
# its own notes and no tasks, the zoo no caveats, PATH only the torch-pairing note. Now all three
# get everything: the zoo rows carry the caveats, `opscan trace` the tasks, and `opscan PATH` the
# notes `opscan trace` gave (op counts per status, and how to turn unknown into known for a
# release with a partial kernel list). What differs between them is only what they hand in:
# findings and a project root (PATH), and why source or ops were not checked (for the verdict).
# What they hand in is a `Draft` (opscan/records/report.py); what comes out is a `Report`.


def assess(draft: Draft, release: Release | None, *, project_root: Path | None = None,
           cost: CostConfig | None = None, facts: ScanFacts = ScanFacts()) -> Report:
    """The Report of `draft` (what the run traced and found, and what it could not check), judged
    against `release`.

    Args:
        draft: the run's findings, traces, notes, ... and why source or ops were not checked
            (`Draft.source`, `Draft.ops_not_checked`, `Draft.unchecked`: see `verdict.judge`); its
            notes are kept and the assessment's notes (torch pairing, op counts, what unknown
            means) follow them.
        release: an opscan.db Release, or None (no database: every traced op is unknown).
        project_root: the scanned project, whose files the tasks measure (None: no source).
        cost: the cost model of the tasks (default: CostConfig()).
        facts: what the scan learnt beside its findings (import bindings, library use, kernel
            spans), which the tasks are measured from (opscan/scan/facts.py).
    Returns:
        The finished Report, with `verdict` set.
    """
    traces = draft.traces
    ops = sorted({u.op for t in traces for u in t.ops})
    notes = list(draft.notes)
    coverage: tuple[Coverage, ...] = ()
    caveats: tuple[OpCaveat, ...] = ()
    on_ops: tuple[OpNote, ...] = ()
    if release is not None and traces:
        from opscan.db.annotate import annotate, op_notes, traced_dtypes
        from opscan.db.caveats import op_caveats

        coverage, coverage_notes = annotate(release, ops, traced_dtypes(traces))   # per dtype, parts too
        on_ops = op_notes(release, ops)
        notes.extend(coverage_notes)
        notes.extend(sdpa_assumption(release, ops))
        caveats = op_caveats(release, traces)
    elif traces:
        notes.append(NO_DATABASE)
        coverage = tuple(Coverage(op, Status.UNKNOWN, (), "low", "no coverage database loaded") for op in ops)
    findings = draft.findings
    measured = project_root if findings else None   # the root whose files the tasks measure
    fallbacks = fallback_costs(traces, coverage)
    minors = tuple(p.torch for p in release.packages) if release is not None else ()
    known = known_libraries((u.op for t in traces for u in t.ops if u.custom), minors,   # NOTE [library ops]
                            {f.subject for f in findings if f.task == TaskKind.LIBRARY and f.subject})
    tasks = build_tasks(findings, traces, coverage, cost,
                        kernel_sources(measured, findings, facts) if measured is not None else None,
                        usage(findings, facts) if measured is not None else None, fallbacks=fallbacks, known=known)
    compiled = compile_check.judge(traces, coverage, release=release)   # NOTE [compile semantics]
    tasks = compile_check.plan(tasks, compiled)
    report = Report(
        root=draft.root, tool_version=draft.tool_version, findings=findings, traces=traces,
        coverage=coverage, tasks=tasks, backend=release.spec if release is not None else draft.backend,
        files_scanned=draft.files_scanned, notes=tuple(notes), baseline=draft.baseline,
        hours_per_day=draft.hours_per_day, rules=draft.rules, project_sources=draft.project_sources,
        discovery=draft.discovery, caveats=tuple(caveats), fallbacks=fallbacks, release_notes=on_ops,
        torch_compile=compiled, entries=draft.entries)
    report = replace(report, compile_estimate=compile_check.estimate(report, cost))   # NOTE [compile counts]
    pairing = ""
    if release is not None and traces:
        from opscan.db import registry

        version = registry.torch_version()
        pairing = (release.pairing_warning(version) or "") if version is not None else ""
    verdict = judge(report, ops_not_checked=draft.ops_not_checked, source=draft.source, unchecked=draft.unchecked,
                    pairing=pairing, remedy=draft.remedy, source_only=draft.source_only)
    stopped = draft.step if draft.step is not None and draft.step.kind is StepKind.NONE and draft.step.command else None
    return replace(report, verdict=step.apply(verdict, draft.step if traces else stopped))   # NOTE [the step answered
    # for]; with nothing traced, only NOTE [a command that stopped, nothing traced] (opscan/pipeline/entry_step.py)


# NOTE [fallback scaling]
# A trace is often smaller than the model it stands for: `opscan zoo --layers N` cuts the layer
# count (the written config.json records the real one, targets/hf/defaults.SHRUNK_KEY), and the
# inputs have a small batch and sequence length (records.Shrink keeps the traced ones; the real
# ones count only when stated). The fallback cost per step is scaled back to the real model so:
#   - calls (and syncs, one per call) inside the repeated layers (the module path under
#     Shrink.layer_list, found as the outermost nn.ModuleList holding the most parameters; a
#     backward op counts where its forward op ran) x real layers / traced layers; other calls
#     (embedding, loss, head, optimizer: a foreach call takes all parameters at once) as traced;
#   - bytes, per tensor of each call (recorder.LayerShapes): inside the layers every byte x the
#     layer ratio; activation-sized tensors (not the shape of a parameter, more than one element)
#     also x the batch x sequence ratio; outside the layers, tensors of a shape only the layers'
#     parameters have (their gradients and optimizer states) x the layer ratio, activation-sized
#     ones x the batch x sequence ratio, the rest as traced.
#   - the width (issue 36): a model built smaller in width than the real one (a tiny config, a small
#     variant) keeps its traced hidden size, so each tensor's bytes also grow x (real width / traced
#     width) per dim of the traced width or a small multiple of it (4H, 3H; at most two dims: a
#     [B, S, H] activation once, an [H, 4H] weight twice). The traced width is the builder's
#     (config `hidden_size` / `n_embd` / `d_model`) or the size most of the model's norm layers
#     normalize over (else most linear layers' input width); the real one is `--real-hidden` /
#     `real-hidden`, or the `hidden_size` of a config.json beside the target's file. When other
#     sizes were scaled but the real width is not known, `scaled_by` says "not scaled: width";
#   - an activation with two dims of the traced sequence length ([B, heads, S, S] attention
#     scores) grows with the square of the sequence: x batch x sequence, and x sequence once more.
# What is exact: the traced figures (kept as Fallback.traced_*) and the layer ratio of calls. What
# is an estimate: layers are taken as alike (a first-k-dense MoE stack scales its MoE-only ops over
# all layers), a tensor not growing at all (a fixed-size buffer that is no parameter) is scaled
# with the tokens, a weight-shaped activation is taken as a weight, a head count or head size
# (neither is the width) is not scaled, and a dim of a parameter-shaped tensor that equals the
# traced width by chance is taken as the width.


def fallback_costs(traces: tuple[ModelTrace, ...], coverage: tuple[Coverage, ...]) -> tuple[Fallback, ...]:
    """The cost per training step of every traced op that runs, or may run, on the CPU (NOTE
    [fallback cost] in opscan/records/ops.py): the bytes its train-step calls read and write on the
    device (copied to the host and back), one sync and one call per call; scaled back to the real
    model where the trace was shrunk (NOTE [fallback scaling]); summed over the traces."""
    status = {c.op: c.status for c in coverage}
    totals: dict[str, list[Any]] = {}
    for trace in traces:
        factors = scale_factors(trace.shrink)
        for use in trace.ops:
            if status_of(status.get(use.op)).may_fall_back:
                cost = totals.setdefault(use.op, [0, 0, 0.0, 0.0, set()])
                bytes_, calls = scaled(use, factors)
                cost[0] += use.step_bytes
                cost[1] += use.step_calls
                cost[2] += bytes_
                cost[3] += calls
                if factors.how and (bytes_ != use.step_bytes or calls != use.step_calls or factors.unsure):
                    cost[4].add(factors.how)
    out = []
    for op, (bytes_, calls, real_bytes, real_calls, how) in sorted(totals.items()):
        real_bytes, real_calls = round(real_bytes), round(real_calls)
        out.append(Fallback(op, status[op], real_bytes, real_calls, real_calls,
                            scale=round(real_bytes / bytes_, 3) if bytes_ else 1.0,
                            traced_bytes=bytes_, traced_syncs=calls, traced_calls=calls,
                            scaled_by="; ".join(sorted(how))))
    return tuple(out)


@dataclass(frozen=True)
class Factors:
    """How one trace's figures grow to the real model's (NOTE [fallback scaling])."""

    layers: float = 1.0
    tokens: float = 1.0              # batch x sequence
    seq: float = 1.0                 # sequence alone (the second S of an [.., S, S] tensor)
    width: float = 1.0               # per dim of the hidden size
    how: str = ""                    # what was scaled, and "not scaled: width" when the width was not
    unsure: bool = False             # a width to scale, but sizes that could not be told apart (NOTE [sizes by role])


def scale_factors(shrink: Shrink | None) -> Factors:
    """The scale factors of a trace (NOTE [fallback scaling]); dims whose sizes coincide and could not
    be told apart are not scaled in width, and `how` says why (NOTE [sizes by role] in opscan/trace/roles.py)."""
    if shrink is None:
        return Factors()
    layers, tokens, how = ratios(shrink)
    seq = shrink.real_seq_len / shrink.seq_len if shrink.real_seq_len and shrink.seq_len else 1.0
    width = 1.0
    unsure = shrink.roles.startswith("not told apart")
    if shrink.real_hidden and shrink.hidden and shrink.real_hidden != shrink.hidden and not unsure:
        width = shrink.real_hidden / shrink.hidden
        how = "; ".join(filter(None, (how, f"width {shrink.hidden} -> {shrink.real_hidden}"
                                           + (f" ({shrink.hidden_from})" if shrink.hidden_from else ""))))
    elif shrink.real_hidden and shrink.hidden and shrink.real_hidden != shrink.hidden:
        seq = 1.0   # the [.., S, S] dims are as unsure as the width's
        how = "; ".join(filter(None, (how, f"not scaled: width {shrink.hidden} -> {shrink.real_hidden} ("
                                           f"{shrink.roles.removeprefix('not told apart: ')})")))
    elif how and not (shrink.real_hidden and shrink.hidden):   # equal widths: nothing to scale
        how += "; not scaled: width" + ("" if shrink.hidden else " (traced width not found)")
    if shrink.roles.startswith("probe ") and (width != 1.0 or seq != 1.0):
        how += f"; the sequence told apart from equal model sizes by a second trace at {shrink.roles[6:]}"
    return Factors(layers, tokens, seq, width, how, unsure=unsure and width == 1.0 and "not scaled: width " in how)


def ratios(shrink: Shrink | None) -> tuple[float, float, str]:
    """(layer ratio, batch x sequence ratio, what was scaled) of a trace (NOTE [fallback scaling])."""
    if shrink is None:
        return 1.0, 1.0, ""
    layers, tokens, how = 1.0, 1.0, []
    if shrink.real_layers and shrink.layers and shrink.real_layers != shrink.layers:
        layers = shrink.real_layers / shrink.layers
        how.append(f"layers {shrink.layers} -> {shrink.real_layers} ({shrink.layer_list})")
    batch = shrink.real_batch / shrink.batch if shrink.real_batch and shrink.batch else 1.0
    seq = shrink.real_seq_len / shrink.seq_len if shrink.real_seq_len and shrink.seq_len else 1.0
    if batch != 1.0 or seq != 1.0:
        tokens = batch * seq
        how.append(f"batch x sequence {shrink.batch}x{shrink.seq_len} -> "
                   f"{shrink.real_batch or shrink.batch}x{shrink.real_seq_len or shrink.seq_len}")
    return layers, tokens, "; ".join(how)


def scaled(usage: OpUsage, factors: Factors) -> tuple[float, float]:
    """(bytes, calls) of one op's traced step at the real model's size (NOTE [fallback scaling])."""
    layers, tokens = factors.layers, factors.tokens
    calls = usage.step_calls - usage.step_layer_calls + layers * usage.step_layer_calls
    if usage.step_shape_bytes:
        grow = (1.0, layers, tokens, layers * tokens)
        return sum(count * grow[kind] * factors.width ** width * factors.seq ** seq
                   for kind, width, seq, count in usage.step_shape_bytes), calls
    fixed = usage.step_bytes - usage.step_layer_bytes - usage.step_token_bytes - usage.step_layer_token_bytes
    bytes_ = (fixed + layers * usage.step_layer_bytes + tokens * usage.step_token_bytes
              + layers * tokens * usage.step_layer_token_bytes)
    return bytes_, calls


SDPA_OPS = ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_")
SDPA_PATHS = {"math": "the math path (matmul, softmax, matmul: no fused kernel)",
              "overrideable": "the backend's fused kernel (_scaled_dot_product_fused_attention_overrideable)",
              "overrideable-4d": "the backend's fused kernel (_scaled_dot_product_fused_attention_overrideable) "
                                 "for 4-D query/key/value, the math path otherwise"}


def sdpa_assumption(release: Release, ops: list[str]) -> tuple[str, ...]:
    """The note on which SDPA path the trace assumed, with its evidence, when the model traced attention."""
    if not any(op.startswith(SDPA_OPS) for op in ops):
        return ()
    evidence = "; ".join(e.text for e in release.evidence(release.sdpa_sources)) or "no evidence stated"
    return (f"SDPA path assumed for {release.spec}: {SDPA_PATHS.get(release.sdpa_policy, release.sdpa_policy)} "
            f"({evidence}); the ops traced for attention follow this assumption",)
