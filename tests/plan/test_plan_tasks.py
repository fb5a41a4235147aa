"""Port tasks: grouping by fix, sizing by the cost model, priority, dependency order, verdict."""

from __future__ import annotations

from dataclasses import replace

import networkx as nx

from tests.support import sample

from opscan.config import CostConfig
from opscan.records import Coverage, Evidence, Finding, Location, ModelTrace, OpSource, OpUsage
from opscan.plan import build_tasks, total_days
from opscan.plan.measure import kernel_sources
from opscan.scan import scan_paths
from opscan.plan.ordering import graph
from opscan.assess.verdict import judge


def verdict(report):
    """The verdict as the analysis judges it (baseline left out: these tests are about the plan)."""
    return judge(replace(report, baseline=None))


def _pin(path: str, line: int, text: str = 'x.to("cuda")') -> Finding:
    return Finding("OPS101", "hardcoded-cuda-device", "device-string", "error", "pinned",
                   Location(path, line), snippet=text, task="device-agnostic", subject="cuda")


def test_grouped_by_fix_not_by_file():
    findings = tuple(_pin(f"f{i % 6}.py", i + 1) for i in range(14))
    (task,) = build_tasks(findings, (), ())
    assert task.id == "device-agnostic"
    assert task.title == "make device selection device-agnostic (14 sites in 6 files, 14 blocking)"
    assert len(task.sites) == 14 and task.priority == 1
    assert task.sources and all(url.startswith("https://") for url in task.sources)


def test_every_kind_of_task_and_its_priority():
    report = sample.report()
    tasks = {t.id: t for t in report.tasks}
    assert set(tasks) == {"device-agnostic", "distributed-backend", "kernel:selective_scan", "library:flash_attn",
                          "unsupported-ops", "cpu-fallback", "unknown-ops", "backend-flags"}
    assert tasks["cpu-fallback"].ops == ("aten::_fused_adamw_",)
    assert "foreach" in tasks["cpu-fallback"].action
    assert tasks["cpu-fallback"].priority == 2          # runs every step
    assert tasks["unsupported-ops"].priority == 1       # blocker
    assert tasks["backend-flags"].priority == 3         # one-off, not an error
    assert tasks["unknown-ops"].ops == ("aten::gelu",)
    assert tasks["unknown-ops"].title.startswith("1 op of unknown status")
    assert "opscan db probe" in tasks["unknown-ops"].title
    assert tasks["unsupported-ops"].title == "provide 1 op the backend rejects: `aten::embedding_dense_backward`"


def test_dependency_order_device_distributed_kernels_performance():
    report = sample.report()
    order = [t.id for t in report.tasks]
    g = graph(report.tasks)
    assert nx.is_directed_acyclic_graph(g)
    for a, b in g.edges:
        assert order.index(a) < order.index(b)
    assert order.index("device-agnostic") < order.index("distributed-backend") < order.index("kernel:selective_scan")
    assert order.index("kernel:selective_scan") < order.index("cpu-fallback")
    tasks = {t.id: t for t in report.tasks}
    # only real precedence: the process group follows the device; it does not wait for op probing
    assert tasks["distributed-backend"].depends_on == ("device-agnostic",)
    assert "backend-flags" not in {d for t in report.tasks for d in t.depends_on}
    assert tasks["backend-flags"].depends_on == ("device-agnostic",)
    assert set(tasks["cpu-fallback"].depends_on) == {"device-agnostic", "unknown-ops", "kernel:selective_scan",
                                                     "library:flash_attn"}
    for task in report.tasks:
        assert len(task.depends_reasons) == len(task.depends_on) and all(task.depends_reasons)


def test_cost_model_is_transparent_and_configurable():
    findings = tuple(_pin("a.py", i) for i in (1, 10, 20, 30)) + (_pin("b.py", 1),)
    (task,) = build_tasks(findings, (), ())
    # 5 edits x 15 min + 4 unflagged edits x 10 min (3 in a.py at most, 1 in b.py) + 0.25 h to check
    # (a run on the device) = 2.17 h likely; x0.75 / x2 around it
    assert task.effort_hours == round(5 * 15 / 60 + 4 * 10 / 60 + 0.25, 2) == 2.17
    assert task.effort_range == (round(2.17 * 0.75, 2), 2.17, 2.17 * 2)
    assert "5 edit(s) x 15 min + 4 unflagged edit(s)" in task.effort_basis
    assert "0.25 h to check (a run of the script on the device)" in task.effort_basis
    assert task.effort_basis.endswith("= 1.63-4.34 h")
    (cheap,) = build_tasks(findings, (), (), CostConfig(site_minutes=6, file_minutes=0, task_hours=0,
                                                         mechanical_low=1, mechanical_high=1))
    assert cheap.effort_range == (0.75, 0.75, 0.75)      # 5 x 6 min + the kind's check


def test_fixable_sites_cost_minutes():
    fixable = tuple(replace(_pin("a.py", i), fixable=True) for i in range(1, 5))
    (task,) = build_tasks(fixable + (_pin("a.py", 9),), (), ())
    # lines 1-4 are one fixable edit (2 min to review) + 1 manual edit x 15 min + 10 min around it
    # + 0.25 h to check
    assert task.effort_hours == round(2 / 60 + 15 / 60 + 10 / 60 + 0.25, 2)
    assert "5 site(s) in 2 edit(s): 1 fixable edit(s) x 2 min + 1 edit(s) x 15 min" in task.effort_basis
    (done,) = build_tasks(fixable, (), ())                 # what `opscan fix` completes: review minutes
    assert done.effort_hours == round(2 / 60 + 0.25, 2) and "unflagged" not in done.effort_basis


def test_kernel_effort_scales_with_kernel_size(tmp_path):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "scan.cu").write_text("\n".join(f"int x{i};" for i in range(300)) + "\n\n")
    (tmp_path / "ops" / "small.cu").write_text("int x;\n" * 50)
    (tmp_path / "ops" / "ext.py").write_text(
        "from torch.utils.cpp_extension import load\n"
        "big = load(\n    name='selective_scan',\n    sources=['scan.cu'],\n)\n")
    (tmp_path / "ops" / "tiny.py").write_text("small = load(name='tiny', sources=['ops/small.cu'])\n")
    (tmp_path / "tri.py").write_text("import triton\n\n@triton.jit\n"
                                     "def add_kernel(x):\n    a = 1\n    b = 2\n    return a\n")
    findings = (
        Finding("OPS301", "cuda-extension-load", "custom-kernel", "error", "m", Location("ops/ext.py", 2),
                snippet="big = load(", task="kernel"),
        Finding("OPS301", "cuda-extension-load", "custom-kernel", "error", "m", Location("ops/tiny.py", 1),
                snippet="small = load(name='tiny', sources=['ops/small.cu'])", task="kernel", subject="tiny"),
        Finding("OPS302", "triton-kernel", "custom-kernel", "error", "m", Location("tri.py", 3),
                snippet="@triton.jit", task="kernel"),
    )
    facts = scan_paths(tmp_path).facts   # the decorated kernel's span is a scan fact
    sizes = kernel_sources(tmp_path, findings, facts)
    assert sizes == {findings[0].location: (("ops/scan.cu", 300), ("name:selective_scan", 0)),
                     findings[1].location: (("ops/small.cu", 50), ("name:tiny", 0)),
                     findings[2].location: (("tri.py:3", 5),)}
    tasks = {t.id: t for t in build_tasks(findings, (), (), CostConfig(), sizes)}
    assert set(tasks) == {"kernel:selective_scan", "kernel:tiny", "kernel:tri"}
    big = tasks["kernel:selective_scan"]
    # CUDA extension: (3 d x 1 kernel + 1 d per 100 lines x 300) x 8 h x factor 1 + 1 call site x 15 min
    assert big.effort_range == ((3 + 3.0) * 8 * 0.5 + 0.25, (3 + 3.0) * 8 + 0.25, (3 + 3.0) * 8 * 2 + 0.25)
    assert tasks["kernel:tiny"].effort_hours == (3 + 0.5) * 8 + 0.25
    assert big.effort_hours > tasks["kernel:tiny"].effort_hours > tasks["kernel:tri"].effort_hours
    assert "300 lines of kernel source" in big.effort_basis
    unmeasured = build_tasks(findings[:1], (), (), CostConfig(), {})
    assert "not found, 200 lines assumed" in unmeasured[0].effort_basis


def test_total_effort_in_engineer_days():
    report = sample.report()
    assert total_days(report.tasks) == round(sum(t.effort_hours for t in report.tasks) / 8, 1)


def test_custom_op_in_trace_becomes_a_kernel_task():
    trace = ModelTrace("m.py:build", "train", "neuron",
                       (OpUsage("mamba::selective_scan_fwd", 4, ("forward",), (), (OpSource("m.py", 9),), custom=True),
                        ))
    (task,) = build_tasks((), (trace,), ())
    assert task.id == "kernel:selective_scan_fwd" and task.ops == ("mamba::selective_scan_fwd",)


def test_kernel_findings_sharing_a_source_or_name_are_one_task(tmp_path):
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "scan.cu").write_text("__global__ void k() {}\n" * 120)
    (tmp_path / "ext.py").write_text("ext = load(name='selective_scan', sources=['csrc/scan.cu'])\n")
    findings = (
        Finding("OPS301", "cpp-extension-build", "custom-kernel", "error", "`load` builds", Location("ext.py", 1),
                snippet="ext = load(name='selective_scan', sources=['csrc/scan.cu'])", task="kernel",
                subject="selective_scan"),
        Finding("OPS308", "cuda-source-file", "custom-kernel", "error", "CUDA source", Location("csrc/scan.cu", 1),
                snippet="__global__ void k() {}", task="kernel"),
        Finding("OPS303", "torch-library-custom-op", "custom-kernel", "error",
                "custom operator: `mylib::selective_scan`",
                Location("ops.py", 4), snippet="@torch.library.custom_op('mylib::selective_scan')", task="kernel",
                subject="selective_scan"),
    )
    trace = ModelTrace("m.py:build", "train", "neuron",
                       (OpUsage("mylib::selective_scan", 2, ("forward",), (), (OpSource("m.py", 9),), custom=True),))
    tasks = build_tasks(findings, (trace,), (), CostConfig(), kernel_sources(tmp_path, findings))
    (task,) = tasks
    assert task.id == "kernel:selective_scan" and task.ops == ("mylib::selective_scan",)
    assert len(task.sites) == 4
    assert "120 lines of kernel source" in task.effort_basis            # counted once


def test_verdicts():
    # the guarded warning (train.py:10) is a site of the device task, not a blocker
    assert verdict(sample.report()).headline.startswith("blocked by 4 CUDA-pinned sites in 2 files, 1 custom kernel")
    trace = sample.traces()[0]
    probed = (Evidence("probed", "sample inputs run on torch-neuronx 2.14.3.0 and compared", compared=True),)
    only_fallback = (Coverage("aten::_fused_adamw_", "cpu-fallback", probed), Coverage("aten::mm", "native", probed),
                     Coverage("aten::gelu", "native", probed),
                     Coverage("aten::embedding_dense_backward", "native", probed))
    clean = sample.report(findings=(), coverage=only_fallback, tasks=build_tasks((), (trace,), only_fallback))
    assert verdict(clean).kind == "fallback"
    assert verdict(clean).headline == "runs with 1 op on CPU fallback"
    native = tuple(replace(c, status="native", confidence="high") for c in only_fallback)
    assert verdict(sample.report(findings=(), coverage=native, tasks=())).headline == "ready"
    snapshot = (Evidence("source-snapshot", "pre-release source, unverified for 2.33"),)
    weak = tuple(replace(c, confidence="low", evidence=snapshot) for c in native)
    judged = verdict(sample.report(findings=(), coverage=weak, tasks=()))
    assert judged.kind == "likely"
    assert judged.headline == ("likely — unverified: 4 ops rest on kernels registered in a pre-release source "
                               "snapshot; confirm with `opscan db probe --report` on a paired install")
    unknown = tuple(replace(c, status="unknown") for c in only_fallback)
    judged = verdict(sample.report(findings=(), coverage=unknown, tasks=()))
    assert judged.kind == "unknown" and "4 ops of unknown status" in judged.headline
    source_only = verdict(sample.report(findings=(), traces=(), coverage=(), tasks=()))
    assert source_only.kind == "unchecked" and "ops: not checked — no model found" in source_only.headline


def test_a_guarded_or_warning_only_kernel_does_not_block():
    call = Finding("OPS304", "custom-op-namespace-call", "custom-kernel", "warning",
                   "call into a non-PyTorch operator namespace: `torch.ops.mylib.scan`", Location("m.py", 3),
                   snippet="y = torch.ops.mylib.scan(x)", task="kernel", subject="scan")
    tasks = build_tasks((call,), (), ())
    assert [(t.id, t.priority) for t in tasks] == [("kernel:scan", 2)]
    report = sample.report(findings=(call,), traces=(), coverage=(), tasks=tasks)
    assert verdict(report).headline == "no blockers found, but not proven: 1 custom kernel or library to check"


def test_an_incomplete_trace_is_never_ready():
    trace = replace(sample.traces()[0], ops=(), complete=False, stopped_at="the model could not be built: boom")
    judged = verdict(sample.report(findings=(), traces=(trace,), coverage=(), tasks=()))
    assert judged.kind == "unknown" and "1 incomplete trace" in judged.headline
    assert any("boom" in d for d in judged.details)
