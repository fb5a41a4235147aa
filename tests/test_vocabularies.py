"""The closed vocabularies are typed once in opscan/records/vocabulary.py (NOTE [typed vocabularies]): no other
module compares their words, members serialise as the words, one ranking each, one task-kind table."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

from opscan.records import (CONFIDENCES, MODES, OP_STATUSES, OP_TASKS, STATUSES, TASKS, VERDICT_KINDS, Confidence,
                            Coverage, Finding, JudgedOps, Location, Mode, NoKernel, Severity, Status, Task, TaskKind,
                            Verdict, VerdictKind, status_of)

PACKAGE = Path(__file__).resolve().parents[1] / "opscan"


def vocabularies() -> dict[str, set[str]]:
    """Every closed vocabulary of opscan: each `StrEnum` a module of opscan/ defines, found by walking
    the package (a new vocabulary is checked without being listed here), as module -> its words."""
    words: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [node.name for node in tree.body if isinstance(node, ast.ClassDef)
                 and any(isinstance(base, ast.Name) and base.id == "StrEnum" for base in node.bases)]
        if names:
            rel = path.relative_to(PACKAGE).with_suffix("").as_posix()
            module = importlib.import_module("opscan." + rel.replace("/", ".").removesuffix(".__init__"))
            found = words.setdefault(path.relative_to(PACKAGE).as_posix(), set())
            found.update(m.value for name in names for m in getattr(module, name) if m.value)
    return words


VOCABULARIES = vocabularies()
WORDS = set().union(*VOCABULARIES.values())

# Comparisons of a vocabulary's word where the word means something else, each with its reason
# (file, the comparison as `ast.unparse` writes it).
OTHER_VOCABULARIES = {
    ("scan/workers.py", "how == 'error'"): "a scan worker's result state (hit / ok / error), not a severity",
    ("commands/db.py", "kind == 'added'"): "a coverage-database diff's change kind (opscan/db/diff.py), not a zoo's",
    ("commands/db.py", "kind == 'removed'"): "a coverage-database diff's change kind (opscan/db/diff.py)",
    ("commands/db.py", "kind != 'removed'"): "a coverage-database diff's change kind (opscan/db/diff.py)",
    ("db/annotate.py", "release.kernel_list == 'partial'"): "a release's kernel list (full / partial), not a trace",
    ("db/loader.py", "kernel_list == 'partial'"): "a release's kernel list (full / partial), not a trace",
    ("db/lookup.py", "release.kernel_list == 'partial'"): "a release's kernel list (full / partial), not a trace",
    ("scan/matchers.py", "kind == 'name'"): "a rule matcher's kind (the rules' YAML `match:`), not a kernel source",
    ("scan/matchers.py", "kind == 'file'"): "a rule matcher's kind (the rules' YAML `match:`)",
    ("scan/matchers.py", "kind == 'input'"): "a rule matcher's kind (the rules' YAML `match:`), not a category",
    ("scan/matchers.py", "kind == 'dependency'"): "a rule matcher's kind (the rules' YAML `match:`)",
    ("scan/rules.py", "kind == 'file'"): "a rule matcher's kind (the rules' YAML `match:`)",
    ("scan/rules.py", "kind == 'dependency'"): "a rule matcher's kind (the rules' YAML `match:`)",
    ("scan/rules.py", "kind == 'input'"): "a rule matcher's kind (the rules' YAML `match:`)",
    ("scan/rules.py", "m.kind == 'input'"): "a rule matcher's kind (the rules' YAML `match:`)",
    ("scan/rules.py", "kind == 'invalid'"): "a rule example's kind (valid / invalid), not how a child ended",
    ("scan/rules.py", "r.status != 'removed'"): "a rule's status (preview / stable / deprecated / removed)",
    ("db/samples.py", "kind == 'number'"): "a sample argument's kind (the probe's inputs), not a compile cause",
    ("scan/project.py", "k.arg == 'name'"): "a keyword argument's name (setup(name=...)), not a kernel source",
    ("targets/recipes.py", "i.name == 'forward'"): "a method's name (an nn.Module's forward), not an op phase",
    ("targets/train_scripts.py", "call.func.attr == 'backward'"): "a method's name (`loss.backward()`), not a phase",
    ("targets/train_step.py", "c.func.attr == 'backward'"): "a method's name (`loss.backward()`), not a phase",
}


def _words(node: ast.AST, words: set[str]) -> list[str]:
    """The vocabulary words a literal operand holds: a string, or a tuple/list/set of strings that
    are all words (a mixed tuple such as ('0', 'none', 'unlimited') is another vocabulary)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in words else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts:
        values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if len(values) == len(node.elts) and all(v in words for v in values):
            return values
    return []


def vocabulary_comparisons(source: str, words: set[str] = WORDS) -> list[str]:
    """`x == "blocked"`, `st in ("ready", "likely")`, `case "error":`; not `"note" in mapping` (a key test)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for i, op in enumerate(node.ops):
                left, right = operands[i], operands[i + 1]
                if isinstance(op, (ast.In, ast.NotIn)):
                    hit = _words(right, words)   # the word as the container: `x in ("ready", ...)`
                else:
                    hit = _words(left, words) or _words(right, words)
                if hit:
                    out.append(ast.unparse(node))
                    break
        elif isinstance(node, ast.match_case) and _words(getattr(node.pattern, "value", ast.Constant(None)), words):
            out.append(f"case {ast.unparse(node.pattern)}")
    return out


def comparisons_outside_definitions(package: Path = PACKAGE) -> list[tuple[str, str]]:
    """(file, comparison) of every vocabulary word compared as a string in `package`, outside a module
    that defines a vocabulary holding that word (NOTE [typed vocabularies])."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        words = WORDS - VOCABULARIES.get(rel, set())
        found.extend((rel, text) for text in vocabulary_comparisons(path.read_text(encoding="utf-8"), words))
    return found


def test_no_vocabulary_word_is_compared_outside_its_definition():
    found = [f"opscan/{rel}: {text}" for rel, text in comparisons_outside_definitions()
             if (rel, text) not in OTHER_VOCABULARIES]
    assert found == [], "compare the members or predicates of the vocabulary's StrEnum instead:\n" + "\n".join(found)


def test_every_allowed_comparison_still_exists():
    """The allow-list holds no stale entry (a comparison that was removed or became a member's)."""
    assert set(OTHER_VOCABULARIES) <= set(comparisons_outside_definitions())


def test_the_vocabularies_found_are_those_of_the_package():
    assert {"records/vocabulary.py", "records/findings.py", "records/trace.py", "records/compile.py",
            "records/target.py", "containment/outcome.py", "containment/process.py", "zoo/results.py", "zoo/diff.py",
            "fix/reasons.py", "workflow/preflight.py"} == set(VOCABULARIES)
    assert {"blocked", "cpu-fallback", "custom-kernel", "probed", "hubconf", "main-step", "partial", "limit",
            "became-ready", "fixed", "first-run", "known-failure", "returned", "inference"} <= WORDS


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


def test_trace_modes():
    assert MODES == ("train", "inference", "both") and [m for m in Mode if m.trains] == [Mode.TRAIN, Mode.BOTH]


def test_confidence_levels():
    assert CONFIDENCES == ("high", "medium", "low")
    assert [c.lower() for c in Confidence] == [Confidence.MEDIUM, Confidence.LOW, Confidence.LOW]
    assert Confidence.HIGH.lower(5) is Confidence.LOW


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
