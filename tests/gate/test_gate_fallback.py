"""A release that documents its CPU fallback: unlisted ops run (device-or-cpu), never block, and gate on `fallback`."""

from __future__ import annotations


import pytest


from tests.support.release import static_release

from opscan.assess import assess
from opscan.assess.gate import failures
from dataclasses import replace

from opscan.records import Draft, ModelTrace, NothingToCheck, OpSource, OpUsage, Report

pytest.importorskip("torch")

EAGER_FALLBACK = {"eager": "cpu-fallback", "compile": "unknown", "note": "ops without a kernel run on the CPU",
                  "not_supported": {"ops": ["aten::quantize_per_*"], "evidence": ["src"],
                                    "note": "quantized variants are not supported"}}


def _judged(*ops: str, no_kernel=EAGER_FALLBACK) -> Report:
    release = static_release({"aten::mm": "native"}, kind="documented", no_kernel=no_kernel)
    trace = ModelTrace("model.py:build", "train", "neuron",
                       tuple(OpUsage(op, 2, ("forward",), ("torch.float32",), (OpSource("model.py", 7),),
                                     ("train",), step_calls=2, step_bytes=3_000_000) for op in ops))
    return assess(Draft(root="", tool_version="", traces=(trace,), source=NothingToCheck()), release)


def test_only_unlisted_ops_runs_with_possible_cpu_fallbacks_and_names_them():
    report = _judged("aten::mm", "aten::sort.stable", "aten::topk")
    status = {c.op: c.status for c in report.coverage}
    assert status == {"aten::mm": "native", "aten::sort.stable": "device-or-cpu", "aten::topk": "device-or-cpu"}
    verdict = report.verdict
    assert verdict.kind == "fallback"
    assert verdict.headline == ("runs with possible CPU fallbacks: 2 ops may run on the CPU "
                                "(aten::sort.stable, aten::topk)")
    assert verdict.blockers.count == 0
    assert failures(report, ("error",)) == []                      # the default gate passes
    assert failures(report, ("fallback",)) == [
        "fallback: 2 ops that may run on the CPU: aten::sort.stable, aten::topk"]
    assert any("under torch.compile: unknown" in note for note in report.notes)
    assert [t.kind for t in report.tasks if t.group == "op"] == ["may-fall-back"]
    # the cost of each, per training step, from the trace (NOTE [fallback cost])
    assert [(f.op, f.bytes_per_step, f.syncs_per_step, f.calls_per_step) for f in report.fallbacks] == [
        ("aten::sort.stable", 3_000_000, 2, 2), ("aten::topk", 3_000_000, 2, 2)]
    assert ("CPU fallbacks would copy 6.0 MB between host and device per training step at the traced shapes, "
            "with 4 syncs") in " ".join(verdict.details)
    from opscan.reporters.json import to_dict

    ops = {o["op"]: o for o in to_dict(report)["ops"]}
    assert ops["aten::topk"]["fallback"] == {
        "bytes_per_step": 3_000_000, "syncs_per_step": 2, "calls_per_step": 2, "scaled_by": "",   # not shrunk
        "traced": {"bytes_per_step": 3_000_000, "syncs_per_step": 2, "calls_per_step": 2}}
    assert "fallback" not in ops["aten::mm"]
    task = next(t for t in report.tasks if t.kind == "may-fall-back")
    assert "they would copy 6.0 MB between host and device per training step, with 4 syncs" in task.why
    from opscan.reporters import markdown

    import io
    out = io.StringIO()
    markdown.render(report, out)
    assert "| `aten::topk` | device-or-cpu | 3.0 MB, 2 syncs |" in out.getvalue()


def test_a_class_the_docs_call_not_supported_blocks():
    report = _judged("aten::mm", "aten::quantize_per_tensor")
    assert report.verdict.kind == "blocked" and report.verdict.blockers.unsupported_ops == 1
    assert failures(report, ("error",))


def test_without_the_rule_unlisted_ops_stay_unknown():
    report = _judged("aten::mm", "aten::topk", no_kernel=None)
    assert {c.op: c.status for c in report.coverage}["aten::topk"] == "unknown"
    assert report.verdict.kind == "unknown"


def test_the_sdpa_path_assumption_is_shown_when_the_model_traces_attention():
    from opscan.db import load_release

    release = load_release("torchneuron==2.33.0")
    trace = ModelTrace("model.py:build", "train", "neuron",
                       (OpUsage("aten::_scaled_dot_product_fused_attention_overrideable", 1, ("forward",)),))
    report = assess(Draft(root="", tool_version="", traces=(trace,), source=NothingToCheck()), release)
    note = next(n for n in report.notes if n.startswith("SDPA path assumed for torchneuron==2.33.0"))
    assert "for 4-D query/key/value, the math path otherwise" in note and "pre-release source" in note
    plain = _judged("aten::mm")
    assert not any(n.startswith("SDPA path") for n in plain.notes)


def test_a_dtype_caveat_points_at_the_calls_with_that_dtype():
    from opscan.db import load_release

    f32, f64 = OpSource("model.py", 7), OpSource("model.py", 9)
    usage = OpUsage("aten::mul.Tensor", 2, ("forward",), ("torch.float32", "torch.float64"), (f32, f64),
                    dtype_sources=(("torch.float32", (f32,)), ("torch.float64", (f64,))))
    trace = ModelTrace("model.py:build", "train", "neuron", (usage,))
    report = assess(Draft(root="", tool_version="", traces=(trace,), source=NothingToCheck()),
                    load_release("torchneuron==2.33.0"))
    narrowed = next(c for c in report.caveats if c.kind == "float64-narrowed")
    assert narrowed.sources == (f64,)
    assert narrowed.message.endswith("line calling it: model.py:9")
    older = replace(usage, dtype_sources=())   # a trace recorded before sources per dtype
    report = assess(Draft(root="", tool_version="", traces=(replace(trace, ops=(older,)),), source=NothingToCheck()),
                    load_release("torchneuron==2.33.0"))
    narrowed = next(c for c in report.caveats if c.kind == "float64-narrowed")
    assert "(any dtype): model.py:7, model.py:9" in narrowed.message
