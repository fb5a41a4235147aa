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
    """Each test gets its own scan cache folder: no results carried between tests, none in ~/.cache.
    And the same environment in one process or under pytest-xdist, whose workers set COLUMNS=80: the
    terminal report takes its width from COLUMNS (tests that want one set it)."""
    from opscan.scan.rules_memo import close_memo

    close_memo()   # no memo of parsed YAML carried from another test's cache folder (NOTE [rules memo])
    monkeypatch.setenv("OPSCAN_CACHE_DIR", str(tmp_path_factory.mktemp("opscan-cache")))
    monkeypatch.delenv("COLUMNS", raising=False)


def pytest_report_header(config):
    return f"python {sys.version.split()[0]}"


# NOTE [slow opt-in]
# Tests marked `slow` (real models, subprocesses, big inputs) are left out of a plain `pytest` and of
# `scripts/test`, the quick loop of a change; `--slow` runs every test (the README's test command,
# `scripts/test --slow`, and .ci/run pass it). What counts as slow: docs/contributing.md.
# A run that chooses by marker (`-m timm`, `-m slow`) decides for itself: nothing is left out then.
def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help="also run the tests marked slow (left out by default; CI runs them)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow") or config.getoption("markexpr"):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        items[:] = [item for item in items if not item.get_closest_marker("slow")]
        config.hook.pytest_deselected(items=slow)


# the fixture repositories' own tests (tests/targets/repos/*/tests) are data for opscan, not ours to run
collect_ignore_glob = ["targets/repos/*"]
