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


@pytest.fixture(autouse=True)
def _own_scan_cache(tmp_path_factory, monkeypatch):
    """Each test gets its own scan cache folder: no results carried between tests, none in ~/.cache."""
    monkeypatch.setenv("OPSCAN_CACHE_DIR", str(tmp_path_factory.mktemp("opscan-cache")))


def pytest_report_header(config):
    return f"python {sys.version.split()[0]}"


# the fixture repositories' own tests (tests/model/repos/*/tests) are data for opscan, not ours to run
collect_ignore_glob = ["model/repos/*"]
