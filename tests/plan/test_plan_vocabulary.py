"""Closed vocabularies as facts: op statuses, task kinds and kernel sources agree with the planner
and with what the reports show."""

from __future__ import annotations

from opscan.records import (
    OP_STATUSES,
    OP_TASKS,
    STATUSES,
    TASKS,
    Coverage,
    KernelSource,
    ModelTrace,
    OpSource,
    OpUsage,
)
from opscan.plan import build_tasks, task_kinds
from opscan.plan.grouping import kernel_sources


def test_each_status_says_what_follows_from_it():
    assert list(STATUSES) == ["native", "composite", "limited", "device-or-cpu", "cpu-fallback", "unsupported",
                              "unknown"]
    ranks = {s.name: s.rank for s in OP_STATUSES}
    assert sorted(ranks, key=ranks.get) == ["native", "composite", "limited", "device-or-cpu", "unknown",
                                            "cpu-fallback", "unsupported"]
    assert {s.name for s in OP_STATUSES if s.may_fall_back} == {"device-or-cpu", "cpu-fallback"}
    assert {s.name for s in OP_STATUSES if s.runs_on_device} == {"native", "composite", "limited"}
    assert {s.name for s in OP_STATUSES if s.blocks} == {"unsupported"}
    for status in OP_STATUSES:   # a status that makes work makes a task the planner knows
        assert status.task == "" or (status.task in OP_TASKS and status.task in task_kinds.OP_KINDS)
        assert not (status.runs_on_device and status.task)


def test_every_task_kind_is_in_a_vocabulary():
    kinds = {k.id for k in (*task_kinds.SOURCE_KINDS, task_kinds.LIBRARY_KIND, task_kinds.KERNEL_KIND,
                            task_kinds.TORCH_VERSION_KIND, task_kinds.CUDA_PACKAGES_KIND)} | set(task_kinds.OP_KINDS)
    assert kinds == (set(TASKS) - {"none"}) | set(OP_TASKS)


def test_op_gap_tasks_come_from_the_status_facts():
    ops = tuple(OpUsage(f"aten::op{i}", 1, sources=(OpSource("m.py", i + 1),)) for i in range(4))
    coverage = (Coverage("aten::op0", "limited"), Coverage("aten::op1", "cpu-fallback"),
                Coverage("aten::op2", "unsupported"))                       # op3: no entry = unknown
    tasks = build_tasks((), (ModelTrace("m.py:build", "train", "neuron", ops),), coverage)
    assert {t.kind: t.ops for t in tasks} == {"cpu-fallback": ("aten::op1",), "unsupported-ops": ("aten::op2",),
                                              "unknown-ops": ("aten::op3",)}
    assert all(t.group == "op" and t.subject == "" for t in tasks)
    assert next(t for t in tasks if t.kind == "unsupported-ops").priority == 1   # it blocks


def test_kernel_sources_have_one_type():
    parsed = kernel_sources((("ops/scan.cu", 120), ("ops/k.py:12", 9), ("name:fused_gelu_cuda", 0),
                             KernelSource("file", path="ops/glue.cpp", lines=30)))
    assert [(s.kind, s.key, s.lines) for s in parsed] == [
        ("file", "file:ops/scan.cu", 120), ("function", "function:ops/k.py:12", 9),
        ("name", "name:fused_gelu_cuda", 0), ("file", "file:ops/glue.cpp", 30)]
    assert [s.is_cuda_file for s in parsed] == [True, False, False, False]
