"""Reporters on a hand-built Report: golden files, SARIF schema, GitHub limits, determinism."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console

from tests.support import sample
from tests.support.golden import check
from opscan.records import Finding, Location
from opscan.reporters import REPORTERS, render

# The OASIS SARIF 2.1.0 schema, vendored beside this file (provenance and terms: sarif-schema-2.1.0.NOTICE.md).
SCHEMA = Path(__file__).resolve().parent / "sarif-schema-2.1.0.json"


def _render(fmt: str, report=None) -> str:
    out = io.StringIO()
    render(fmt, report or sample.report(), out)
    return out.getvalue()


@pytest.mark.parametrize("fmt,name", [("markdown", "sample.md"), ("sarif", "sample.sarif"),
                                      ("json", "sample.json"), ("github", "sample.github.txt"),
                                      ("dot", "sample.dot")])
def test_golden(fmt, name):
    check(name, _render(fmt))


def test_terminal_golden_in_fixed_width_console():
    from opscan.reporters.terminal import caveats, gaps, tasks, top, verdict

    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None, highlight=False, soft_wrap=False)
    for section in (verdict, top, gaps, tasks, caveats):   # the first screen, the task details, the caveats
        section.section(sample.report(), console)
    text = out.getvalue()
    check("sample.terminal.txt", text)
    assert text.splitlines()[0].startswith("✗ blocked by")        # the verdict comes first
    assert text.index("Port tasks") < text.index("guard cuDNN")


@pytest.mark.parametrize("fmt", sorted(REPORTERS))
def test_same_input_same_bytes(fmt):
    if fmt == "terminal":
        return
    assert _render(fmt) == _render(fmt, sample.report())


def test_sarif_validates_against_the_schema():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    log = json.loads(_render("sarif"))
    jsonschema.validate(log, schema)
    run = log["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    fired = {r["ruleId"] for r in run["results"]}
    assert set(rule_ids) == fired                      # only the rules that fired
    assert rule_ids == sorted(rule_ids)
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        loc = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert loc["uri"].startswith("proj/") and loc["uriBaseId"] == "%SRCROOT%"
        assert all(key.startswith("opscanFingerprint/") and value for key,
                   value in result["partialFingerprints"].items())
    ops101 = next(r for r in run["tool"]["driver"]["rules"] if r["id"] == "OPS101")
    assert "TorchNeuron runs on device 'neuron'" in ops101["help"]["text"]
    assert {"op/cpu-fallback", "op/unsupported"} <= fired


def test_sarif_empty_report_is_valid():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    empty = sample.report(findings=(), traces=(), coverage=(), tasks=(), rules=())
    log = json.loads(_render("sarif", empty))
    jsonschema.validate(log, schema)
    assert log["runs"][0]["results"] == [] and log["runs"][0]["tool"]["driver"]["rules"] == []


def test_sarif_fingerprint_survives_moved_lines():
    report = sample.report()
    moved = replace(report, findings=tuple(
        replace(f, location=replace(f.location, line=f.location.line + 7)) for f in report.findings))
    prints = lambda r: sorted(tuple(x["partialFingerprints"].values())  # noqa: E731
                              for x in json.loads(_render("sarif", r))["runs"][0]["results"])
    assert prints(report) == prints(moved)


def test_github_at_most_10_per_level_most_important_first():
    many = tuple(Finding("OPS101", "hardcoded-cuda-device", "device-string", "error", f"pin {i}",
                         Location(f"f{i:02}.py", i + 1), guarded=(i < 5), snippet=f"x{i}.cuda()",
                         task="device-agnostic")
                 for i in range(25))
    report = sample.report(findings=many, traces=(), coverage=())
    lines = _render("github", report).splitlines()
    errors = [line for line in lines if line.startswith("::error")]
    assert len(errors) == 10                           # the blocked verdict takes one error slot
    # the 5 guarded pins are sites of the task, not blockers
    assert errors[0].startswith("::error title=opscan verdict%3A blocked::blocked by 20 CUDA-pinned sites in 20 files")
    assert "guarded" not in errors[1]
    assert "f05.py" in errors[1]                       # unguarded before guarded
    assert "17 more error annotations" in errors[-1]
    plain = [line for line in lines if line.startswith("  error file=")]
    assert len(plain) == 17                            # the rest are still in the log


def test_github_escapes_properties_and_messages():
    odd = Finding("OPS101", "hardcoded-cuda-device", "device-string", "error", "50% sure,\nsecond line",
                  Location("dir,x/a:b.py", 3, 2), snippet="x")
    text = _render("github", sample.report(findings=(odd,), traces=(), coverage=()))
    line = next(x for x in text.splitlines() if x.startswith("::error file="))
    assert "file=proj/dir%2Cx/a%3Ab.py" in line and line.endswith("::50%25 sure,%0Asecond line")


def test_markdown_has_mermaid_graph_and_every_site():
    text = _render("markdown")
    assert "```mermaid" in text
    edges = [line.strip() for line in text.splitlines() if "-->" in line]
    report = sample.report()
    assert len(edges) == sum(len(t.depends_on) for t in report.tasks) > 0
    # every edge's reason is listed under its task's "After"
    after = [line for line in text.splitlines() if re.fullmatch(r"  - `[^`]+`: (?!lines? \d).+", line)]
    assert len(after) == len(edges)
    assert "- **After:**\n  - `device-agnostic`: the process-group backend" in text
    assert "`train.py`: lines 10, 12, 30" in text
    assert text.index("> **Verdict (blocked):") < text.index("## Port tasks") < text.index("## Findings")


def test_json_keeps_the_effort_keys_payback_reads():
    doc = json.loads(_render("json"))
    assert doc["summary"]["effort_hours"] == round(sum(t["effort_hours"] for t in doc["tasks"]), 2)
    assert doc["summary"]["effort_days"] == round(doc["summary"]["effort_hours"] / 8, 2)
    assert doc["baseline"]["known"] == 2 and doc["baseline"]["stale"]


def test_terminal_recap_repeats_the_verdict_with_the_total():
    from opscan.reporters.terminal.verdict import recap

    out = io.StringIO()
    recap(sample.report(), Console(file=out, width=100, color_system=None))
    last = " ".join(out.getvalue().split("─")[-1].split())   # after the rule; it wraps at a space
    report = sample.report()
    totals = report.effort
    shown = (f"8 port tasks, {totals.likely_hours / 8:.1f} engineer-days likely "
             f"({totals.low_hours / 8:.1f}-{totals.high_hours / 8:.1f})")
    assert last.startswith("✗ blocked by 4 CUDA-pinned sites") and shown in last
    assert totals.low_hours < totals.likely_hours < totals.high_hours


def test_op_results_only_at_project_files():
    report = replace(sample.report(), project_sources=("model.py",))   # train.py:44 is library code here
    results = json.loads(_render("sarif", report))["runs"][0]["results"]
    assert not any(r["ruleId"] == "op/cpu-fallback" for r in results)
    assert any(r["ruleId"] == "op/unsupported" for r in results)
    line = next(x for x in _render("github", report).splitlines() if "title=op aten::_fused_adamw_" in x
                or "title=op aten%3A%3A_fused_adamw_" in x)
    assert line.startswith("::warning title=op ") and "file=" not in line


def test_likely_is_a_caution_in_every_format():
    """Support resting on pre-release source: its own kind, never green, a warning everywhere."""
    from opscan.records import Coverage, Evidence

    snapshot = (Evidence("source-snapshot", "pre-release source", repo="aws-neuron/torch-neuronx", commit="abc"),)
    coverage = tuple(Coverage(op, "native", snapshot, "low") for op in
                     ("aten::_fused_adamw_", "aten::embedding_dense_backward", "aten::gelu", "aten::mm"))
    report = sample.report(findings=(), coverage=coverage, baseline=None)
    headline = ("likely — unverified: 4 ops rest on kernels registered in a pre-release source snapshot; "
                "confirm with `opscan db probe --report` on a paired install")
    assert (report.verdict.kind, report.verdict.headline) == ("likely", headline)
    assert json.loads(_render("json", report))["verdict"]["kind"] == "likely"
    markdown = _render("markdown", report)
    assert f"> [!WARNING]\n> **Verdict (likely): {headline}**" in markdown
    assert _render("github", report).splitlines()[0].startswith("::warning title=opscan verdict%3A likely::likely")
    (note,) = json.loads(_render("sarif", report))["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "warning" and headline in note["message"]["text"]
    from opscan.reporters.terminal import verdict

    out = io.StringIO()
    verdict.section(report, Console(file=out, width=200, color_system="truecolor", force_terminal=True))
    first = out.getvalue().splitlines()[0]
    assert first.startswith("\x1b[1;33m~ ") and "likely —" in first   # bold yellow, not green
    assert "\x1b[1;32m" not in out.getvalue()


def test_unchecked_is_a_caution_and_never_ready():
    """No model traced (#18): the verdict says what was not checked, in every format, never green."""
    report = sample.report(findings=(), traces=(), coverage=(), baseline=None)
    assert report.verdict.kind == "unchecked"
    assert report.verdict.headline.startswith("source: no CUDA pins; ops: not checked — no model found")
    assert json.loads(_render("json", report))["verdict"]["checked"] == {"source": True, "ops": False}
    assert "> [!WARNING]\n> **Verdict (unchecked): source: no CUDA pins" in _render("markdown", report)
    assert _render("github", report).startswith("::warning title=opscan verdict%3A unchecked::")
