"""Task edges: only where one task must precede another, each with its reason."""

from __future__ import annotations

import networkx as nx
import pytest

from opscan.records import Finding, Location, Task
from opscan.plan import build_tasks
from opscan.plan.task_kinds import BY_TASK
from opscan.plan.ordering import EDGES, graph


def _f(task: str, path: str, line: int = 1, subject: str = "", rule: str = "OPS101") -> Finding:
    return Finding(rule, "r", "device-string", "error", "m", Location(path, line), task=task, subject=subject)


def test_unrelated_tasks_have_no_edge():
    tasks = {t.id: t for t in build_tasks((_f("backend-flags", "a.py"), _f("distributed-backend", "b.py"),
                                           _f("profiler", "c.py")), (), ())}
    assert all(t.depends_on == () for t in tasks.values())   # no stage-wide "after" edges any more


def test_each_edge_says_why():
    findings = (_f("device-agnostic", "a.py"), _f("backend-flags", "a.py", 2), _f("kernel", "k.py", subject="k",
                rule="OPS302"), _f("torch-compile", "t.py"), _f("library", "l.py", subject="flash_attn"))
    tasks = {t.id: t for t in build_tasks(findings, (), ())}
    assert tasks["backend-flags"].depends_on == ("device-agnostic",)
    assert "dev.type" in tasks["backend-flags"].reason_for("device-agnostic")
    assert set(tasks["torch-compile"].depends_on) == {"device-agnostic", "kernel:k", "library:flash_attn"}
    assert "capturing" in tasks["torch-compile"].reason_for("kernel:k")
    assert tasks["kernel:k"].depends_on == ("device-agnostic",)
    assert "device variable" in tasks["kernel:k"].reason_for("device-agnostic")
    g = graph(tuple(tasks.values()))
    assert all(data["reason"] for _, _, data in g.edges(data=True))


def test_edge_table_names_real_kinds_and_is_acyclic():
    kinds = set(BY_TASK) | {"unsupported-ops", "cpu-fallback", "unknown-ops", "may-fall-back"}
    g = nx.DiGraph()
    for before, after, reason in EDGES:
        assert before in kinds and after in kinds and reason.strip()
        g.add_edge(before, after)
    assert nx.is_directed_acyclic_graph(g)
    assert len({(b, a) for b, a, _ in EDGES}) == len(EDGES)


def test_tasks_never_merge_different_fixes():
    findings = (_f("library", "l.py", subject="flash_attn"), _f("library", "l.py", 2, subject="apex"),
                _f("mixed-precision", "l.py", 3), _f("device-agnostic", "l.py", 4))
    ids = [t.id for t in build_tasks(findings, (), ())]
    assert sorted(ids) == ["device-agnostic", "library:apex", "library:flash_attn", "mixed-precision"]


def test_reasons_must_match_dependencies():
    with pytest.raises(ValueError):
        Task("a", "t", "x", "y", depends_on=("b", "c"), depends_reasons=("only one",))


def test_device_dispatch_sites_are_one_task_of_their_own():
    """Issue 26: every dispatch over other accelerators (OPS108), in any file, is one task."""
    findings = (_f("device-dispatch", "a.py", 3, subject="cuda, npu", rule="OPS108"),
                _f("device-dispatch", "b.py", 9, subject="mps", rule="OPS108"),
                _f("device-agnostic", "a.py", 4))
    tasks = {t.id: t for t in build_tasks(findings, (), ())}
    assert sorted(tasks) == ["device-agnostic", "device-dispatch"]
    task = tasks["device-dispatch"]
    assert "add `neuron` to the device dispatch" in task.title and "2 sites" in task.title
    assert "neuron" in task.action and task.depends_on == ()
