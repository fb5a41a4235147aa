"""Efforts in proportion, as a user reads them: a one-line change costs under an hour, four
one-line device fixes under two, a TF32 flag guard less than a process-group change, and a task
`opscan fix` completes costs review minutes (the JSON report, the printed plan, the exit code)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TF32 = """import torch
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.deterministic = False
torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
torch.backends.cudnn.enabled = True
"""


def _project(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _tasks(run_cli, root: Path) -> dict[str, dict]:
    code, out, _ = run_cli(str(root), "--no-trace", "--format", "json", "--exit-zero")
    assert code == 0
    return {t["id"]: t for t in json.loads(out)["tasks"]}


def _in_order(task: dict) -> bool:
    return task["effort_low_hours"] < task["effort_hours"] < task["effort_high_hours"]


@pytest.mark.parametrize("line", [
    "torch.cuda.manual_seed_all(0)",                       # left after `opscan fix` in a real port
    "x = torch.zeros(2).to('cuda:1')",
    "from torch.profiler import ProfilerActivity\nacts = [ProfilerActivity.CUDA]",
])
def test_a_one_line_change_costs_under_an_hour(tmp_path, run_cli, line):
    (task,) = _tasks(run_cli, _project(tmp_path, {"train.py": f"import torch\n{line}\n"})).values()
    assert len(task["sites"]) == 1 and task["effort_hours"] < 1 and _in_order(task), task["effort_basis"]


def test_four_one_line_device_fixes_cost_under_two_hours(tmp_path, run_cli):
    files = {f"f{i}.py": "import torch\nx = torch.zeros(2).to('cuda')\n" for i in range(3)}
    files["g.py"] = "import torch\ntorch.cuda.manual_seed_all(0)\n"          # one not fixable
    device = _tasks(run_cli, _project(tmp_path / "mixed", files))["device-agnostic"]
    assert len(device["sites"]) == 4 and device["effort_hours"] < 2 and _in_order(device)
    manual = {f"f{i}.py": "import torch\ntorch.cuda.manual_seed_all(0)\n" for i in range(4)}
    device = _tasks(run_cli, _project(tmp_path / "manual", manual))["device-agnostic"]
    assert len(device["sites"]) == 4 and device["effort_hours"] < 2 and _in_order(device)


def test_a_flag_guard_costs_less_than_a_process_group_change(tmp_path, run_cli):
    tasks = _tasks(run_cli, _project(tmp_path, {
        "train.py": TF32, "dist.py": "import torch.distributed as dist\ndist.init_process_group('nccl')\n"}))
    flags, group = tasks["backend-flags"], tasks["distributed-backend"]
    assert len(flags["sites"]) == 6 and flags["effort_hours"] < group["effort_hours"]
    assert flags["effort_hours"] < 1                              # six adjacent lines are one guard
    assert "6 site(s) in 1 edit(s)" in flags["effort_basis"] and "flag guard" in flags["effort_basis"]
    assert "distributed test run" in group["effort_basis"]        # the risk, stated
    assert _in_order(flags) and _in_order(group)


def test_a_task_opscan_fix_completes_costs_review_minutes(tmp_path, run_cli):
    root = _project(tmp_path, {"train.py": "import torch\ntorch.cuda.synchronize()\n\n\n"
                                           "x = torch.zeros(2).to('cuda')\n"})
    task = _tasks(run_cli, root)["device-agnostic"]
    assert "2 fixable edit(s) x 2 min" in task["effort_basis"] and "unflagged" not in task["effort_basis"]
    assert task["effort_hours"] <= 0.5 and _in_order(task)


def test_the_printed_plan_shows_the_hours(tmp_path, run_cli):
    root = _project(tmp_path, {"train.py": TF32})
    code, out, _ = run_cli(str(root), "--no-trace", "--fail-on", "warning")
    assert code == 1                                              # warnings fail only when asked
    top, row = [line for line in out.splitlines() if "guard cuDNN / TF32 flags" in line]   # first screen, details
    assert "0.52 h" in top and "one-off" in top
    assert "0.52 h (0.4-1 h)" in row and "one-off" in row
