"""The one blocking count as a user meets it: the headline, the gate line and exit code, the
summary, the JSON verdict, and what does not block (warnings, guarded errors)."""

from __future__ import annotations

import json
from pathlib import Path

PIN = "import torch\nx = torch.zeros(2).to('cuda')\n"
WARNINGS = ("import torch\n"
            "if torch.cuda.is_available():\n"
            "    y = torch.zeros(2).cuda()\n"            # a guarded error: a site, not a blocker
            "torch.backends.cudnn.benchmark = True\n")  # a warning: a site, not a blocker


def _project(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).write_text(text)
    return root


def test_warnings_and_guarded_errors_do_not_block(tmp_path, run_cli):
    root = _project(tmp_path, {"train.py": WARNINGS})
    code, out, err = run_cli(str(root), "--no-trace", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and "fail-on" not in err
    assert doc["verdict"]["kind"] != "blocked" and doc["verdict"]["blockers"]["count"] == 0
    assert doc["summary"]["blockers"] == 0 and doc["summary"]["sites"] >= 2   # still port work


def test_one_count_in_the_headline_the_gate_line_and_the_summary(tmp_path, run_cli):
    root = _project(tmp_path, {"train.py": WARNINGS + PIN.replace("import torch\n", ""), "data.py": PIN,
                               "dist.py": "import torch.distributed as dist\ndist.init_process_group('nccl')\n"})
    code, out, err = run_cli(str(root), "--no-trace")
    # three unguarded error sites in three files; the guarded `.cuda()` and the cuDNN flag are not counted
    headline = "blocked by 3 CUDA-pinned sites in 3 files"
    assert code == 1 and out.startswith(f"✗ {headline}")
    assert "opscan: fail-on error: 3 blockers (3 CUDA-pinned sites in 3 files)" in err
    # the summary line, in the headline's words
    assert "; 3 blockers (3 CUDA-pinned sites in 3 files); " in " ".join(out.split())
    code, out, _ = run_cli(str(root), "--no-trace", "--format", "json")
    doc = json.loads(out)
    assert doc["verdict"]["headline"] == headline
    assert doc["verdict"]["blockers"] == {"count": 3, "sites": 3, "files": 3, "kernels": 0, "libraries": 0,
                                          "unsupported_ops": 0, "unreadable_files": 0, "syntax_errors": [],
                                          "dependencies": 0, "compiled_fallback_ops": 0}
    assert doc["summary"]["blockers"] == 3 and doc["summary"]["sites"] > 3


def test_a_kernel_counts_once_however_many_findings_it_has(tmp_path, run_cli):
    root = _project(tmp_path, {"k.py": "import triton\n\n@triton.jit\ndef add_kernel(x):\n    pass\n"})
    code, out, err = run_cli(str(root), "--no-trace", "--format", "json")
    doc = json.loads(out)
    kernel_findings = [f for f in doc["findings"] if f["task"] == "kernel" and f["severity"] == "error"]
    assert len(kernel_findings) >= 2                                 # the import and the decorator
    assert doc["verdict"]["blockers"]["kernels"] == doc["verdict"]["blockers"]["count"] == 1
    assert code == 1 and "fail-on error: 1 blocker (1 custom kernel)" in err
    assert [t["kind"] for t in doc["tasks"]] == ["kernel"] and doc["tasks"][0]["subject"] == "add_kernel"
