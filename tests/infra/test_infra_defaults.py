"""`opscan trace`, `opscan PATH` and `opscan zoo` pick the same release and device profile by
default, take the same --db FILE and the same limit flags; renamed flags say what to use."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from opscan.db import load_release

ATTN = """\
import torch
import torch.nn.functional as F


class Attn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)

    def forward(self, x):
        q, k, v = self.qkv(x).view(2, 4, 3, 2, 4).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v)


def build():
    return Attn(), (torch.randn(2, 4, 8),)
"""


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "attn.py").write_text(ATTN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _ops(report: dict) -> list[str]:
    return sorted(op["op"] for op in report["ops"])


@pytest.mark.slow
def test_trace_path_and_zoo_agree_without_flags(run_cli, project):
    """SDPA shows the device profile: the newest release's profile sends it to a fused kernel,
    the built-in generic profile (what `opscan trace` used without --backend) to the math ops."""
    pytest.importorskip("torch")
    newest = load_release(None).spec
    code, out, err = run_cli("trace", "attn.py:build", "--mode", "inference", "--format", "json")
    assert code == 0, err
    plain = json.loads(out)
    code, out, err = run_cli("trace", "attn.py:build", "--mode", "inference", "--format", "json",
                             "--backend", newest)
    assert code == 0, err
    flagged = json.loads(out)
    assert plain["backend"] == flagged["backend"] == newest
    assert _ops(plain) == _ops(flagged)
    assert plain["ops"] and any(op["status"] != "unknown" for op in plain["ops"])   # checked against it

    code, out, err = run_cli(str(project), "--model", "attn.py:build", "--mode", "inference", "--format", "json")
    assert code in (0, 1), err
    whole = json.loads(out)
    assert whole["backend"] == newest and _ops(whole) == _ops(plain)

    code, _, err = run_cli("zoo", "attn.py:build", "--mode", "inference", "--no-cache", "--quiet",
                           "--workers", "1", "--start-method", "spawn", "--json", str(project / "zoo.json"))
    assert code == 0, err
    zoo = json.loads((project / "zoo.json").read_text())
    assert zoo["meta"]["backend"] == newest and zoo["meta"]["options"]["profile"] == newest
    (row,) = zoo["models"]
    assert sorted(row["op_cells"]) == _ops(plain)


def test_trace_takes_the_project_release(project):
    """Without flags `opscan trace` uses [tool.opscan] backend, like `opscan PATH`."""
    from opscan.commands.trace import configured
    from opscan.pipeline.phases import database   # the pipeline's step, as `opscan PATH` loads it

    older = next(r for r in _shipped() if r.spec != load_release(None).spec)
    (project / "pyproject.toml").write_text(f'[tool.opscan]\nbackend = "{older.spec}"\n')
    assert database(configured(None, None)).spec == older.spec
    assert database(configured(load_release(None).spec, None)).spec == load_release(None).spec


def _shipped():
    from opscan.db import shipped_releases

    return shipped_releases()


@pytest.mark.parametrize("command", [["trace", "attn.py:build"], ["zoo", "attn.py:build"], ["."],
                                     ["db", "show", "aten::mm"], ["db", "list"]])
def test_db_takes_a_release_file_everywhere(command):
    """--db FILE is the same flag in every command that reads the coverage database."""
    parsed = _parse(command + ["--db", "probed.yaml"])
    assert parsed.db == "probed.yaml"


def test_db_file_of_db_list_lists_that_release(run_cli, project):
    path = load_release(None).path
    code, out, err = run_cli("db", "list", "--db", str(path), "--format", "json")
    assert code == 0, err
    assert [r["spec"] for r in json.loads(out)["releases"]] == [load_release(None).spec]


@pytest.mark.parametrize("old,new", [("--db-file", "--db FILE"), ("--memory", "--max-memory SIZE"),
                                     ("--profile-from-db", "drop it")])
def test_renamed_zoo_flags_say_what_to_use(run_cli, project, old, new):
    code, out, err = run_cli("zoo", "fake:alpha", old, "8")
    assert code == 2 and out == ""
    line = err.strip()
    assert line.startswith(f"opscan: error: argument {old}: was renamed") and new in line, err


@pytest.mark.parametrize("command", [["trace", "attn.py:build"], ["zoo", "attn.py:build"], ["."]])
def test_one_pair_of_limit_flags(command):
    from opscan.commands.flags import limits_from

    parsed = _parse(command + ["--timeout", "12", "--max-memory", "3G"])
    limits = limits_from(parsed)
    assert (limits.timeout, limits.max_memory) == (12.0, 3 << 30)


@pytest.mark.parametrize("command", [["trace", "attn.py:build"], ["zoo", "attn.py:build"], ["."]])
def test_bad_limit_values_are_usage_errors(run_cli, project, command):
    code, _, err = run_cli(*command, "--max-memory", "lots")
    assert code == 2 and "--max-memory: not a size: 'lots'" in err


def _parse(argv: list[str]) -> argparse.Namespace:
    from opscan.cli import DEFAULT_COMMAND, COMMANDS, build_parser

    if argv[0] not in COMMANDS:
        argv = [DEFAULT_COMMAND, *argv]
    return build_parser(argv[0]).parse_args(argv)
