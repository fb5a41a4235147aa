"""The closed vocabularies are typed once in opscan/records/vocabulary.py (NOTE [typed vocabularies]): no other
module compares their words, members serialise as the words, one ranking each, one task-kind table."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from opscan.records import (OP_STATUSES, OP_TASKS, STATUSES, TASKS, VERDICT_KINDS, Coverage, Finding, JudgedOps,
                            Location, NoKernel, Severity, Status, StepKind, Task, TaskKind, Verdict, VerdictKind,
                            status_of)

PACKAGE = Path(__file__).resolve().parents[1] / "opscan"
WORDS = {m.value for vocabulary in (Severity, Status, VerdictKind, TaskKind, NoKernel, StepKind) for m in vocabulary}

# Comparisons of the same words that are another vocabulary, each with its reason.
OTHER_VOCABULARIES = {
    ("scan/workers.py", "how == 'error'"): "a scan worker's result state (hit / ok / error), not a severity",
}


def _words(node: ast.AST) -> list[str]:
    """The vocabulary words a literal operand holds: a string, or a tuple/list/set of strings that
    are all words (a mixed tuple such as ('0', 'none', 'unlimited') is another vocabulary)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in WORDS else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts:
        values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if len(values) == len(node.elts) and all(v in WORDS for v in values):
            return values
    return []


def vocabulary_comparisons(source: str) -> list[str]:
    """`x == "blocked"`, `st in ("ready", "likely")`, `case "error":`; not `"note" in mapping` (a key test)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for i, op in enumerate(node.ops):
                left, right = operands[i], operands[i + 1]
                if isinstance(op, (ast.In, ast.NotIn)):
                    hit = _words(right)   # the word as the container: `x in ("ready", ...)`
                else:
                    hit = _words(left) or _words(right)
                if hit:
                    out.append(ast.unparse(node))
                    break
        elif isinstance(node, ast.match_case) and _words(getattr(node.pattern, "value", ast.Constant(None))):
            out.append(f"case {ast.unparse(node.pattern)}")
    return out


def test_no_vocabulary_word_is_compared_outside_records():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("records/"):
            continue
        for text in vocabulary_comparisons(path.read_text(encoding="utf-8")):
            if (rel, text) not in OTHER_VOCABULARIES:
                found.append(f"opscan/{rel}: {text}")
    assert found == [], "compare the members or predicates of records/vocabulary.py instead:\n" + "\n".join(found)


def test_the_walk_finds_what_it_forbids():
    source = '''
if verdict.kind == "blocked": pass
if st in ("ready", "likely"): pass
if "error" != finding.severity: pass
if task.kind not in ["kernel", "library"]: pass
match kind:
    case "unknown": pass
if "note" in item: pass
if text in ("0", "none", "unlimited"): pass
if kind is VerdictKind.BLOCKED: pass
'''
    assert vocabulary_comparisons(source) == [
        "verdict.kind == 'blocked'", "st in ('ready', 'likely')", "'error' != finding.severity",
        "task.kind not in ['kernel', 'library']", "case 'unknown'"]


def test_members_are_their_words():
    assert json.dumps({Status.CPU_FALLBACK: [VerdictKind.READY, Severity.ERROR, TaskKind.KERNEL]}) == \
        '{"cpu-fallback": ["ready", "error", "kernel"]}'
    assert f"{Status.DEVICE_OR_CPU} {NoKernel.ERROR}" == "device-or-cpu error"
    assert {"unknown": 1}[Status.UNKNOWN] == 1 and Status.UNKNOWN == "unknown"
    assert list(VerdictKind) == list(VERDICT_KINDS) and [s.value for s in Status] == list(STATUSES)
    assert list(TASKS) == [k.value for k in TaskKind if k.origin == "rule"]
    assert list(OP_TASKS) == ["unsupported-ops", "cpu-fallback", "unknown-ops", "may-fall-back"]


def test_records_hold_members_and_refuse_other_words():
    where = Location("a.py", 3)
    finding = Finding("OPS101", "x", "device-string", "error", "m", where, task="device-agnostic")
    assert finding.severity is Severity.ERROR and finding.task is TaskKind.DEVICE_AGNOSTIC
    assert Finding("OPS101", "x", "device-string", "note", "m", where).task == ""
    assert Coverage("aten::mm", "native").status is Status.NATIVE
    assert Task("t", "t", "a", "w", kind="kernel").group == "kernel"
    assert Task("t", "t", "a", "w", kind="unknown-ops").group == "op"
    assert Task("t", "t", "a", "w").group == "source"
    assert Verdict("ready", "ready").kind is VerdictKind.READY
    for bad in (lambda: Coverage("aten::mm", "supported"), lambda: Verdict("fine", "x"),
                lambda: Finding("OPS101", "x", "device-string", "fatal", "m", where)):
        with pytest.raises(ValueError):
            bad()


def test_one_ranking_of_verdicts_and_of_severities():
    assert sorted(VerdictKind, key=lambda k: k.rank) == list(reversed(VerdictKind))   # worst first, 0 best
    assert [k for k in VerdictKind if k.found_problem] == [VerdictKind.BLOCKED, VerdictKind.UNKNOWN,
                                                            VerdictKind.FALLBACK]
    assert Severity.ERROR.rank > Severity.WARNING.rank > Severity.NOTE.rank
    assert Severity.ERROR.at_least(Severity.WARNING) and not Severity.NOTE.at_least(Severity.WARNING)
    from opscan.zoo.diff import RANK, diff
    assert RANK["failed"] > RANK["blocked"] > RANK["unknown"] == RANK["incomplete"] > RANK["fallback"] \
        > RANK["likely"] > RANK["ready"]
    rows = {"likely": "fallback", "blocked": "failed", "unknown": "ready"}
    old = {"models": [{"name": f"m{i}", "verdict": a} for i, a in enumerate(rows)]}
    new = {"models": [{"name": f"m{i}", "verdict": b} for i, b in enumerate(rows.values())]}
    assert [(c.model, c.kind) for c in diff(old, new)] == [("m2", "became-ready"), ("m0", "regressed"),
                                                           ("m1", "regressed")]


def test_status_predicates_are_the_status_facts():
    for facts in OP_STATUSES:
        status = facts.name
        assert status_of(status.value) is facts and status.facts is facts
        assert (status.blocks, status.may_fall_back, status.runs_on_device) == \
            (facts.blocks, facts.may_fall_back, facts.runs_on_device)
    assert [s for s in Status if s.needs_probe] == [Status.DEVICE_OR_CPU, Status.UNKNOWN]
    assert [s for s in Status if s.has_kernel] == [Status.NATIVE, Status.LIMITED]
    assert Status.of("no such status") is Status.UNKNOWN and Status.of(None) is Status.UNKNOWN


def test_the_verdict_carries_the_ops_it_judged():
    statuses = {"aten::a": Status.UNSUPPORTED, "aten::b": Status.CPU_FALLBACK, "aten::c": Status.DEVICE_OR_CPU,
                "aten::d": Status.UNKNOWN, "aten::e": Status.NATIVE}
    judged = JudgedOps.of(statuses)
    assert judged == JudgedOps(5, ("aten::a",), ("aten::b",), ("aten::c",), ("aten::d",))


def test_one_task_kind_table():
    """Every kind of the table but "none" has the plan's fix (opscan/plan/task_kinds.py), and the
    plan has no kind the table lacks."""
    from opscan.plan import task_kinds
    planned = {*task_kinds.BY_TASK, *task_kinds.OP_KINDS, task_kinds.STATIC_SHAPES_KIND.id}
    assert planned == {k for k in TaskKind if k.is_port_work}
    assert all(isinstance(k, TaskKind) for k in planned)
    assert {s.task for s in OP_STATUSES if s.task} == set(task_kinds.OP_KINDS)
