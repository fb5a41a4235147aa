"""Pins the package's shape: import direction between stages, and the CI/README contract."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "opscan"


def _opscan_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("opscan"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("opscan"):
            names.add(node.module)
    return names


def _stage_files(stage: str) -> list[Path]:
    target = PKG / stage
    return sorted(target.rglob("*.py")) if target.is_dir() else [PKG / f"{stage}.py"]


def test_model_imports_nothing_of_opscan():
    assert _opscan_imports(PKG / "model.py") == set()


@pytest.mark.parametrize("stage,forbidden", [
    ("scan", ("opscan.trace", "opscan.db", "opscan.plan", "opscan.reporters", "opscan.app", "opscan.cli")),
    ("trace", ("opscan.scan", "opscan.db", "opscan.plan", "opscan.reporters", "opscan.app", "opscan.cli")),
    ("db", ("opscan.scan", "opscan.trace", "opscan.plan", "opscan.reporters", "opscan.app", "opscan.cli")),
    # Reporters read the finished report (its verdict included); they never plan or judge.
    ("reporters", ("opscan.scan", "opscan.trace", "opscan.db", "opscan.app", "opscan.cli", "opscan.plan",
                   "opscan.verdict", "opscan.gate")),
    # The plan owns its cost model (plan/cost.py); config reads it from there, never the reverse.
    ("plan", ("opscan.config", "opscan.scan", "opscan.trace", "opscan.db", "opscan.reporters", "opscan.app",
              "opscan.cli")),
    ("zoo/render", ("opscan.plan", "opscan.verdict", "opscan.gate", "opscan.scan", "opscan.db")),
])
def test_stages_do_not_import_each_other(stage, forbidden):
    for path in _stage_files(stage):
        bad = {name for name in _opscan_imports(path) if name.startswith(forbidden)}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", readme, flags=re.S)
    assert blocks, "README has no quick start"
    commands = [line for line in blocks[0].splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2, "the quick start is two commands"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci
