"""Fixtures of the targets tests: `opscan REPO --format json` on a fixture repository."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

# the hf/ tests came from tests/trace: register the imitated `neuron` device before any test runs
# a real backward, as tests/trace/conftest.py does
if importlib.util.find_spec("torch") is not None:
    from opscan.trace import prepare

    prepare()


@pytest.fixture
def repo_report(run_cli):
    """`opscan PATH --format json --exit-zero` in-process, its JSON report (the run must exit 0)."""

    def report(path: Path) -> dict:
        code, out, err = run_cli(str(path), "--format", "json", "--exit-zero")
        assert code == 0, err
        return json.loads(out)

    return report


@pytest.fixture
def report_phases():
    """The phases of a report's ops, as one set."""
    return lambda report: {p for op in report["ops"] for p in op["phases"]}
