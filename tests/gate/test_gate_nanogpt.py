"""`opscan examples/nanogpt` (the README's first command): what the user sees of a real traced run.

# NOTE [no goldens of real runs]
A real run's output moves with every change to the trace (op counts, compile signatures, upstream
test counts), so a stored copy of it pins whatever the output is today. These tests assert what the
user reads instead: the verdict's kind and its blocking counts, the rules of the findings, the port
tasks, the exit codes, that every machine format parses (SARIF against the OASIS schema, the
markdown's task table, GitHub's workflow commands) and says the same as the report, and that two
runs give the same bytes. The whole outputs stay pinned by golden files of the hand-built report
(tests/reporters/test_reporters_formats.py).
"""

from __future__ import annotations

import argparse
import io
import json
import re
from collections import Counter
from pathlib import Path

import jsonschema
import pytest
from markdown_it import MarkdownIt

from opscan.records import VerdictKind
from opscan.reporters import render

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/nanogpt"
SARIF_SCHEMA = ROOT / "tests/reporters/sarif-schema-2.1.0.json"   # vendored OASIS schema (see its NOTICE)

# What the example holds on purpose (examples/nanogpt/README.md): CUDA pins, NCCL, a CUDA extension,
# a Triton kernel, a custom op, CUDA-only settings and a CUDA build dependency. Read from its source,
# so a change to the trace does not move them.
RULES = {"OPS102", "OPS105", "OPS106", "OPS201", "OPS202", "OPS203", "OPS204", "OPS206", "OPS207", "OPS210",
         "OPS301", "OPS302", "OPS303", "OPS304", "OPS305", "OPS308", "OPS309", "OPS401", "OPS506"}
TASKS = ["device-agnostic", "distributed-backend", "kernel:fused_gelu_cuda", "kernel:rmsnorm", "kernel:softmax_kernel",
         "mixed-precision", "torch-compile", "cuda-packages", "backend-flags"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report():
    """The real run (scan + trace + coverage + plan), from the repository root like the README."""
    pytest.importorskip("torch")
    from opscan.commands.check import load_effective_config
    from opscan.pipeline.analyse import analyse

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        args = argparse.Namespace(path=EXAMPLE, backend=None, db=None, fail_on=None, select=None, ignore=None,
                                  model=None, mode=None)
        return analyse(Path(EXAMPLE), load_effective_config(args))


def _text(fmt: str, report) -> str:
    out = io.StringIO()
    render(fmt, report, out)
    return out.getvalue()


def test_the_verdict_is_blocked_by_the_pins_and_the_kernels(report):
    assert report.verdict.kind is VerdictKind.BLOCKED
    blockers = report.blockers
    assert (blockers.count, blockers.sites, blockers.files, blockers.kernels) == (9, 6, 1, 3)
    assert (blockers.unsupported_ops, blockers.libraries, blockers.dependencies, blockers.unreadable_files) == \
        (0, 0, 0, 0)
    assert report.verdict.ops_checked and report.verdict.source_checked and not report.verdict.unchecked


def test_the_findings_and_the_tasks(report):
    assert {f.rule for f in report.findings} == RULES
    assert all(f.location.path != "" for f in report.findings)
    assert [t.id for t in report.tasks] == TASKS
    assert [t.id for t in report.tasks if t.priority == 1]   # 1: blocker == TASKS[:5]
    assert all(t.sources for t in report.tasks)


def test_the_model_is_traced_and_the_plan_is_complete(report):
    (trace,) = report.traces
    assert trace.target == "model.py:build" and trace.mode == "train" and trace.complete
    assert {"aten::linear", "aten::embedding_dense_backward"} <= {u.op for u in trace.ops}
    kernels = {t.id: t for t in report.tasks if t.id.startswith("kernel:")}
    # the CUDA extension: build call, C++ registration, .cu source and Python wrapper are one task
    gelu = next(t for t in kernels.values() if "fused_gelu" in t.id)
    assert {s.path for s in gelu.sites} >= {"setup.py", "csrc/fused_gelu.cpp", "csrc/fused_gelu_kernel.cu",
                                            "ops/fused_gelu.py"}
    assert "lines of kernel source" in gelu.effort_basis
    # `import triton` goes with the Triton kernel's port, not a separate library task
    assert not any(t.id.startswith("library:") for t in report.tasks)


def test_json_says_what_the_report_says(report):
    doc = json.loads(_text("json", report))
    assert doc["verdict"]["kind"] == "blocked" and doc["verdict"]["blockers"]["count"] == report.blockers.count
    assert {f["rule"] for f in doc["findings"]} == RULES and len(doc["findings"]) == len(report.findings)
    assert [t["id"] for t in doc["tasks"]] == TASKS
    assert doc["summary"]["tasks"] == len(TASKS) and doc["summary"]["blockers"] == report.blockers.count
    assert len(doc["ops"]) == doc["summary"]["ops"] > 0


def test_sarif_of_the_example_validates(report):
    log = json.loads(_text("sarif", report))
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == RULES and len(results) == len(report.findings)
    assert Counter(r["level"] for r in results) == Counter(f.severity for f in report.findings)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert all(uri.startswith("examples/nanogpt/") for uri in uris)


def test_markdown_opens_with_the_verdict_and_lists_every_task(report):
    text = _text("markdown", report)
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings[:2] == ["opscan port report", "Port tasks"]
    assert "Verdict (blocked)" in text.split("## Port tasks")[0]
    # the first table is the task list: one body row per task
    first = next(i for i, t in enumerate(tokens) if t.type == "table_open")
    end = next(i for i, t in enumerate(tokens) if t.type == "table_close" and i > first)
    body = [t for t in tokens[first:end] if t.type == "tr_open"][1:]
    assert len(body) == len(TASKS)


_COMMAND = re.compile(r"^::(error|warning|notice)(?: [^:]*)?::.+$")
_MORE = re.compile(r"^::(error|warning|notice) title=opscan%3A (\d+) more::")


def test_github_annotations_are_workflow_commands_within_the_limit(report):
    lines = _text("github", report).splitlines()
    head, _, overflow = "\n".join(lines).partition("\nopscan: annotations beyond the limit:\n")
    commands = head.splitlines()
    assert all(_COMMAND.match(line) for line in commands), [c for c in commands if not _COMMAND.match(c)]
    assert commands[0].startswith("::error title=opscan verdict%3A blocked::")   # the verdict opens it
    levels = Counter(_COMMAND.match(c)[1] for c in commands[1:])
    assert all(n <= 10 for n in levels.values())
    # what GitHub does not show is summarised, then printed as plain lines: every finding is there once
    more = {m[1]: int(m[2]) for m in map(_MORE.match, commands) if m}
    by_level = Counter({"error": 0, "warning": 0} | Counter(f.severity for f in report.findings))
    for level, n in by_level.items():
        shown = levels[level] - (level in more)
        assert shown + more.get(level, 0) == n
    plain = [line for line in overflow.splitlines() if line.startswith("  ")]
    assert len(plain) == sum(more.values())


def test_same_input_same_bytes(report):
    for fmt in ("json", "sarif", "markdown", "github"):
        assert _text(fmt, report) == _text(fmt, report)


def test_cli_exit_codes_and_a_second_run_gives_the_same_bytes(run_cli, monkeypatch, report):
    pytest.importorskip("torch")
    monkeypatch.chdir(ROOT)
    code, out, err = run_cli(EXAMPLE)
    assert code == 1 and "fail-on error" in err
    lines = out.splitlines()
    assert lines[0].startswith("✗ blocked by")
    assert out.index("Port tasks") < out.index("Findings") < out.index("Ops")
    code, out, _ = run_cli(EXAMPLE, "--format", "json", "--exit-zero")
    assert code == 0
    assert out == _text("json", report)      # same input, same bytes: a second full run, no stored copy
