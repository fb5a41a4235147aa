"""torch.compile under TorchNeuron's rules, judged by the one assessment: options flagged by the
compile rules, ops with no kernel inside a compiled region blocking, the JSON and terminal views,
and compile seconds only from the user's assumption (docs/compile.md)."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pytest

from rich.console import Console


from tests.support.release import static_release

from opscan.assess import assess
from opscan.assess.compile_check import judge
from opscan.config import CostConfig
from opscan.assess.gate import failures
from opscan.records import CompileRegion, Draft, GraphBreak, ModelTrace, NotChecked, OpSource, OpUsage, Report
from opscan.reporters import json as json_reporter
from opscan.reporters.terminal import compile as compile_section


def _usage(op: str) -> OpUsage:
    return OpUsage(op, 1, ("forward",), ("torch.float32",), (OpSource("model.py", 9, "m"),), ("train",))


def _trace(regions, ops=("aten::addmm", "aten::sort", "aten::relu")) -> ModelTrace:
    return ModelTrace("script:train.py", "train", "neuron", tuple(_usage(op) for op in ops), compiled=regions)


REGION = CompileRegion("train.py", 25, "module Net", (("dynamic", "True"), ("mode", "'max-autotune'")), 3,
                       True, 3, 2, (GraphBreak("train.py", 13, "Failed to trace builtin operator"),
                                    GraphBreak("train.py", 14, "generic_jump TensorVariable()")),
                       "", ("aten::addmm", "aten::relu", "aten::sort", "prim::device"))


RAISES = {"eager": "cpu-fallback", "compile": "error"}   # a release that says it: no_kernel.compile


def _assessed(regions=(REGION,), statuses=None, cost=None, no_kernel=RAISES) -> Report:
    release = static_release(statuses or {"aten::addmm": "native", "aten::relu": "native",
                                          "aten::sort": "cpu-fallback"}, no_kernel=no_kernel)
    draft = Draft(root=".", tool_version="0", traces=(_trace(regions),), source=NotChecked("test"))
    return assess(draft, release, cost=cost)


def test_options_are_judged_by_the_compile_rules():
    region = replace(REGION, options=(("backend", "'inductor'"), ("dynamic", "True"), ("fullgraph", "False"),
                                      ("mode", "'max-autotune'")))
    check = judge((_trace((region,)),), ())
    rules = {o.name: o.rule for o in check.options}
    assert rules == {"backend": "OPS213", "dynamic": "OPS208", "mode": "OPS207"}
    dynamic = next(o for o in check.options if o.name == "dynamic")
    assert dynamic.severity == "error" and dynamic.source.endswith("reference-torch-compile.html")
    assert (dynamic.path, dynamic.line) == ("train.py", 25)


def test_options_neuron_accepts_are_not_flagged():
    region = replace(REGION, options=(("backend", "'neuron'"), ("dynamic", "False"), ("fullgraph", "True"),
                                      ("mode", "'default'")))
    assert judge((_trace((region,)),), ()).options == ()


def test_no_trace_compiled_means_no_torch_compile_section():
    report = _assessed(regions=())
    assert report.torch_compile is None and report.compile_estimate is None
    compile_doc = json.loads(_json(report))["compile"]
    assert (compile_doc["torch_compile"], compile_doc["estimate"]) == (None, None)


def test_an_op_with_no_kernel_inside_a_region_blocks_where_the_release_says_it_raises():
    report = _assessed()
    check = report.torch_compile
    assert [(o.op, o.status, o.regions) for o in check.no_kernel_ops] == [("aten::sort", "cpu-fallback",
                                                                          ("train.py:25",))]
    assert report.verdict.kind == "blocked"
    assert report.verdict.blockers.compiled_fallback_ops == 1 and report.verdict.blockers.count == 1
    assert "no kernel in torch.compile regions" in report.verdict.headline
    assert failures(report, ("error",)) == ["error: 1 blocker (1 op with no kernel in torch.compile regions)"]


def test_where_the_release_does_not_say_it_is_an_open_point_not_a_blocker():
    for rule in ({"eager": "cpu-fallback", "compile": "unknown"}, None):   # the shipped 2.33 file; no rule
        report = _assessed(no_kernel=rule)
        assert report.torch_compile.no_kernel_compile == "unknown"
        assert report.verdict.blockers.count == 0 and report.verdict.kind == "unknown"
        assert "1 op with no kernel inside torch.compile regions (what it does there is not known for this " \
               "release)" in report.verdict.headline
        assert any(d.startswith("1 op with no kernel inside torch.compile regions may raise (aten::sort)")
                   for d in report.verdict.details)
        task = next(t for t in report.tasks if t.kind == "cpu-fallback")
        assert task.priority == 2 and "may raise (not known for this release)" in task.action
        assert failures(report, ("error",)) == []


def test_where_the_release_says_it_falls_back_nothing_changes():
    report = _assessed(no_kernel={"eager": "cpu-fallback", "compile": "cpu-fallback"})
    assert report.verdict.kind == "fallback" and report.verdict.blockers.count == 0
    assert not any("no kernel inside torch.compile" in d for d in report.verdict.details)
    assert "torch.compile" not in next(t for t in report.tasks if t.kind == "cpu-fallback").action


def test_the_fallback_task_becomes_a_blocker_saying_where():
    report = _assessed()
    task = next(t for t in report.tasks if t.kind == "cpu-fallback")
    assert task.priority == 1 and task.ops == ("aten::sort",)
    assert "torch.compile region at train.py:25" in task.action
    assert "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0" in task.action
    assert report.tasks[0] is task   # the only blocker comes first
    outside = _assessed(regions=(replace(REGION, ops=("aten::addmm",)),))
    assert next(t for t in outside.tasks if t.kind == "cpu-fallback").priority == 2


def test_the_same_op_outside_any_region_falls_back_without_blocking():
    region = replace(REGION, ops=("aten::addmm", "aten::relu"))
    report = _assessed(regions=(region,))
    assert report.torch_compile.no_kernel_ops == ()
    assert report.verdict.kind == "fallback" and report.verdict.blockers.count == 0


@pytest.mark.slow
def test_unknown_ops_inside_a_region_are_named_not_counted():
    report = _assessed(statuses={"aten::addmm": "native", "aten::relu": "native"},   # sort: unknown
                       no_kernel=None)
    assert [(o.op, o.status) for o in report.torch_compile.no_kernel_ops] == [("aten::sort", "unknown")]
    assert report.verdict.blockers.count == 0
    assert any("would raise if it has no kernel" in d for d in report.verdict.details)


def test_region_ops_are_the_ops_the_trace_lists():
    report = _assessed()
    (_target, region), = report.torch_compile.regions
    assert "prim::device" not in region.ops and "aten::addmm" in region.ops


def test_verdict_details_name_graph_breaks_and_options():
    details = _assessed().verdict.details
    assert any(d.startswith("torch.compile: 1 compiled region, 2 graph breaks") and "train.py:13" in d
               for d in details)
    assert any("train.py:25" in d and "(OPS208)" in d for d in details)


def test_fullgraph_with_breaks_is_said():
    region = replace(REGION, options=(("fullgraph", "True"),))
    details = _assessed(regions=(region,)).verdict.details
    assert "torch.compile at train.py:25: fullgraph=True with 2 graph breaks raises on the first call " \
           "(on any backend)" in details
    clean = replace(region, graph_break_count=0, graphs=1, graph_breaks=())
    assert not any("fullgraph" in d for d in _assessed(regions=(clean,)).verdict.details)


def test_json_compile_section():
    doc = json.loads(_json(_assessed()))
    tc = doc["compile"]["torch_compile"]
    region, = tc["regions"]
    assert (region["path"], region["line"], region["graph_break_count"], region["graphs"]) == ("train.py", 25, 2, 3)
    assert [(b["path"], b["line"]) for b in region["graph_breaks"]] == [("train.py", 13), ("train.py", 14)]
    assert region["options"] == {"dynamic": "True", "mode": "'max-autotune'"}
    assert {o["rule"] for o in tc["options"]} == {"OPS207", "OPS208"}
    assert tc["no_kernel_ops"] == [{"op": "aten::sort", "status": "cpu-fallback", "regions": ["train.py:25"],
                                    "blocks": True}]
    assert tc["fallback"]["compile"] == "error"
    assert "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION" in tc["fallback"]["rule"]
    assert any(s.endswith("env-vars.html") for s in tc["fallback"]["sources"])
    assert doc["verdict"]["blockers"]["compiled_fallback_ops"] == 1


def test_compile_seconds_unknown_unless_assumed():
    doc = json.loads(_json(_assessed()))
    estimate = doc["compile"]["estimate"]
    assert estimate["seconds_per_signature"] is None and estimate["seconds"] == []
    assert estimate["counts"] == [{"what": "torch.compile graphs (first call of each region)", "compiles": 3}]
    assumed = json.loads(_json(_assessed(cost=CostConfig(compile_seconds_per_signature=40))))["compile"]["estimate"]
    assert assumed["seconds"] == [{"what": "torch.compile graphs (first call of each region)", "seconds": 120.0}]
    assert assumed["assumed"] is True


def test_terminal_section(tmp_path):
    out = io.StringIO()
    compile_section.section(_assessed(cost=CostConfig(compile_seconds_per_signature=40)),
                            Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "torch.compile — 1 compiled region, 2 graph breaks" in text
    assert "break at train.py:13: Failed to trace builtin operator" in text
    assert "aten::sort has no kernel inside the region at train.py:25: raises" in text
    assert "assumed 40 s per signature" in text and "not measured" in text


def test_terminal_section_silent_without_compile():
    out = io.StringIO()
    compile_section.section(_assessed(regions=()), Console(file=out, width=100, color_system=None))
    assert out.getvalue() == ""


def test_cost_config_reads_compile_seconds(tmp_path):
    from opscan.config import load_config
    from opscan.errors import ConfigError

    (tmp_path / "pyproject.toml").write_text("[tool.opscan.cost]\ncompile-seconds-per-signature = 25\n")
    assert load_config(tmp_path).cost.compile_seconds_per_signature == 25.0
    (tmp_path / "pyproject.toml").write_text("[tool.opscan.cost]\ncompile-seconds-per-signature = \"fast\"\n")
    try:
        load_config(tmp_path)
    except ConfigError as exc:
        assert any("compile-seconds-per-signature" in p for p in exc.problems), exc.problems
    else:
        raise AssertionError("a string of seconds must be a config error")


def _json(report: Report) -> str:
    out = io.StringIO()
    json_reporter.render(report, out)
    return out.getvalue()
