"""Pre-flight checklist: each branch with injected versions, env and accelerator; and the CLI."""

from __future__ import annotations

import importlib.metadata
import json
import sys

import pytest

from opscan.workflow import preflight as pf
from opscan.workflow.neuronx_lines import classify

REPORT = {
    "schema_version": 1,
    "verdict": {"kind": "blocked", "headline": "blocked by 1 CUDA-pinned site in 1 file",
                "blockers": {"count": 1, "sites": 1, "files": 1, "kernels": 0, "libraries": 0,
                             "unsupported_ops": 0, "unreadable_files": 0}},
    "findings": [{"severity": "error"}, {"severity": "error", "guarded": True}, {"severity": "warning"}],
    "ops": [
        {"op": "aten::mm", "status": "native"},
        {"op": "aten::_foo", "status": "cpu-fallback"},
        {"op": "aten::bar", "status": "unsupported"},
        {"op": "aten::baz", "status": "unknown"},
    ],
    "traces": [{"target": "model.py:build"}],
    "tasks": [{"priority": 1}, {"priority": 2}],
    "summary": {"by_severity": {"error": 2, "warning": 1, "note": 0}, "effort_hours": 12.0},
}


def versions(**installed):
    """A stand-in for importlib.metadata.version with these packages installed."""
    table = {k.replace("_", "-"): v for k, v in installed.items()}

    def lookup(name: str) -> str:
        if name not in table:
            raise importlib.metadata.PackageNotFoundError(name)
        return table[name]
    return lookup


def probe(env=None, accel=None, **installed):
    return pf.probe(environ=env or {}, version=versions(**installed),
                    accelerator=lambda: (accel, "" if accel else "no accelerator"))


def check(checklist, cid):
    return next(c for c in checklist.checks if c.id == cid)


@pytest.mark.parametrize("version, line, torch", [
    ("2.14.3.0", "native", (2, 14)),
    ("2.13.3.0", "native", (2, 13)),
    ("2.14.4.0+abc", "native", (2, 14)),
    ("2.9.0.2.15.32035", "xla", (2, 9)),
    ("1.13.0.1.6.0", "xla", (1, 13)),
    ("2.11.0", "unknown", None),
    ("garbage", "unknown", None),
])
def test_neuronx_lines_told_apart_by_version(version, line, torch):
    info = classify(version)
    assert info.line == line and info.torch == torch
    if line != "unknown" or info.sources:
        assert all(s.startswith(("https://", "aws-neuron/")) for s in info.sources)


def test_native_2_13_carries_the_documented_conflict():
    assert "troubleshooting" in classify("2.13.3.0").detail
    assert "not the documented 2.14.3.0" in classify("2.14.4.0").detail


def test_native_line_pairs_with_matching_torch():
    checklist = pf.checklist(probe(torch="2.14.0", torch_neuronx="2.14.3.0", accel="neuron",
                                   env={"TORCH_DEVICE": "neuron"}), fallback_command="run-on-gpu.sh")
    assert check(checklist, "torch-neuronx").status == "ok"
    assert check(checklist, "pairing").status == "ok"
    assert check(checklist, "accelerator").status == "ok"
    assert check(checklist, "rollback").value == "run-on-gpu.sh"


def test_native_line_with_other_torch_fails_pairing():
    checklist = pf.checklist(probe(torch="2.13.0+cpu", torch_neuronx="2.14.3.0"))
    pairing = check(checklist, "pairing")
    assert pairing.status == "fail" and "pairs with torch 2.14" in pairing.detail
    assert not checklist.ready


def test_xla_line_is_flagged():
    checklist = pf.checklist(probe(torch="2.9.0", torch_neuronx="2.9.0.2.15.32035"))
    line = check(checklist, "torch-neuronx")
    assert line.status == "fail" and "xla" in line.value and "2.13.x/2.14.x" in line.detail
    assert check(checklist, "pairing").status == "ok"       # it does pair with torch 2.9


def test_nothing_installed_still_reports_the_rest():
    checklist = pf.checklist(probe(), pf.from_json(REPORT), "r.json")
    assert check(checklist, "torch").value == "not installed"
    assert check(checklist, "torch-neuronx").value == "not installed"
    assert check(checklist, "accelerator").value == "none"
    assert check(checklist, "coverage").status == "warn"
    assert check(checklist, "blockers").value == "1"


def test_blockers_are_the_verdicts_count_not_the_error_findings():
    """Two error findings, one guarded: the verdict counts one blocker and so does the checklist;
    a report without the verdict's count is not counted again in another way."""
    assert check(pf.checklist(probe(), pf.from_json(REPORT), "r.json"), "blockers").value == "1"
    older = {k: v for k, v in REPORT.items() if k != "verdict"}
    line = check(pf.checklist(probe(), pf.from_json(older), "r.json"), "blockers")
    assert line.status == "skip" and "verdict.blockers" in line.detail
    assert pf.checklist(probe(), pf.from_json(older), "r.json").blockers is None


def test_requested_neuron_without_trainium_fails():
    checklist = pf.checklist(probe(env={"TORCH_DEVICE": "neuron"}, torch="2.13.0"))
    accel = check(checklist, "accelerator")
    assert accel.status == "fail" and "TORCH_DEVICE=neuron" in accel.detail
    assert check(checklist, "device").value == "neuron"


def test_device_unset_and_cpu():
    assert check(pf.checklist(probe(torch="2.13.0")), "device").status == "warn"
    cpu = pf.checklist(probe(env={"TORCH_DEVICE": "cpu"}, torch="2.13.0"))
    assert check(cpu, "device").status == "info" and check(cpu, "accelerator").status == "info"


def test_missing_ops_and_unknown_rule():
    checklist = pf.checklist(probe(), pf.from_json(REPORT), "r.json")
    assert checklist.missing_ops == ("aten::_foo", "aten::bar")
    assert checklist.unknown_ops == ("aten::baz",)
    strict = pf.checklist(probe(), pf.from_json(REPORT), "r.json", unknown_missing=True, exit_on_missing=True)
    assert strict.missing_ops == ("aten::_foo", "aten::bar", "aten::baz")
    assert check(strict, "coverage").status == "fail"


def test_rollback_sources():
    absent = pf.checklist(probe())
    assert check(absent, "rollback").status == "stop"
    assert check(absent, "rollback").value == "no fallback documented -> stop here"
    from_env = pf.checklist(probe(env={"CPU_FALLBACK_COMMAND": "TORCH_DEVICE=cuda ./train.sh"}))
    assert check(from_env, "rollback").status == "ok"
    assert "CPU_FALLBACK_COMMAND" in check(from_env, "rollback").detail
    both = pf.checklist(probe(env={"CPU_FALLBACK_COMMAND": "b"}), fallback_command="a",
                        config_source="pyproject.toml [tool.opscan.parity]")
    assert check(both, "rollback").value == "a" and "differs: b" in check(both, "rollback").detail


def test_probe_reads_a_real_distribution(tmp_path, monkeypatch):
    """A fake torch-neuronx dist-info on sys.path is found by the real importlib.metadata lookup."""
    dist = tmp_path / "torch_neuronx-2.14.3.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch-neuronx\nVersion: 2.14.3.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = pf.probe(environ={"TORCH_DEVICE": "neuron"}, accelerator=lambda: (None, "test"))
    assert found.neuronx_version == "2.14.3.0"
    assert found.requested_device == "neuron"


def test_visible_accelerator_on_this_machine():
    pytest.importorskip("torch")
    device, note = pf.visible_accelerator()
    import torch
    expected = torch.accelerator.current_accelerator(check_available=True)
    assert device == (expected.type if expected is not None else None)


def test_visible_accelerator_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)     # import torch -> ImportError
    device, note = pf.visible_accelerator()
    assert device is None and "does not import" in note


# --- the command ---------------------------------------------------------------------------------

@pytest.fixture
def report_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CPU_FALLBACK_COMMAND", raising=False)
    monkeypatch.delenv("TORCH_DEVICE", raising=False)
    (tmp_path / "report.json").write_text(json.dumps(REPORT))
    return "report.json"


def test_cli_markdown(report_file, run_cli):
    code, out, _ = run_cli("preflight", "--report", report_file)
    assert code == 0
    assert out.startswith("# opscan pre-flight checklist")
    assert "| STOP | rollback path | `no fallback documented -> stop here`" in out
    assert "- [ ] `aten::_foo`" in out and "- [ ] `aten::bar`" in out
    assert "## Sources" in out


def test_cli_exit_on_missing(report_file, run_cli):
    code, out, _ = run_cli("preflight", "--report", report_file, "--exit-on-missing", "--format", "json")
    record = json.loads(out)
    assert code == 1
    assert record["ops"]["missing"] == ["aten::_foo", "aten::bar"] and record["blockers"] == 1
    assert record["ready"] is False


def test_cli_no_missing_ops_passes_exit_on_missing(report_file, run_cli, tmp_path):
    clean = dict(REPORT, ops=[{"op": "aten::mm", "status": "native"}, {"op": "aten::x", "status": "unknown"}])
    (tmp_path / "clean.json").write_text(json.dumps(clean))
    assert run_cli("preflight", "--report", "clean.json", "--exit-on-missing")[0] == 0
    assert run_cli("preflight", "--report", "clean.json", "--exit-on-missing",
                   "--unknown-as-missing")[0] == 1


def test_cli_fallback_from_config_and_strict(report_file, run_cli, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.opscan.parity]\nfallback-command = "TORCH_DEVICE=cuda python train.py"\n')
    code, out, _ = run_cli("preflight", "--report", report_file, "--format", "json", "--strict")
    rollback = next(c for c in json.loads(out)["checks"] if c["id"] == "rollback")
    assert rollback["status"] == "ok" and rollback["value"] == "TORCH_DEVICE=cuda python train.py"
    assert "pyproject.toml [tool.opscan.parity]" in rollback["detail"]
    assert code == 0                 # only warnings left: ready, so --strict passes
    (tmp_path / "pyproject.toml").unlink()
    code, out, _ = run_cli("preflight", "--report", report_file, "--strict")
    assert code == 1 and "STOP" in out   # no rollback path documented: not ready


def test_cli_output_file(report_file, run_cli, tmp_path):
    code, out, err = run_cli("preflight", "--report", report_file, "--output", "checklist.md")
    assert code == 0 and out == "" and "checklist.md" in err
    assert (tmp_path / "checklist.md").read_text().startswith("# opscan pre-flight checklist")


@pytest.mark.parametrize("content, cause", [
    ("{not json", "not valid JSON"),
    ('{"hello": 1}', "not an opscan JSON report"),
])
def test_cli_bad_report(report_file, run_cli, tmp_path, content, cause):
    (tmp_path / "bad.json").write_text(content)
    code, _, err = run_cli("preflight", "--report", "bad.json")
    assert code == 2 and "bad.json" in err and cause in err


def test_cli_missing_report(report_file, run_cli):
    code, _, err = run_cli("preflight", "--report", "nope.json")
    assert code == 2 and "nope.json: report not found" in err


def test_cli_scans_path_through_the_app(tmp_path, monkeypatch, run_cli):
    """Without --report, preflight runs opscan.pipeline.analyse.analyse on PATH (replaced here by a fake)."""
    from dataclasses import replace

    from opscan.pipeline import analyse as app
    from opscan.records import Coverage, Finding, Location, ModelTrace, OpUsage, Report
    from opscan.assess.verdict import judge

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CPU_FALLBACK_COMMAND", raising=False)
    seen = []

    def fake_analyse(target, config, **kwargs):
        seen.append(target)
        report = Report(
            root=".", tool_version="test",
            findings=(Finding("OPS101", "hardcoded-cuda-device", "device-string", "error", "pinned",
                              Location("m.py", 2)),),
            traces=(ModelTrace("m.py:build", "train", "neuron", ops=(OpUsage("aten::mm", 3),)),),
            coverage=(Coverage("aten::mm", "cpu-fallback"),))
        return replace(report, verdict=judge(report))   # as the analysis does

    monkeypatch.setattr(app, "analyse", fake_analyse)
    code, out, _ = run_cli("preflight", str(tmp_path), "--format", "json", "--exit-on-missing")
    record = json.loads(out)
    assert seen and code == 1
    assert record["ops"]["missing"] == ["aten::mm"] and record["blockers"] == 1
    assert record["report"] == f"scan of {tmp_path}"


def test_the_checklist_reads_a_report_as_its_json_says_it():
    """`opscan preflight PATH` reads the finished Report; `--report FILE` the JSON of the same
    report: both give the checklist the same ops, models, blockers and priority-1 tasks."""
    from dataclasses import replace

    from opscan.records import Coverage, Finding, Location, ModelTrace, OpUsage, Report
    from opscan.reporters.json import to_dict
    from opscan.assess.verdict import judge

    report = Report(
        root=".", tool_version="test",
        findings=(Finding("OPS101", "hardcoded-cuda-device", "device-string", "error", "pinned",
                          Location("m.py", 2)),
                  Finding("OPS101", "hardcoded-cuda-device", "device-string", "error", "pinned",
                          Location("m.py", 5), guarded=True)),
        traces=(ModelTrace("m.py:build", "train", "neuron", ops=(OpUsage("aten::mm", 3), OpUsage("aten::_foo", 1),
                                                                 OpUsage("aten::zz", 1))),
                ModelTrace("n.py:build", "train", "neuron", ops=(OpUsage("aten::mm", 1),))),
        coverage=(Coverage("aten::_foo", "cpu-fallback"), Coverage("aten::mm", "native")))
    report = replace(report, verdict=judge(report))
    direct, via_json = pf.from_report(report), pf.from_json(to_dict(report))
    assert direct == via_json
    assert direct.ops == (("aten::_foo", "cpu-fallback"), ("aten::mm", "native"), ("aten::zz", "unknown"))
    assert direct.models == ("m.py:build", "n.py:build")
    assert direct.blockers == report.verdict.blockers.count == 1      # the guarded pin is no blocker
    checklist = pf.checklist(probe(), direct, "scan of .")
    assert checklist.missing_ops == ("aten::_foo",) and checklist.unknown_ops == ("aten::zz",)


def test_cli_output_file_in_a_new_folder(report_file, run_cli, tmp_path):
    """The checklist goes through the one writer of --output (commands/flags.py write_output)."""
    code, out, err = run_cli("preflight", "--report", report_file, "--output", "out/checklist.md")
    assert code == 0 and out == "" and "out/checklist.md" in err
    assert (tmp_path / "out" / "checklist.md").read_text().startswith("# opscan pre-flight checklist")
