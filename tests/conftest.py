"""Shared test fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo_root() -> Path:
    """The opscan source checkout."""
    return ROOT


@pytest.fixture
def run_cli(capsys):
    """Run `opscan ARGS...` in-process; returns (exit_code, stdout, stderr)."""
    from opscan.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def pytest_report_header(config):
    return f"python {sys.version.split()[0]}"
