"""`--fail-on not-ready` (issue 44, NOTE [not ready] in opscan/assess/gate.py): every verdict short of
`ready` fails where ops were checked; a source-only run is judged on its source verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from opscan.assess.gate import failures
from opscan.config import FAIL_ON, parse_fail_on
from opscan.pipeline import phases
from opscan.records import ModelTrace, OpSource, OpUsage, Report, Verdict, VerdictKind


def _report(kind: str, source_only: bool = False) -> Report:
    return Report(root=".", tool_version="0", verdict=Verdict(VerdictKind(kind), f"a {kind} headline",
                                                                source_only=source_only))


@pytest.mark.parametrize("kind", ["blocked", "unknown", "fallback", "unchecked", "likely"])
def test_every_verdict_short_of_ready_fails(kind):
    (line,) = failures(_report(kind), ("not-ready",))
    assert line.startswith(f"not-ready: the verdict is {kind}")
    assert failures(_report("ready"), ("not-ready",)) == []


@pytest.mark.parametrize("kind, fails", [("unchecked", False), ("unknown", True), ("blocked", True)])
def test_a_source_only_run_is_judged_on_its_source_verdict(kind, fails):
    assert bool(failures(_report(kind, source_only=True), ("not-ready",))) is fails


def test_the_word_is_one_of_the_gate_words_in_config_and_flag():
    assert "not-ready" in FAIL_ON
    assert parse_fail_on("error,not-ready") == ("error", "not-ready")


CLEAN = "import torch\ndev = torch.accelerator.current_accelerator()\n"
GUARDED = "try:\n    import flash_attn\nexcept ImportError:\n    flash_attn = None\n"


def _fake_trace(model, root, profile, limits):
    return ModelTrace(model.target, model.mode, "neuron",
                      (OpUsage("aten::mm", 3, ("forward",), ("torch.float32",), (OpSource("m.py", 2),), ("train",)),))


def _fake_database(config):
    from tests.support.release import static_release

    return static_release({"aten::mm": "native"}, "torchneuron==2.33.0")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "m.py").write_text(CLEAN, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.opscan]\nfail-on = ['not-ready']\n"
                                             "[[tool.opscan.models]]\ntarget = 'm.py:build'\n", encoding="utf-8")
    return tmp_path


def test_likely_fails_and_source_only_runs_pass_on_a_clean_source(project, run_cli, monkeypatch):
    monkeypatch.setattr(phases, "trace", _fake_trace)
    monkeypatch.setattr(phases, "database", _fake_database)
    code, out, err = run_cli(str(project))                      # the config word; the release is a snapshot
    assert out.splitlines()[0].startswith("~ likely") and code == 1 and "fail-on not-ready" in err
    assert run_cli(str(project), "--fail-on", "error")[0] == 0  # the flag overrides the config
    assert run_cli(str(project), "--no-trace")[0] == 0          # the source holds nothing open
    assert run_cli("scan", str(project))[0] == 0
    assert run_cli("scan", "--concise", str(project / "m.py"), "--root", str(project))[0] == 0   # the hook


def test_a_source_only_run_with_something_open_fails(project, run_cli):
    (project / "g.py").write_text(GUARDED, encoding="utf-8")
    code, out, _ = run_cli(str(project), "--no-trace")
    assert out.splitlines()[0].startswith("? no blockers found, but not proven") and code == 1
    assert run_cli("scan", str(project))[0] == 1
