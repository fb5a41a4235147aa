"""One count: verdict, gate, task list, summary, markdown, JSON and preflight give the same numbers."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from opscan.pipeline.analyse import RunOptions, analyse
from opscan.config import load_config
from opscan.assess.gate import failures
from opscan.reporters import render
from opscan.reporters.terminal import summary
from opscan.reporters.terminal import tasks as task_section
from opscan.workflow import preflight
from opscan.reporters.texts import blockers_words

ROOT = Path(__file__).resolve().parents[2]

FILES = {
    "train.py": """import torch
device = "cuda"
model = torch.nn.Linear(2, 2).to("cuda")
x = torch.zeros(2).cuda(); y = torch.ones(2).cuda()
if torch.cuda.is_available():
    torch.cuda.synchronize()
torch.backends.cudnn.benchmark = True
""",
    "data/loader.py": """import torch
def batches():
    yield torch.zeros(2).to("cuda:0")
""",
    "dist.py": """import torch.distributed as dist
dist.init_process_group("nccl")
""",
    "kernels/tri.py": """import triton

@triton.jit
def add_kernel(x):
    pass
""",
    "attn.py": "import flash_attn\n",
}


def _write(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _text(fmt: str, report) -> str:
    out = io.StringIO()
    render(fmt, report, out)
    return out.getvalue()


def _plural_number(text: str, word: str) -> int:
    match = re.search(rf"(\d+) {word}s?\b", text)
    assert match, (word, text)
    return int(match[1])


def _blocking_sites(report) -> set:
    """Lines (per task) of unguarded error findings that are neither kernels, libraries, dependency
    pins nor unreadable files: the unit written out here, not read from opscan."""
    return {(f.task, f.location.path, f.location.line) for f in report.findings
            if f.severity == "error" and not f.guarded and f.category != "input"
            and f.task not in ("kernel", "library", "none", "torch-version")}


def _check_counts(report) -> None:
    verdict = report.verdict
    assert verdict.kind == "blocked"
    blockers = verdict.blockers
    # the headline counts the blocking sites (no warning, no guarded finding), kernels and libraries
    pins = _blocking_sites(report)
    assert _plural_number(verdict.headline, "CUDA-pinned site") == blockers.sites == len(pins)
    files = int(re.search(r"CUDA-pinned sites? in (\d+) files?", verdict.headline)[1])
    assert files == blockers.files == len({path for _, path, _ in pins})
    # the headline's sites are the sum of the tasks' "K blocking" (dependency pins named apart)
    stated_blocking = [int(m[1]) for t in report.tasks if (m := re.search(r", (\d+) blocking\)", t.title))]
    assert sum(stated_blocking) == sum(t.blocking_sites for t in report.tasks) == blockers.sites + blockers.dependencies
    kernels = [t for t in report.tasks if t.kind == "kernel" and t.priority == 1]
    assert blockers.kernels == len(kernels)
    if kernels:
        assert _plural_number(verdict.headline, "custom kernel") == len(kernels)
    # one count on every surface: the gate line, the JSON verdict and summary, the terminal summary,
    # markdown, the GitHub summary line and the preflight checklist
    count = blockers.count
    assert count == blockers.sites + blockers.kernels + blockers.libraries + blockers.unsupported_ops \
        + blockers.unreadable_files
    assert failures(report, ("error",)) == [f"error: {count} blockers ({verdict.headline[len('blocked by '):]})"]
    doc = json.loads(_text("json", report))
    assert doc["verdict"]["blockers"]["count"] == doc["summary"]["blockers"] == count
    assert doc["verdict"]["blockers"]["sites"] == blockers.sites
    assert f"Blockers: **{count}** (" in _text("markdown", report)
    assert f", {count} blockers, " in _text("github", report)
    check = preflight.checklist(preflight.probe(environ={}, version=lambda n: "2.14.0", accelerator=lambda: (None, "")),
                                preflight.from_json(doc), "report.json")
    assert check.blockers == preflight.from_report(report).blockers == count
    # every task title that states a count states len(task.sites)
    for task in report.tasks:
        stated = re.search(r"\((\d+) sites? in (\d+) files?[,)]", task.title)
        if stated:
            lines = {(s.path, s.cell, s.line) for s in task.sites}   # one site per line (NOTE [sites])
            assert (int(stated[1]), int(stated[2])) == (len(task.sites), len({s.path for s in task.sites})), task.title
            assert len(lines) == len(task.sites), task.sites
    # markdown: the table's sites column and each task's "Where" line
    markdown = _text("markdown", report)
    for i, task in enumerate(report.tasks, 1):
        row = next(line for line in markdown.splitlines() if line.startswith(f"| {i} | "))
        assert row.rstrip(" |").rsplit("| ", 1)[-1] == str(len(task.sites)), row
    where = [int(n) for n in re.findall(r"\*\*Where:\*\* (\d+) site", markdown)]
    assert where == [len(t.sites) for t in report.tasks if t.sites]
    total = sum(len(t.sites) for t in report.tasks)
    assert f"{total} sites in {len(report.tasks)} tasks" in markdown
    # JSON summary and the terminal summary line
    assert json.loads(_text("json", report))["summary"]["sites"] == total
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    summary.section(report, console)
    task_section.section(report, console)
    assert f"{total} sites in {len(report.tasks)} port tasks" in out.getvalue()
    assert f"; {count} blockers ({blockers_words(blockers)}); " in " ".join(out.getvalue().split())
    assert doc["summary"]["fixable"] == sum(f.fixable for f in report.findings)
    assert [t["blocking_sites"] for t in doc["tasks"]] == [t.blocking_sites for t in report.tasks]


def test_counts_agree_on_a_multi_file_project(tmp_path):
    root = _write(tmp_path)
    report = analyse(root, load_config(root), RunOptions(trace=False))
    _check_counts(report)
    # a guarded call and a warning (cudnn flag) are sites of their tasks, never blockers
    device = next(t for t in report.tasks if t.id == "device-agnostic")
    assert report.verdict.blockers.sites < sum(len(t.sites) for t in report.tasks if t.group == "source")
    assert report.verdict.blockers.sites == len(_blocking_sites(report)) and len(device.sites) > 1
    assert "1 custom kernel" in report.verdict.headline and "1 CUDA-only library" in report.verdict.headline


def test_counts_agree_on_the_example(monkeypatch):
    monkeypatch.chdir(ROOT)
    report = analyse(Path("examples/nanogpt"), load_config(Path("examples/nanogpt")), RunOptions(trace=False))
    _check_counts(report)
    assert report.verdict.headline.startswith("blocked by ")


@pytest.mark.slow
def test_counts_agree_on_the_traced_example(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.chdir(ROOT)
    report = analyse(Path("examples/nanogpt"), load_config(Path("examples/nanogpt")))
    _check_counts(report)


def test_two_findings_on_one_line_are_one_site(tmp_path):
    root = _write(tmp_path)
    report = analyse(root, load_config(root), RunOptions(trace=False))
    on_line_4 = [f for f in report.findings if (f.location.path, f.location.line) == ("train.py", 4)]
    assert len(on_line_4) == 2 and all(f.blocking for f in on_line_4)   # x.cuda(); y.cuda()
    device = next(t for t in report.tasks if t.id == "device-agnostic")
    assert [s.line for s in device.sites if s.path == "train.py"].count(4) == 1
    assert device.title.endswith(f"({len(device.sites)} sites in 2 files, {device.blocking_sites} blocking)")


def test_the_hook_line_says_the_same_counts(tmp_path, run_cli, monkeypatch):
    root = _write(tmp_path)
    report = analyse(root, load_config(root), RunOptions(trace=False))
    code, out, err = run_cli("scan", "--concise", str(root))   # the pre-commit hook's entry
    assert code == 1
    *lines, last = out.splitlines()
    files = len({f.location.path for f in report.findings})
    assert len(lines) == len(report.findings)
    assert last.startswith(f"opscan: {len(report.findings)} findings in {files} files")
    assert f"✗ {report.verdict.headline} —" in last
    assert f"{report.fixable} fixable with `opscan fix`" in last and report.fixable > 0
    monkeypatch.chdir(root)
    code, out, err = run_cli("scan", "--concise", "train.py")   # one staged file, as pre-commit passes it
    *lines, last = out.splitlines()
    assert lines and all(line.startswith("train.py:") for line in lines)
    assert last.startswith(f"opscan: {len(lines)} findings in 1 file ")
