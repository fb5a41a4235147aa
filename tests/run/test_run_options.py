"""`opscan run` parses its own options as every command does (NOTE [run's own options] in
opscan/commands/run.py), and the hints a stopped run or trace prints name options that exist."""

from __future__ import annotations

import re

import pytest

from opscan.cli import build_parser, main


@pytest.mark.parametrize("argv, named", [
    (["--mode", "inference", "--", "python", "train.py"], "--mode inference"),
    (["--bogus", "--", "python", "train.py"], "--bogus"),
    (["--bogus", "python", "train.py"], "--bogus"),
    (["--device", "cpu", "stray", "--", "python", "train.py"], "stray"),
])
def test_an_unknown_option_is_a_one_line_usage_error(argv, named, capsys):
    assert main(["run", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("opscan: error: unrecognized argument")
    assert named in err[0]


def test_a_bad_value_names_the_option(capsys):
    assert main(["run", "--steps", "0", "--", "python", "train.py"]) == 2
    assert "--steps" in capsys.readouterr().err


def test_the_script_keeps_its_own_options_after_the_dashes():
    args = build_parser("run").parse_args(["run", "--device", "cpu", "--", "python", "train.py", "--mode", "x", "--"])
    assert args.device == "cpu" and args.script_command == ["python", "train.py", "--mode", "x", "--"]
    args = build_parser("run").parse_args(["run", "--steps", "2", "python", "train.py", "--lr", "3"])
    assert args.steps == 2 and args.script_command == ["python", "train.py", "--lr", "3"]


def _options(command: str) -> set[str]:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command")
    return {flag for action in sub.choices[command]._actions for flag in action.option_strings}


def _flags(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text))


def test_the_hints_name_options_of_the_command_that_prints_them():
    pytest.importorskip("torch")
    from opscan.trace import tracer
    from opscan.trace.run import script

    assert _flags(script.RUN_HINT) and _flags(script.RUN_HINT) <= _options("run")
    assert "--mode" not in script.RUN_HINT
    assert _flags(tracer.DEFAULT_HINT) <= _options("trace")
    for key, hint in tracer._HINTS:   # a hint naming a command's flag: that command has it
        for command, flag in re.findall(r"opscan (\w+): (--[a-z-]+)", hint):
            assert flag in _options(command), (key, flag)


@pytest.mark.slow
def test_a_stopped_run_hints_at_run_options(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from opscan.trace.run import run_script

    script = tmp_path / "train.py"
    script.write_text("import torch\nraise ValueError('no data folder')\n")
    monkeypatch.chdir(tmp_path)
    trace, _ = run_script(str(script), device="neuron", steps=1, project_root=str(tmp_path))
    assert "ValueError" in trace.stopped_at and "train.py:2" in trace.stopped_at
    hinted = _flags(trace.stop_hint)
    assert hinted and hinted <= _options("run")
