"""`opscan scan` and `opscan rules` as a user runs them: exit codes, formats, files, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(
        "import torch\nx = torch.zeros(1).to('cuda')\ntorch.backends.cudnn.benchmark = True\n", encoding="utf-8")
    (tmp_path / "pkg" / "clean.py").write_text("import torch\nx = torch.zeros(1)\n", encoding="utf-8")
    (tmp_path / "warn_only.py").write_text("import torch\ntorch.backends.cudnn.benchmark = True\n", encoding="utf-8")
    return tmp_path


def test_exit_codes_and_fail_on(run_cli, project):
    assert run_cli("scan", str(project / "pkg" / "clean.py"), "--root", str(project))[0] == 0
    assert run_cli("scan", str(project))[0] == 1
    warn = str(project / "warn_only.py")
    assert run_cli("scan", warn, "--root", str(project))[0] == 0                     # default: error
    assert run_cli("scan", warn, "--root", str(project), "--fail-on", "warning")[0] == 1
    assert run_cli("scan", str(project), "--exit-zero")[0] == 0      # the `opscan PATH` vocabulary


def test_usage_and_input_errors_exit_2(run_cli, project, tmp_path):
    code, _, err = run_cli("scan", str(project / "missing"))
    assert code == 2 and "missing: no such file or directory" in err
    code, _, err = run_cli("scan", str(project), "--format", "xml")
    assert code == 2
    bad = tmp_path / "myrules"
    bad.mkdir()
    (bad / "broken.yaml").write_text("id: X\n", encoding="utf-8")
    code, _, err = run_cli("scan", str(project), "--rules", str(bad))
    assert code == 2 and "broken.yaml" in err and err.count("\n") == 1


def test_json_contract_paths_relative_sorted(run_cli, project):
    code, out, _ = run_cli("scan", str(project), "--format", "json", "--no-fix-check")
    doc = json.loads(out)
    assert doc["schema_version"] == 2 and doc["tool"]["name"] == "opscan"
    keys = {"rule", "name", "category", "severity", "message", "path", "line", "column", "end_line", "end_column",
            "fix"}
    assert all(keys <= set(f) for f in doc["findings"])
    assert [(f["path"], f["line"], f["rule"]) for f in doc["findings"]] == [
        ("pkg/train.py", 2, "OPS101"), ("pkg/train.py", 3, "OPS203"), ("warn_only.py", 2, "OPS203")]
    assert doc["summary"]["files_scanned"] == 3 and doc["summary"]["by_category"]["cuda-api"] == 2


def test_output_file_and_terminal_report(run_cli, project, tmp_path):
    out = tmp_path / "r.json"
    code, stdout, _ = run_cli("scan", str(project), "--format", "json", "--output", str(out))
    assert code == 1 and stdout == "" and json.loads(out.read_text())["findings"]
    code, stdout, _ = run_cli("scan", str(project))
    assert "pkg/train.py" in stdout and "│ x = torch.zeros(1).to('cuda')" in stdout
    assert "OPS101" in stdout and "fix:" in stdout
    assert stdout.index("pkg/train.py") < stdout.index("warn_only.py") < stdout.index("Summary")


def test_select_ignore_exclude(run_cli, project):
    code, out, _ = run_cli("scan", str(project), "--format", "json", "--select", "OPS1")
    assert {f["rule"] for f in json.loads(out)["findings"]} == {"OPS101"}
    code, out, _ = run_cli("scan", str(project), "--format", "json", "--ignore", "OPS101", "--exclude", "warn_*")
    assert [(f["path"], f["rule"]) for f in json.loads(out)["findings"]] == [("pkg/train.py", "OPS203")]


def test_many_paths_are_relative_to_the_current_folder(run_cli, project, monkeypatch):
    monkeypatch.chdir(project)
    code, out, _ = run_cli("scan", "pkg/train.py", "warn_only.py", "--format", "json")
    assert sorted({f["path"] for f in json.loads(out)["findings"]}) == ["pkg/train.py", "warn_only.py"]


def test_rules_list_and_test_commands(run_cli, tmp_path):
    code, out, _ = run_cli("rules", "list")
    assert code == 0 and "OPS101  hardcoded-cuda-device" in out
    code, out, _ = run_cli("rules", "test")
    assert code == 0 and out.strip().endswith("rule(s) passed")
    mine = tmp_path / "acme-device.yaml"
    text = (Path(__file__).parent / "test_scan_loader.py").read_text(encoding="utf-8").split('GOOD = """\\\n',
                                                                                             1)[1].split('"""', 1)[0]
    mine.write_text(text, encoding="utf-8")
    code, out, _ = run_cli("rules", "test", str(mine))
    assert code == 0 and "ok   ACME101" in out
    mine.write_text(text.replace("# expect: ACME101", ""), encoding="utf-8")
    code, out, _ = run_cli("rules", "test", str(mine))
    assert code == 1 and "FAIL ACME101" in out


def test_rules_docs_check_passes_in_this_checkout(run_cli):
    code, out, _ = run_cli("rules", "docs", "--check", "--root", str(ROOT))
    assert code == 0, out


@pytest.mark.slow
def test_scan_runs_without_torch(tmp_path):
    """A subprocess where importing torch fails: the scan still works and says fixes were unchecked."""
    (tmp_path / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n", encoding="utf-8")
    code = ("import sys; sys.modules['torch'] = None\n"
            "import importlib.util as u; "
            "u.find_spec = (lambda f: (lambda n, *a: None if n == 'torch' else f(n, *a)))(u.find_spec)\n"
            "from opscan.cli import main; sys.exit(main(['scan', sys.argv[1], '--format', 'json']))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert [f["rule"] for f in doc["findings"]] == ["OPS201"]
    assert doc["notes"] == ["suggested replacements were not checked: torch is not installed here"]
