"""Configuration: discovery, every key, strictness (all problems at once), CLI overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from opscan.config import Config, CostConfig, ParityConfig, load_config, parse_fail_on
from opscan.errors import ConfigError

FULL = """
[tool.opscan]
include = ["src/**/*.py"]
exclude = ["tests/**"]
select = ["OPS1"]
ignore = ["OPS105"]
backend = "2.33.0"
db = "mydb"
fail-on = ["error", "fallback"]
baseline = "ci/baseline.json"
extra-rules = ["myrules"]

[[tool.opscan.models]]
target = "model.py:build"
inputs = ["idx:int64[2,16]"]
mode = "both"
batch = 2
seq-len = 16
optimizer = "sgd"
optimizer-impl = "foreach"
amp = "bfloat16"

[tool.opscan.parity]
tolerance = 0.01
rel-tolerance = 0.05
steps = [10, 50]
target-device = "neuron"
fallback-command = "echo skip"

[tool.opscan.cost]
site-minutes = 30
kernel-days = 5
hours-per-day = 6
kernel-default-lines = 300
"""


ROOT = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path, text: str, name: str = "pyproject.toml") -> Path:
    (tmp_path / name).write_text(text)
    (tmp_path / "myrules").mkdir(exist_ok=True)
    (tmp_path / "mydb").mkdir(exist_ok=True)   # a coverage database folder holding one release
    release = "torchneuron-2.33.0.yaml"
    (tmp_path / "mydb" / release).write_bytes((ROOT / "coverage_db" / release).read_bytes())
    return tmp_path


def test_every_key_is_read(tmp_path):
    root = _project(tmp_path, FULL)
    config = load_config(root / "sub" if False else root)
    assert config.root == root.resolve()
    assert config.include == ("src/**/*.py",) and config.exclude == ("tests/**",)
    assert config.select == ("OPS1",) and config.ignore == ("OPS105",)
    assert config.db == (root / "mydb").resolve()
    assert config.fail_on == ("error", "fallback")
    assert config.baseline == (root / "ci/baseline.json").resolve()
    assert config.extra_rules == ((root / "myrules").resolve(),)
    (model,) = config.models
    assert (model.target, model.inputs, model.mode, model.batch, model.seq_len) == \
        ("model.py:build", ("idx:int64[2,16]",), "both", 2, 16)
    assert (model.optimizer, model.optimizer_impl, model.amp) == ("sgd", "foreach", "bfloat16")
    assert config.parity == ParityConfig(0.01, 0.05, (10, 50), "neuron", "echo skip")
    assert config.cost.site_minutes == 30 and config.cost.kernel_days == 5
    assert config.cost.hours_per_day == 6 and config.cost.kernel_default_lines == 300
    assert config.cost.file_minutes == CostConfig().file_minutes


def test_found_from_a_subfolder_and_a_file(tmp_path):
    root = _project(tmp_path, FULL)
    (root / "pkg").mkdir()
    (root / "pkg" / "x.py").write_text("")
    assert load_config(root / "pkg").path == (root / "pyproject.toml").resolve()
    assert load_config(root / "pkg" / "x.py").root == root.resolve()


def test_pyproject_without_table_is_skipped_and_opscan_toml_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.opscan]\nbackend = 'torch-neuronx-xla==2.32.0'\n")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert load_config(inner).backend == "torch-neuronx-xla==2.32.0"
    (inner / "opscan.toml").write_text("backend = '2.33.0'\nfail-on = 'warning'\n")
    config = load_config(inner)
    assert config.backend == "2.33.0" and config.fail_on == ("warning",) and config.root == inner.resolve()


def test_no_config_gives_defaults(tmp_path):
    config = load_config(tmp_path)
    assert config == Config(root=tmp_path.resolve())
    assert config.fail_on == ("error",) and config.models == ()


def test_all_problems_reported_at_once_with_file_and_key(tmp_path):
    root = _project(tmp_path, """
[tool.opscan]
colour = true
fail_on = ["error"]
select = "OPS1"
backend = 233
extra-rules = ["missing"]
[[tool.opscan.models]]
mode = "train"
[[tool.opscan.models]]
target = "m.py:build"
mode = "fast"
batch = -1
shape = 3
[tool.opscan.cost]
site-minutes = "ten"
kernel-weeks = 1
[tool.opscan.parity]
steps = 0
""")
    with pytest.raises(ConfigError) as caught:
        load_config(root)
    problems = caught.value.problems
    keys = [p.split(": ")[1] for p in problems]
    assert all(p.startswith(str(root / "pyproject.toml")) for p in problems)
    for key in ("tool.opscan.colour", "tool.opscan.fail_on", "tool.opscan.backend", "tool.opscan.extra-rules",
                "tool.opscan.models[0]", "tool.opscan.models[1].mode", "tool.opscan.models[1].batch",
                "tool.opscan.models[1].shape", "tool.opscan.cost.site-minutes", "tool.opscan.cost.kernel-weeks",
                "tool.opscan.parity.steps"):
        assert key in keys, key
    assert "did you mean 'fail-on'" in " ".join(problems)
    assert str(caught.value).startswith(str(root / "pyproject.toml"))


def test_invalid_toml_is_a_config_error_naming_the_file(tmp_path):
    (tmp_path / "opscan.toml").write_text("backend = \n")
    with pytest.raises(ConfigError, match="opscan.toml"):
        load_config(tmp_path)


def test_fail_on_values(tmp_path):
    assert parse_fail_on(["error,fallback", "unknown", "error"]) == ("error", "fallback", "unknown")
    with pytest.raises(ConfigError, match="bogus"):
        parse_fail_on(["bogus"])
    root = _project(tmp_path, "[tool.opscan]\nfail-on = ['error', 'sometimes']\n")
    with pytest.raises(ConfigError) as caught:
        load_config(root)
    assert "sometimes" in caught.value.problems[0]


def test_cli_flags_override_the_file(tmp_path, run_cli):
    root = _project(tmp_path, "[tool.opscan]\nbackend = 'torch-neuronx-xla==2.3.0'\nfail-on = ['warning']\n")
    (root / "x.py").write_text("import os\n")
    import argparse
    from opscan.commands.check import add_arguments, load_effective_config

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args([str(root), "--backend", "2.33.0", "--fail-on", "fallback,unknown",
                              "--model", "m.py:build", "--mode", "inference", "--select", "OPS1,OPS2"])
    config = load_effective_config(args)
    assert config.backend == "2.33.0"
    assert config.fail_on == ("fallback", "unknown")
    assert [(m.target, m.mode) for m in config.models] == [("m.py:build", "inference")]
    assert config.select == ("OPS1", "OPS2")
    plain = load_effective_config(parser.parse_args([str(root)]))
    assert plain.backend == "torch-neuronx-xla==2.3.0" and plain.fail_on == ("warning",)


def test_bad_config_exits_2_listing_every_problem(tmp_path, run_cli):
    _project(tmp_path, "[tool.opscan]\nfoo = 1\nbar = 2\n")
    code, out, err = run_cli(str(tmp_path), "--no-trace")
    assert code == 2
    assert "tool.opscan.foo" in err and "tool.opscan.bar" in err and "pyproject.toml" in err


def test_opscan_toml_with_a_tool_header_gets_a_hint(tmp_path):
    (tmp_path / "opscan.toml").write_text("[tool.opscan]\nbackend = '2.33.0'\n")
    with pytest.raises(ConfigError, match="top level"):
        load_config(tmp_path)


def test_select_and_ignore_flags_take_comma_lists_and_repeats(tmp_path):
    import argparse
    from opscan.commands.check import add_arguments, load_effective_config

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    config = load_effective_config(parser.parse_args([str(tmp_path), "--ignore", "OPS1,OPS2", "--ignore", "OPS003"]))
    assert config.ignore == ("OPS1", "OPS2", "OPS003")


def test_every_problem_in_one_run_selectors_and_backend_included(tmp_path, run_cli):
    """`fail_on`, a bad `select` and a release the database lacks: one run names all three."""
    _project(tmp_path, "[tool.opscan]\nfail_on = ['error']\nselect = ['OPS1O1']\nbackend = '9.9.9'\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    code, out, err = run_cli(str(tmp_path), "--no-trace")          # no trace needed to find them
    assert code == 2 and out == ""
    problems = [line.strip() for line in err.splitlines()[1:]]
    assert [p.split(": ")[1] for p in problems] == ["tool.opscan.fail_on", "tool.opscan.backend",
                                                   "tool.opscan.select"]
    assert "'OPS101'" in problems[2] and "torchneuron==2.33.0" in problems[1]   # the closest, the available
    assert err.splitlines()[0].endswith("3 problems in the opscan configuration")


@pytest.mark.parametrize("command", [("scan",), ("fix", "--diff"), ("trace", "m.py:build", "--in-process")])
def test_every_command_checks_the_release_and_the_selectors(tmp_path, run_cli, monkeypatch, command):
    """config.py only reads the file; each command that loads it passes the release and rule checks
    (opscan/config/checks.py), so a bad `backend` or `select` is the same exit 2 everywhere."""
    _project(tmp_path, "[tool.opscan]\nselect = ['OPS1O1']\nbackend = '9.9.9'\n")
    (tmp_path / "m.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    args = [*command, str(tmp_path)] if command[0] != "trace" else list(command)
    code, out, err = run_cli(*args)
    assert code == 2 and out == ""
    assert "tool.opscan.backend: no release 'torchneuron==9.9.9'" in err and "tool.opscan.select" in err


def test_backend_and_db_are_checked_with_the_config(tmp_path, run_cli):
    """The release is the caller's check (opscan/config/checks.py), reported with the file's own."""
    from opscan.config.checks import load_checked_config

    root = _project(tmp_path, "[tool.opscan]\nbackend = 'torch-neuronx-xla==2.32.0'\ndb = 'mydb'\n")
    with pytest.raises(ConfigError) as caught:       # mydb holds only torchneuron 2.33.0
        load_checked_config(root)
    assert [p.split(": ")[1] for p in caught.value.problems] == ["tool.opscan.backend"]
    assert load_config(root).backend == "torch-neuronx-xla==2.32.0"   # config.py alone reads data
    (root / "pyproject.toml").write_text("[tool.opscan]\ndb = 'nodb'\n")
    with pytest.raises(ConfigError) as caught:
        load_checked_config(root)
    assert "does not exist" in caught.value.problems[0]
    (root / "pyproject.toml").write_text("[tool.opscan]\n")
    (root / "a.py").write_text("x = 1\n")
    code, _, err = run_cli(str(root), "--no-trace", "--backend", "7.7")
    assert code == 2 and "--backend" in err and "torchneuron==2.33.0" in err


def test_allow_unchecked_key(tmp_path):
    assert load_config(_project(tmp_path, "[tool.opscan]\nallow-unchecked = true\n")).allow_unchecked is True
    (tmp_path / "pyproject.toml").write_text("[tool.opscan]\nallow-unchecked = 'yes'\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert caught.value.problems[0].split(": ")[1] == "tool.opscan.allow-unchecked"


def test_backend_check_imports_no_torch(tmp_path):
    """The pre-commit hook reads the config too: checking `backend` must not import torch."""
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text("[tool.opscan]\nbackend = '9.9.9'\n")
    code = ("import sys; sys.modules['torch'] = None\n"
            "from pathlib import Path\nfrom opscan.config.checks import load_checked_config\n"
            "from opscan.errors import ConfigError\n"
            "try:\n    load_checked_config(Path(sys.argv[1]))\n"
            "except ConfigError as exc:\n    print(exc.problems[0])\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "tool.opscan.backend: no release 'torchneuron==9.9.9'" in proc.stdout


# -- unreadable config files (NOTE [unreadable config files] in opscan/config/load.py) ------------------

def test_an_unreadable_pyproject_above_is_passed_over_and_recorded(tmp_path):
    (tmp_path / "opscan.toml").write_text('fail-on = ["warning"]\n')
    inner = tmp_path / "pkg"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[project\nname = 'x'\n")
    config = load_config(inner)
    assert config.path == (tmp_path / "opscan.toml").resolve() and config.fail_on == ("warning",)
    assert [(p.path.name, p.line, p.own) for p in config.problems] == [("pyproject.toml", 1, False)]


def test_opscan_own_unreadable_config_raises_unless_tolerant(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.opscan]\nfail-on = ["warning"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert str(tmp_path / "pyproject.toml") in str(caught.value)
    config = load_config(tmp_path, tolerant=True)
    assert config.fail_on == ("error",) and config.root == tmp_path.resolve()   # the defaults, and the problem
    assert [(p.path.name, p.own) for p in config.problems] == [("pyproject.toml", True)]
    assert config.problems[0].line == 2


def test_a_pyproject_is_opscans_own_by_its_text_even_when_broken(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b"[project]\nname = '\xff'\n[tool.opscan]\n")
    config = load_config(tmp_path, tolerant=True)
    assert [(p.line, p.own) for p in config.problems] == [(2, True)]
