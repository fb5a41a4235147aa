"""One analysis: `opscan scan` is the source-only view of `opscan PATH --no-trace` (same config,
files, rules incl. OPS003, baseline, verdict, --fail-on words and exit codes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TRAIN = """import torch
torch.cuda.synchronize()
model = torch.nn.Linear(2, 2).to("cuda")
"""
UNUSED = "x = torch.zeros(2)  # opscan: ignore[OPS101]\n"   # suppresses nothing: OPS003
BENCH = "import torch\ny = torch.ones(2).cuda()\ntorch.cuda.synchronize()\n"


@pytest.fixture
def project(tmp_path: Path, run_cli) -> Path:
    """A project whose config ignores OPS201, excludes bench.py and has a baseline of train.py's pin."""
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "bench.py").write_text(BENCH)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.opscan]\nignore = ["OPS201"]\nexclude = ["bench.py"]\nbaseline = "opscan-baseline.json"\n')
    assert run_cli("baseline", str(tmp_path))[0] == 0
    (tmp_path / "train.py").write_text(TRAIN + UNUSED)    # added after the baseline: a new finding
    return tmp_path


def _both(run_cli, path: Path, *flags: str):
    scan = run_cli("scan", str(path), "--format", "json", *flags)
    check = run_cli(str(path), "--no-trace", "--format", "json", *flags)
    return (scan[0], json.loads(scan[1])), (check[0], json.loads(check[1]))


def test_scan_and_check_no_trace_give_the_same_answer(project, run_cli):
    (scan_code, scan), (check_code, check) = _both(run_cli, project)
    assert scan_code == check_code == 0
    for key in ("findings", "tasks", "summary", "baseline"):
        assert scan[key] == check[key], key
    # the config applies: OPS201 ignored, bench.py excluded, the pin baselined; the unused
    # suppression is still reported (OPS003) by both
    assert [(f["path"], f["rule"]) for f in scan["findings"]] == [("train.py", "OPS003")]
    assert scan["baseline"]["known"] == 1 and scan["baseline"]["new"] == 1
    assert scan["summary"]["files_scanned"] == 1
    assert scan["verdict"]["kind"] == check["verdict"]["kind"] == "unknown"
    assert scan["verdict"]["headline"] == check["verdict"]["headline"]
    assert scan["verdict"]["checked"] == check["verdict"]["checked"] == {"source": True, "ops": False}


def test_a_new_pin_fails_both_the_same_way(project, run_cli):
    (project / "train.py").write_text(TRAIN + UNUSED + 'y = torch.ones(2).to("cuda:1")\n')
    (scan_code, scan), (check_code, check) = _both(run_cli, project)
    assert scan_code == check_code == 1
    assert scan["verdict"]["kind"] == check["verdict"]["kind"] == "blocked"
    assert scan["verdict"]["headline"] == ("blocked by 1 CUDA-pinned site in 1 file "
                                           "(new; 1 known hidden by the baseline)")


def test_same_fail_on_vocabulary_and_exit_codes(project, run_cli):
    (project / "k.py").write_text("import triton\n\n@triton.jit\ndef k(x):\n    pass\n")
    for flags, code in (((), 1), (("--fail-on", "custom-kernel"), 1), (("--fail-on", "fallback"), 0),
                        (("--fail-on", "unknown"), 0), (("--exit-zero",), 0)):
        (scan_code, _), (check_code, _) = _both(run_cli, project, *flags)
        assert scan_code == check_code == code, flags
    assert run_cli("scan", str(project), "--fail-on", "never")[0] == 2          # the old scan-only word
    assert run_cli("scan", str(project), "--fail-on", "note")[0] == 2


def test_scan_conveniences_feed_the_same_pipeline(project, run_cli, monkeypatch):
    monkeypatch.chdir(project)
    # several PATHs, jobs, no cache: the config still applies (bench.py given explicitly stays excluded)
    code, out, _ = run_cli("scan", "train.py", "bench.py", "--jobs", "1", "--no-cache", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and [f["rule"] for f in doc["findings"]] == ["OPS003"]
    assert doc["baseline"]["stale"] == []
    # --select / --ignore on the command line replace the config's, as for `opscan PATH`
    code, out, _ = run_cli("scan", ".", "--ignore", "OPS201,OPS003", "--format", "json", "--no-cache")
    assert json.loads(out)["findings"] == [] and code == 0


def test_a_baselined_run_says_known_and_new_never_no_pins(tmp_path, run_cli):
    pins = "".join(f'x{i} = torch.zeros(2).to("cuda:{i}")\n' for i in range(27))
    (tmp_path / "train.py").write_text("import torch\n" + pins)
    (tmp_path / "pyproject.toml").write_text('[tool.opscan]\nbaseline = "b.json"\n')
    assert run_cli("baseline", str(tmp_path))[0] == 0
    for command in (("scan", str(tmp_path)), (str(tmp_path), "--no-trace")):
        code, out, _ = run_cli(*command)
        assert code == 0
        first = out.splitlines()[0]
        assert first == "? no blockers found, but not proven: 27 known findings hidden by the baseline, 0 new"
        assert "b.json: 27 known, 0 new findings" in " ".join(out.split())   # the detail may wrap at a space
        assert "0 new findings, 27 known (hidden by the baseline)" in out
        assert "No CUDA pins found" not in out and "no CUDA pins" not in out
        code, out, _ = run_cli(*command, "--format", "markdown")
        assert "27 known (hidden), 0 new" in out and code == 0


def test_scan_verdict_counts_a_triton_kernel_and_flash_attn(tmp_path, run_cli):
    (tmp_path / "kern.py").write_text("import triton\n\n@triton.jit\ndef add_kernel(x):\n    pass\n")
    (tmp_path / "attn.py").write_text("import flash_attn\n")
    code, out, _ = run_cli("scan", str(tmp_path))
    assert code == 1
    assert out.splitlines()[0] == "✗ blocked by 1 custom kernel, 1 CUDA-only library"
    assert "ready" not in out.splitlines()[0]


@pytest.mark.parametrize("files,kind", [
    ({"ok.py": "import torch\nx = torch.zeros(2)\n"}, "unchecked"),
    ({"g.py": "import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n"}, None),
    ({"w.py": "import torch\ntorch.backends.cudnn.benchmark = True\n"}, "unchecked"),
    ({"p.py": "import torch\nx = torch.zeros(2).cuda()\n"}, "blocked"),
    ({"t.py": "try:\n    import flash_attn\nexcept ImportError:\n    flash_attn = None\n"}, "unknown"),
])
def test_exit_code_follows_the_verdict(tmp_path, run_cli, files, kind):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    for command in (("scan", str(tmp_path)), (str(tmp_path), "--no-trace")):
        code, out, _ = run_cli(*command, "--format", "json")
        verdict = json.loads(out)["verdict"]
        assert kind is None or verdict["kind"] == kind, verdict
        assert code == (1 if verdict["kind"] == "blocked" else 0), verdict


def test_rules_flag_and_config_extra_rules_naming_one_folder_load_it_once(tmp_path, run_cli):
    rules = tmp_path / "myrules"
    rules.mkdir()
    shipped = (Path(__file__).resolve().parents[2] / "rules" / "cudnn-setting.yaml").read_text()
    (rules / "my-cudnn-setting.yaml").write_text(shipped.replace("id: OPS203", "id: USR203", 1)
                                         .replace("name: cudnn-setting", "name: my-cudnn-setting", 1))
    (tmp_path / "a.py").write_text("import torch\nx = torch.zeros(2)\n")
    (tmp_path / "pyproject.toml").write_text('[tool.opscan]\nextra-rules = ["myrules"]\n')
    code, out, err = run_cli("scan", str(tmp_path), "--rules", str(rules), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["verdict"]["kind"] == "unchecked"
