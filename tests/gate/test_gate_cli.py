"""The CI gate end to end: `opscan PATH` exit codes, --fail-on, baselines, formats, --output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opscan.pipeline import phases
from opscan.records import ModelTrace, OpSource, OpUsage

TRAIN = '''import torch


def train(model, data):
    model = model.to("cuda")
    for batch in data:
        loss = model(batch)
        loss.backward()
    return model
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return tmp_path


def _fake_trace(model, root, profile, limits):
    ops = (OpUsage("aten::mm", 3, ("forward",), ("torch.float32",), (OpSource("train.py", 7),), ("train",)),
           OpUsage("aten::_fused_adamw_", 1, ("optimizer",), (), (OpSource("train.py", 8),), ("train",)),
           OpUsage("aten::gelu", 1, ("forward",), (), (OpSource("train.py", 7),), ("train",)))
    return ModelTrace(model.target, model.mode, "neuron", ops)


def _fake_database(config):
    from tests.support.release import static_release

    return static_release({"aten::mm": "native", "aten::_fused_adamw_": "cpu-fallback"}, "torchneuron==2.33.0")


@pytest.fixture
def fake_backend(monkeypatch):
    monkeypatch.setattr(phases, "trace", _fake_trace)
    monkeypatch.setattr(phases, "database", _fake_database)


def test_findings_fail_with_exit_1_and_exit_zero_passes(project, run_cli):
    code, out, err = run_cli(str(project), "--no-trace")
    assert code == 1
    assert out.splitlines()[0].startswith("✗ blocked by 1 CUDA-pinned site")
    assert "fail-on error" in err
    code, _, err = run_cli(str(project), "--no-trace", "--exit-zero")
    assert code == 0 and "--exit-zero" in err


def test_clean_project_passes(tmp_path, run_cli):
    (tmp_path / "ok.py").write_text("import torch\ndev = torch.accelerator.current_accelerator()\n")
    code, out, _ = run_cli(str(tmp_path), "--no-trace")   # clean source, no model: never "ready"
    assert code == 0
    assert out.splitlines()[0] == "– source: no CUDA pins; ops: not checked — tracing skipped (--no-trace)"


def test_nothing_to_check_is_a_usage_error(tmp_path, run_cli):
    (tmp_path / "README.md").write_text("no code here\n")
    code, out, err = run_cli(str(tmp_path))
    assert code == 2 and out == ""
    assert "nothing to check: no Python, notebook or C++/CUDA source file" in err and "no model" in err


def test_usage_and_input_errors_exit_2(tmp_path, run_cli):
    assert run_cli(str(tmp_path / "missing"))[0] == 2
    assert run_cli(str(tmp_path), "--fail-on", "sometimes")[0] == 2
    assert run_cli(str(tmp_path), "--format", "pdf")[0] == 2
    code, _, err = run_cli(str(tmp_path), "--baseline", str(tmp_path / "none.json"))
    assert code == 2 and "none.json" in err


def test_fail_on_fallback_unknown_custom_kernel(project, run_cli, fake_backend):
    (project / "train.py").write_text(TRAIN.replace('"cuda"', "torch.accelerator.current_accelerator()"))
    args = (str(project), "--model", "train.py:build")
    assert run_cli(*args)[0] == 0                                  # default: error only
    code, _, err = run_cli(*args, "--fail-on", "fallback")
    assert code == 1 and "aten::_fused_adamw_" in err
    code, _, err = run_cli(*args, "--fail-on", "unknown")
    assert code == 1 and "aten::gelu" in err
    assert run_cli(*args, "--fail-on", "custom-kernel")[0] == 0
    code, out, _ = run_cli(*args, "--fail-on", "error,fallback", "--exit-zero")
    # aten::gelu is of unknown status: "not proven" outranks "runs with 1 op on CPU fallback"
    assert code == 0 and out.splitlines()[0] == "? no blockers found, but not proven: 1 op of unknown status"
    assert "1 op on CPU fallback: aten::_fused_adamw_" in out


def test_config_fail_on_is_used_and_flag_overrides(project, run_cli, fake_backend):
    (project / "train.py").write_text("x = 1\n")
    (project / "pyproject.toml").write_text(
        "[tool.opscan]\nfail-on = ['fallback']\n[[tool.opscan.models]]\ntarget = 'train.py:build'\n")
    assert run_cli(str(project))[0] == 1
    assert run_cli(str(project), "--fail-on", "error")[0] == 0
    assert run_cli(str(project), "--no-trace")[0] == 0


def test_baseline_gate_only_new_cuda_call_fails(project, run_cli):
    base = project / "ci" / "baseline.json"
    code, _, err = run_cli("baseline", str(project), "--output", str(base))
    assert code == 0 and base.exists() and "1 finding" in err
    # unchanged code passes
    assert run_cli(str(project), "--no-trace", "--baseline", str(base))[0] == 0
    # new lines above move the old finding; a new `.cuda()` is the only new finding
    source = TRAIN.replace("import torch\n", "import torch\nimport os\n\nSEED = 1\n")
    source = source.replace("        loss.backward()\n", "        batch = batch.cuda()\n        loss.backward()\n")
    (project / "train.py").write_text(source)
    code, out, err = run_cli(str(project), "--no-trace", "--baseline", str(base), "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert [(f["rule"], f["line"]) for f in doc["findings"]] == [(doc["findings"][0]["rule"], 11)]
    assert ".cuda()" in (project / "train.py").read_text().splitlines()[10]
    assert doc["baseline"]["known"] == 1 and doc["baseline"]["stale"] == []


def test_stale_baseline_entries_are_reported(project, run_cli):
    base = project / "baseline.json"
    run_cli("baseline", str(project), "--output", str(base))
    (project / "train.py").write_text(TRAIN.replace('model.to("cuda")', "model"))
    code, out, _ = run_cli(str(project), "--no-trace", "--baseline", str(base))
    assert code == 0
    assert "1 stale entry" in out and "train.py:5" in out


def test_configured_baseline_is_used(project, run_cli):
    run_cli("baseline", str(project), "--output", str(project / "b.json"))
    (project / "pyproject.toml").write_text("[tool.opscan]\nbaseline = 'b.json'\n")
    assert run_cli(str(project), "--no-trace")[0] == 0


def test_output_file_and_formats(project, run_cli):
    for fmt in ("json", "sarif", "github", "markdown", "dot"):
        target = project / "out" / f"report.{fmt}"
        code, out, _ = run_cli(str(project), "--no-trace", "--format", fmt, "--output", str(target), "--exit-zero")
        assert code == 0 and out == "" and target.read_text()
    assert json.loads((project / "out" / "report.sarif").read_text())["version"] == "2.1.0"


def test_unused_suppression_is_reported_as_ops003(tmp_path, run_cli):
    (tmp_path / "a.py").write_text(
        "import torch\n"
        "x = torch.zeros(2).to('cuda')  # opscan: ignore\n"
        "y = torch.ones(2)  # opscan: ignore\n"
        "z = torch.ones(2)  # opscan: ignore[OPS999]\n")
    code, out, _ = run_cli(str(tmp_path), "--no-trace", "--format", "json", "--exit-zero")
    found = [(f["rule"], f["line"]) for f in json.loads(out)["findings"]]
    assert ("OPS003", 3) in found and ("OPS003", 4) in found
    assert all(line != 2 for _, line in found)


def test_unused_suppression_check_can_be_ignored(tmp_path, run_cli):
    (tmp_path / "a.py").write_text("y = 1  # opscan: ignore\n")
    code, out, _ = run_cli(str(tmp_path), "--no-trace", "--format", "json", "--ignore", "OPS003")
    assert json.loads(out)["findings"] == [] and code == 0


def test_a_model_that_cannot_be_built_still_reports_the_rest_and_exits_2(project, run_cli, monkeypatch):
    from opscan.errors import TargetError

    def trace(model, root, profile, limits):
        if model.target == "broken.py:build":
            raise TargetError("has no 'build'", path="broken.py")
        return _fake_trace(model, root, profile, limits)

    monkeypatch.setattr(phases, "trace", trace)
    monkeypatch.setattr(phases, "database", _fake_database)
    code, out, err = run_cli(str(project), "--model", "broken.py:build", "--model", "train.py:build",
                             "--format", "json")
    assert code == 2 and "broken.py: has no 'build'" in err
    doc = json.loads(out)
    assert [(t["target"], t["complete"]) for t in doc["traces"]] == [("broken.py:build", False),
                                                                    ("train.py:build", True)]
    assert "could not be built" in doc["traces"][0]["stopped_at"]
    assert {o["op"] for o in doc["ops"]} == {"aten::mm", "aten::_fused_adamw_", "aten::gelu"}


def test_include_and_exclude_from_the_config(tmp_path, run_cli):
    (tmp_path / "src").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "src" / "a.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    (tmp_path / "src" / "gen.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    (tmp_path / "scripts" / "b.py").write_text("import torch\ny = torch.zeros(1).cuda()\n")
    (tmp_path / "pyproject.toml").write_text("[tool.opscan]\ninclude = ['src/**']\nexclude = ['gen.py']\n")
    code, out, _ = run_cli(str(tmp_path), "--no-trace", "--format", "json")
    assert {f["path"] for f in json.loads(out)["findings"]} == {"src/a.py"} and code == 1


def test_scan_command_takes_the_baseline_too(project, run_cli):
    (project / "train.py").write_text(TRAIN + "y = 1  # opscan: ignore\n")      # + an OPS003 finding
    base = project / "baseline.json"
    run_cli("baseline", str(project), "--output", str(base))
    assert {e["rule"] for e in json.loads(base.read_text())["entries"]} >= {"OPS003"}
    code, out, _ = run_cli("scan", str(project), "--baseline", str(base), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["findings"] == [] and doc["baseline"]["stale"] == []
    (project / "train.py").write_text("import torch\nz = torch.ones(1).cuda()\n" + TRAIN)
    code, out, _ = run_cli("scan", str(project), "--baseline", str(base), "--format", "json")
    assert code == 1 and [(f["line"], f["rule"]) for f in json.loads(out)["findings"]] == [(2, "OPS105")]


def test_without_torch_a_named_model_is_not_checked_exit_2_unless_allowed(project, run_cli, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "opscan.trace", None)       # `import opscan.trace` fails
    monkeypatch.setattr(phases, "database", _fake_database)
    code, out, err = run_cli(str(project), "--model", "train.py:build", "--format", "json")
    doc = json.loads(out)
    assert code == 2 and doc["traces"] == [] and doc["findings"]          # the source is still reported
    assert [u.split(":", 2)[:2] for u in doc["verdict"]["unchecked"]] == [["train.py", "build"]]
    assert "PyTorch" in doc["verdict"]["unchecked"][0]
    assert "opscan: error: could not check train.py:build: " in err and "PyTorch" in err
    code, _, err = run_cli(str(project), "--model", "train.py:build", "--allow-unchecked")
    assert code == 1 and "could not check train.py:build" in err          # the source gate alone


def test_a_syntax_error_is_named_with_file_and_line(tmp_path, run_cli):
    (tmp_path / "bad.py").write_text("import torch\ndef f(:\n    return 'cuda'\n")
    (tmp_path / "ok.py").write_text("x = 1\n")
    code, out, _ = run_cli(str(tmp_path), "--no-trace")
    assert code == 1 and out.splitlines()[0] == "✗ blocked by a syntax error (bad.py:2)"
    # a file is parsed when it spells a rule token (NOTE [pre-check] in scan/file_scan.py): "cuda" here
    (tmp_path / "worse.py").write_text("def g(:\n    return 'cuda'\n")
    code, out, _ = run_cli(str(tmp_path), "--no-trace", "--format", "json")
    verdict = json.loads(out)["verdict"]
    assert code == 1 and verdict["headline"] == "blocked by 2 syntax errors (bad.py:2, worse.py:1)"
