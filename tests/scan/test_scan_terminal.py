"""Terminal sections owned by the scan: findings by file with the source line, summary by category."""

from __future__ import annotations

import io
import re
from dataclasses import replace

import pytest
from rich.console import Console

from opscan.records import Finding, Location, Report
from opscan.reporters.terminal import findings, summary


def _render(report: Report) -> str:
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None, highlight=False, soft_wrap=False)
    findings.section(report, console)
    summary.section(report, console)
    return out.getvalue()


def _finding(path, line, rule="OPS101", category="device-string", severity="error", guarded=False):
    return Finding(rule=rule, name="n", category=category, severity=severity, message=f"msg {rule}",
                   location=Location(path, line, 5), fix="use dev", guarded=guarded, snippet=f"    code({line})")


def test_grouped_by_file_with_source_and_summary():
    report = Report(root="r", tool_version="0", files_scanned=4, findings=(
        _finding("b.py", 3), _finding("a.py", 10, "OPS203", "cuda-api", "warning", guarded=True), _finding("a.py", 2)))
    lines = [line.rstrip() for line in _render(report).splitlines()]
    text = "\n".join(lines)
    assert text.index("a.py") < text.index("b.py")
    assert "│ code(2)" in text and "fix: use dev" in text and "[guarded]" in text
    assert text.count("fix: use dev") == 2          # repeated fix in one file is shown once
    assert "Summary — 4 files scanned, 3 findings (1 guarded)" in text
    row = next(line for line in lines if line.startswith("device-string"))
    assert row.split() == ["device-string", "2", "·", "·", "2"]


def test_clean_report_says_so():
    text = _render(Report(root="r", tool_version="0", files_scanned=2, notes=("checked",)))
    assert "Findings" not in text and "No CUDA pins found." in text and "note: checked" in text


# --- layout: a `path:line` is never broken across lines, at 80 and 120 columns -----------------

DEEP = "src/company_ml/research/experiments/language_models/llama_variants"
SITE_PACKAGES = "/opt/conda/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py"
LOCATION = re.compile(r"([\w.…/-]*\.(?:py|cu|cpp)):(\d+)")


def _long_paths_report() -> Report:
    from opscan.records import Coverage, ModelTrace, OpSource, OpUsage
    from opscan.plan import build_tasks
    from opscan.config import CostConfig
    from opscan.assess.verdict import judge

    found = tuple(
        Finding(rule="OPS101", name="hardcoded-cuda-device", category="device-string", severity="error",
                message="device pinned to 'cuda'; TorchNeuron runs on 'neuron'",
                location=Location(path, line, 9), fix="use torch.accelerator.current_accelerator()",
                snippet='        hidden_states = hidden_states.to("cuda")  # moved to the GPU for the fused kernel',
                task="device-agnostic")
        for path, line in ((f"{DEEP}/modeling_llama_with_rotary_scaling.py", 164),
                           (f"{DEEP}/modeling_llama_with_rotary_scaling.py", 1642),
                           (f"{DEEP}/training/distributed_trainer_entrypoint.py", 77),
                           ("train.py", 3)))
    ops = tuple(OpUsage(f"aten::op{i}", 1, ("forward",), ("torch.float32",),
                        (OpSource(SITE_PACKAGES, 160 + i, "model.layers.0.self_attn"),), ("train",))
                for i in range(3))
    traces = (ModelTrace("hf:models/llama", "train", "neuron", ops),)
    coverage = tuple(Coverage(u.op, "native", (), "high") for u in ops)
    tasks = build_tasks(found, traces, coverage, CostConfig())
    report = Report(root=".", tool_version="0", findings=found, traces=traces, coverage=coverage,
                    tasks=tasks, backend="torchneuron==2.33.0", files_scanned=3)
    return replace(report, verdict=judge(report))


def _render_all(report: Report, width: int) -> str:
    from opscan.reporters.terminal import render

    out = io.StringIO()
    render(report, out, Console(file=out, width=width, color_system=None, highlight=False, soft_wrap=False))
    return out.getvalue()


@pytest.mark.parametrize("width", [80, 120])
def test_every_path_line_stays_whole_on_one_line(width):
    report = _long_paths_report()
    text = _render_all(report, width)
    lines = text.splitlines()
    assert all(len(line.rstrip()) <= width for line in lines)
    real = {(loc.path.rsplit("/", 1)[-1], loc.line) for loc in (f.location for f in report.findings)}
    real |= {(s.path.rsplit("/", 1)[-1], s.line) for t in report.traces for u in t.ops for s in u.sources}
    shown = set()
    for line in lines:
        for path, number in LOCATION.findall(line):
            name = path.rsplit("/", 1)[-1].lstrip("…")
            # a cut `modeling_llama.py:16` (line 164 broken after "16") names no real location
            assert any(n.endswith(name) and line_no == int(number) for n, line_no in real), (path, number, line)
            shown.add(int(number))
    assert {164, 77, 160, 161, 162} <= shown                # each location is printed whole somewhere
    assert all(not re.match(r"\s*│?\s*\d+[,…]", line) or ":" in line for line in lines)


def test_long_paths_are_shortened_in_the_middle_keeping_file_and_line():
    from opscan.reporters.terminal.location import fit

    short = fit(SITE_PACKAGES, ":164", 40)
    assert short.endswith("/modeling_llama.py:164") and "…" in short and len(short) <= 40
    assert short.startswith("/")                              # the start is kept, the middle elided
    assert fit("train.py", ":3", 40) == "train.py:3"          # what fits is left alone
