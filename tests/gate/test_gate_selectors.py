"""Strict selectors: an unknown code, name or category in --select/--ignore or [tool.opscan] is a
usage error (exit 2) with the closest match; a typo must never turn the gate off."""

from __future__ import annotations

from pathlib import Path

import pytest

SOURCE = 'import torch\nx = torch.zeros(1).to("cuda")\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(SOURCE)
    return tmp_path


@pytest.mark.parametrize("command", [[], ["scan"], ["baseline"]])
@pytest.mark.parametrize("flag,value,needle", [
    ("--select", "OPS999", "unknown rule selector 'OPS999'"),
    ("--ignore", "OPS1O1", "unknown rule selector 'OPS1O1': did you mean 'OPS101'?"),   # letter O
    ("--ignore", "hardcoded-cuda-devices", "did you mean 'hardcoded-cuda-device'?"),
])
def test_unknown_selector_flags_are_usage_errors(project, run_cli, command, flag, value, needle):
    extra = ["--no-trace"] if not command else (["--output",
                                                 str(project / "b.json")] if command == ["baseline"] else [])
    code, out, err = run_cli(*command, str(project), flag, value, *extra)
    assert code == 2, err
    assert needle in err and out == ""


@pytest.mark.parametrize("command", [[], ["scan"]])
def test_valid_prefixes_names_and_categories_still_work(project, run_cli, command):
    extra = ["--no-trace"] if not command else []
    assert run_cli(*command, str(project), "--ignore", "OPS1", *extra)[0] == 0          # the only finding is OPS101
    assert run_cli(*command, str(project), "--ignore", "device-string", *extra)[0] == 0
    assert run_cli(*command, str(project), "--select", "torch-cuda-api", *extra)[0] == 0


@pytest.mark.parametrize("command", [[], ["scan"]])
def test_a_bad_config_selector_is_a_usage_error_naming_the_file(project, run_cli, command):
    (project / "pyproject.toml").write_text('[tool.opscan]\nignore = ["OPS1O1"]\nselect = ["cuda-apii"]\n')
    extra = ["--no-trace"] if not command else []
    code, out, err = run_cli(*command, str(project), *extra)
    assert code == 2
    assert "pyproject.toml: tool.opscan.ignore: unknown rule selector 'OPS1O1': did you mean 'OPS101'?" in err
    assert "tool.opscan.select: unknown rule selector 'cuda-apii': did you mean 'cuda-api'?" in err


def test_config_selectors_may_name_extra_rules(project, run_cli):
    rules = project / "my-rules"
    rules.mkdir()
    (rules / "acme-device.yaml").write_text(
        'id: ACME101\nname: acme-device\nstatus: preview\nsince: "1.0"\ncategory: device-string\n'
        'severity: warning\ntask: device-agnostic\nmessage: "acme {value}"\n'
        'match: {string: "^acme$", in: [device-arg]}\ndocs: {what: a., why: b., fix: c.}\nfix: "d."\n'
        'examples:\n  invalid:\n    - |\n      x.to("acme")  # expect: ACME101\n  valid:\n    - |\n      x.to("cpu")\n')
    (project / "pyproject.toml").write_text('[tool.opscan]\nextra-rules = ["my-rules"]\n'
                                            'ignore = ["ACME101", "OPS101"]\n')
    assert run_cli(str(project), "--no-trace")[0] == 0
