"""Usage errors: one `opscan: error: ...` line, exit 2, and the closest flag, choice or command."""

from __future__ import annotations

import pytest


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("opscan: error: ")
    assert "opscan: error: opscan" not in lines[0]
    return lines[0]


@pytest.mark.parametrize("argv,expected", [
    (["trace", "model.py:build", "--tiemout", "3"], "unrecognized arguments: --tiemout 3; did you mean --timeout?"),
    (["scan", ".", "--selct", "OPS101"], "unrecognized arguments: --selct OPS101; did you mean --select?"),
    ([".", "--no-tarce"], "unrecognized argument: --no-tarce; did you mean --no-trace?"),
    (["db", "show", "aten::add", "--bakend", "torchneuron"], "did you mean --backend?"),
    (["trace", "--format", "jsn", "m.py:b"],
     "invalid choice: 'jsn' (choose from 'terminal', 'json'); did you mean 'json'?"),
])
def test_unknown_flag_suggests_the_closest(run_cli, argv, expected):
    code, out, err = run_cli(*argv)
    assert code == 2 and out == ""
    assert expected in _one_line(err)


def test_nothing_close_suggests_nothing(run_cli):
    code, _, err = run_cli("trace", "m.py:b", "--zzzzzz")
    assert code == 2
    assert _one_line(err) == "opscan: error: unrecognized argument: --zzzzzz"


def test_missing_argument_is_one_line(run_cli):
    code, _, err = run_cli("db")
    assert code == 2
    assert _one_line(err) == "opscan: error: the following arguments are required: ACTION"


def test_mistyped_command(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("tarce", "model.py:build")
    assert code == 2
    assert "did you mean `opscan trace`?" in _one_line(err)
    (tmp_path / "tarce").mkdir()   # an existing folder of that name is a PATH, not a typo
    (tmp_path / "tarce" / "train.py").write_text("import torch\n")
    code, out, err = run_cli("tarce", "--no-trace", "--format", "json")
    assert "no such command" not in err and '"findings"' in out, err
