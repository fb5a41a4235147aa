"""The one verdict: its kinds (by evidence and by what was checked), and its agreement with the gate."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from pathlib import Path

import pytest


from tests.support import sample
from opscan.assess.gate import failures
from opscan.records import (
    VERDICT_KINDS, BaselineStatus, Coverage, Evidence, Finding, Location, ModelTrace, NotChecked, NothingToCheck,
    OpSource, OpUsage,
)
from opscan.assess.verdict import judge

SNAPSHOT = Evidence("source-snapshot", "pre-release source snapshot", repo="aws-neuron/torch-neuronx", commit="abc")
DOCUMENTED = Evidence("documented", "listed in the docs", url="https://example.invalid/doc", date="2026-01-01")
PROBED = Evidence("probed", "sample inputs run and compared with the CPU", install="torch-neuronx 2.14.3.0",
                  compared=True)
REGISTERED = Evidence("probed", "registered on a real install", install="torch-neuronx 2.14.3.0", date="2026-11-30")


def _trace(*ops: str, complete: bool = True) -> ModelTrace:
    return ModelTrace("model.py:build", "train", "neuron",
                      tuple(OpUsage(op, 1, ("forward",), (), (OpSource("model.py", 3),)) for op in ops),
                      complete=complete, stopped_at="" if complete else "aten::nonzero at model.py:9")


def _report(findings=(), traces=None, coverage=(), baseline=None):
    traces = (_trace("aten::mm", "aten::relu"),) if traces is None else traces
    return sample.report(findings=tuple(findings), traces=traces, coverage=tuple(coverage), baseline=baseline)


def _cov(status: str, *evidence: Evidence, op: str = "aten::mm") -> Coverage:
    return Coverage(op, status, evidence, "high" if evidence and evidence[0].kind != "source-snapshot" else "low")


def test_kinds_are_a_closed_documented_vocabulary():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "check.md").read_text(encoding="utf-8")
    assert list(VERDICT_KINDS) == ["blocked", "unknown", "fallback", "unchecked", "likely", "ready"]
    for kind in VERDICT_KINDS:
        assert f"| `{kind}` |" in doc, kind


def test_ready_only_on_documented_or_probed_evidence():
    ready = _report(coverage=(_cov("native", DOCUMENTED), _cov("native", PROBED, op="aten::relu")),
                    baseline=None).verdict
    assert (ready.kind, ready.headline) == ("ready", "ready")
    assert ready.source_checked and ready.ops_checked


def test_pre_release_source_is_likely_never_ready():
    judged = _report(coverage=(_cov("native", SNAPSHOT), _cov("native", DOCUMENTED, op="aten::relu")),
                     baseline=None).verdict
    assert judged.kind == "likely"
    assert judged.headline == ("likely — unverified: 1 op rests on kernels registered in a pre-release source "
                               "snapshot; confirm with `opscan db probe --report` on a paired install")
    inferred = _report(coverage=(replace(_cov("composite", Evidence("inferred", "decomposes")), parts=("aten::x",)),
                                 _cov("native", DOCUMENTED, op="aten::relu")), baseline=None).verdict
    assert inferred.kind == "likely" and "1 op on opscan's inference only" in inferred.headline


def test_a_view_that_reaches_no_backend_op_needs_no_verification():
    """aten::detach decomposes into nothing the device runs: with probed kernels the model is ready."""
    view = Coverage("aten::mm", "composite", (Evidence("inferred", "decomposes into no backend op"),), "high")
    judged = _report(coverage=(view, _cov("native", PROBED, op="aten::relu")), baseline=None).verdict
    assert (judged.kind, judged.headline) == ("ready", "ready")
    bare = _report(coverage=(Coverage("aten::mm", "composite"), _cov("native", PROBED, op="aten::relu")),
                   baseline=None).verdict
    assert bare.kind == "likely"                 # a status without any evidence proves nothing


def test_no_model_traced_says_what_was_checked_and_is_never_ready():
    judged = _report(traces=(), baseline=None).verdict
    assert judged.kind == "unchecked"
    assert judged.headline.startswith("source: no CUDA pins; ops: not checked — no model found")
    assert judged.source_checked and not judged.ops_checked
    given = judge(_report(traces=(), baseline=None), ops_not_checked="tracing skipped (--no-trace)")
    assert given.headline == "source: no CUDA pins; ops: not checked — tracing skipped (--no-trace)"


def test_a_training_run_that_stepped_with_no_device_op_checked_no_op_and_is_never_ready():
    """A script whose model and batches stay on the CPU reaches its step with no op on the device."""
    cpu_only = replace(_trace(), steps=1)
    judged = _report(traces=(cpu_only,), baseline=None).verdict
    assert judged.kind == "unchecked" and not judged.ops_checked
    assert "ops: not checked" in judged.headline and "no op of the step reached the device" in judged.headline
    stepped = replace(_trace("aten::mm", "aten::relu"), steps=1)   # ops on the device: judged by them
    ready = _report(traces=(stepped,), coverage=(_cov("native", DOCUMENTED), _cov("native", PROBED, op="aten::relu")),
                    baseline=None).verdict
    assert ready.kind == "ready" and ready.ops_checked


def test_a_trace_without_a_source_scan_is_unchecked():
    report = _report(coverage=(_cov("native", DOCUMENTED), _cov("native", PROBED, op="aten::relu")), baseline=None)
    judged = judge(report, source=NotChecked("`opscan trace` lists ops only"))
    assert judged.kind == "unchecked" and not judged.source_checked and judged.ops_checked
    assert judged.headline == ("source: not checked — `opscan trace` lists ops only; "
                               "ops: 2 traced ops, none known to fail")
    assert judge(report, source=NothingToCheck()).kind == "ready"   # the zoo: no project source exists


def test_an_incomplete_trace_or_unknown_ops_are_not_proven():
    incomplete = _report(traces=(_trace("aten::mm", complete=False),), coverage=(_cov("native", DOCUMENTED),),
                         baseline=None).verdict
    assert incomplete.kind == "unknown" and "1 incomplete trace" in incomplete.headline
    unknown = _report(coverage=(_cov("native", DOCUMENTED),), baseline=None).verdict   # aten::relu has no entry
    assert unknown.kind == "unknown" and "1 op of unknown status" in unknown.headline


def test_unknown_ranks_above_fallback():
    judged = _report(coverage=(_cov("cpu-fallback", DOCUMENTED),), baseline=None).verdict
    assert judged.kind == "unknown"
    assert any("1 op on CPU fallback: aten::mm" == d for d in judged.details)
    fallback = _report(coverage=(_cov("cpu-fallback", DOCUMENTED), _cov("native", PROBED, op="aten::relu")),
                       baseline=None).verdict
    assert (fallback.kind, fallback.headline) == ("fallback", "runs with 1 op on CPU fallback")


def test_scan_only_verdict_counts_custom_kernels_and_libraries():
    kernel = Finding("OPS302", "triton-kernel", "custom-kernel", "error", "Triton kernel", Location("k.py", 3),
                     snippet="@triton.jit", task="kernel", subject="add_kernel")
    library = Finding("OPS401", "cuda-only-library-import", "cuda-only-lib", "error", "flash_attn",
                      Location("m.py", 1), snippet="import flash_attn", task="library", subject="flash_attn")
    judged = _report(findings=(kernel, library), traces=(), baseline=None).verdict
    assert judged.kind == "blocked"
    assert judged.headline == "blocked by 1 custom kernel, 1 CUDA-only library"
    assert "ops: not checked — no model found (configure [[tool.opscan.models]] or pass --model)" in judged.details


def test_baseline_says_known_and_new_never_no_pins():
    judged = _report(traces=(), baseline=BaselineStatus("base.json", known=27)).verdict
    assert judged.kind == "unknown"
    assert "27 known findings hidden by the baseline, 0 new" in judged.headline
    assert "baseline base.json: 27 known, 0 new findings" in judged.details
    assert "no CUDA pins" not in judged.headline


def _variants():
    """Reports over every combination of the facts the verdict and the gate read."""
    pin = sample.findings()[0]
    guarded = replace(pin, guarded=True, location=replace(pin.location, line=99))
    warning = sample.findings()[4]
    statuses = ("native", "cpu-fallback", "unsupported", "unknown")
    for findings, status, complete, traced, known in itertools.product(
            ((), (pin,), (guarded,), (warning,), (guarded, warning)), statuses, (True, False),
            (True, False), (0, 3)):
        traces = (_trace("aten::mm", complete=complete),) if traced else ()
        coverage = () if status == "unknown" else (_cov(status, PROBED),)
        baseline = BaselineStatus("b.json", known=known) if known else None
        yield _report(findings=findings, traces=traces, coverage=coverage, baseline=baseline)


@pytest.mark.parametrize("report", list(_variants()))
def test_verdict_and_default_gate_never_contradict(report):
    blocked = report.verdict.kind == "blocked"
    assert bool(failures(report, ("error",))) == blocked, report.verdict
    assert report.verdict.kind in VERDICT_KINDS
    if report.verdict.kind in ("ready", "likely"):
        assert report.verdict.ops_checked and report.verdict.source_checked and report.baseline is None


def test_the_zoo_reads_the_same_verdict():
    """A zoo row's verdict is the analysis verdict of its trace; "likely" is shown as a caution."""
    import io

    from tests.support.release import static_release

    from opscan.containment.outcome import Outcome
    from opscan.zoo.render import markdown
    from opscan.zoo.render.common import verdict_label
    from opscan.zoo.results import assess_trace, build_row
    from opscan.zoo.execution import ZooRun
    from opscan.zoo.selection import ZooTarget

    trace = _trace("aten::mm", "aten::relu")
    statuses = {"aten::mm": "native", "aten::relu": "native"}
    probed = static_release(statuses, "x==1", kind="probed")
    snapshot = static_release(statuses, "x==1", kind="source-snapshot")
    target = ZooTarget("tiny", "hf:tiny")
    assert build_row(target, Outcome("tiny", "ok", trace), probed).verdict == "ready"
    row = build_row(target, Outcome("tiny", "ok", trace), snapshot)
    assert row.verdict == assess_trace(trace, snapshot).verdict.kind == "likely"
    assert assess_trace(trace, snapshot).verdict.headline.startswith(
        "likely — unverified: 2 ops rest on kernels registered in a pre-release source snapshot")
    incomplete = replace(trace, complete=False)
    assert build_row(target, Outcome("tiny", "partial", incomplete), probed).verdict == "unknown"
    fallback = static_release({**statuses, "aten::relu": "cpu-fallback"}, "x==1", kind="probed")
    unknown = static_release({"aten::mm": "cpu-fallback"}, "x==1", kind="probed")
    assert build_row(target, Outcome("tiny", "ok", trace), fallback).verdict == "fallback"
    assert build_row(target, Outcome("tiny", "ok", trace), unknown).verdict == "unknown"   # unknown outranks fallback
    assert verdict_label("likely") == "likely (unverified)"
    out = io.StringIO()
    markdown.render(ZooRun((row,), (), {"backend": "x==1"}), out)
    assert "1 models against x==1: 1 likely (unverified)" in out.getvalue()
    assert "| tiny | likely (unverified) |" in out.getvalue()
    from opscan.zoo.render import html

    page = io.StringIO()
    html.render(ZooRun((row,), (), {"backend": "x==1"}), page)
    assert '<td class="v-likely">likely (unverified)</td>' in page.getvalue()
    green = re.search(r"\.v-ready\{background:(#[0-9a-f]+)\}", page.getvalue())[1]
    assert green not in re.search(r"\.v-likely\{background:(#[0-9a-f]+)\}", page.getvalue())[1]


def test_a_known_failure_on_the_traced_dtypes_is_not_proven_narrowing_is_a_note():
    from opscan.records import OpCaveat

    narrowed = OpCaveat("float64-narrowed", "aten::mm computes in float64; the backend narrows it to float32",
                        ("aten::mm",), ("torch.float64",))
    failing = OpCaveat("known-failure", "aten::relu fails the backend's tests for torch.int8", ("aten::relu",),
                       ("torch.int8",), tests=("test_relu_int8",))
    report = _report(coverage=(_cov("native", DOCUMENTED), _cov("native", PROBED, op="aten::relu")), baseline=None)
    judged = judge(replace(report, caveats=(narrowed,)))
    assert judged.kind == "ready" and narrowed.message in judged.details    # said, but numerics only
    judged = judge(replace(report, caveats=(narrowed, failing)))
    assert judged.kind == "unknown" and "1 known failure of the backend on the traced dtypes" in judged.headline
    assert failing.message in judged.details


def test_a_probe_without_samples_is_not_verification():
    judged = _report(coverage=(_cov("native", REGISTERED), _cov("native", PROBED, op="aten::relu"))).verdict
    assert judged.kind == "likely"
    assert judged.headline.startswith("likely — unverified: 1 op only registered on a probed install of "
                                      "2026-11-30, never run (probe without --samples)")


def test_ready_needs_a_torch_that_pairs_with_the_release():
    report = _report(coverage=(_cov("native", DOCUMENTED), _cov("native", PROBED, op="aten::relu")))
    assert report.verdict.kind == "ready"
    pairing = ("installed torch 2.13.0 does not pair with torch-neuronx-xla==2.32.0 (torch-neuronx 2.9.0 with "
               "torch 2.9); composite expansions and op names are judged with the installed torch")
    judged = judge(report, pairing=pairing)
    assert judged.kind == "likely"
    assert "installed torch 2.13.0 does not pair with torch-neuronx-xla==2.32.0" in judged.headline
    assert judged.headline != "ready" and failures(report, ("error",)) == []
