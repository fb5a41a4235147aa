"""Fixtures for the zoo tests: a static coverage release of the fakes' ops, a trace log."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def coverage():
    from tests.support.release import static_release
    from tests.support.zoo_fakes import STATUSES

    return static_release(dict(STATUSES), "fakeneuron==1.0")


@pytest.fixture
def trace_log(tmp_path, monkeypatch) -> Path:
    """File the fake tracer appends each traced target to (children inherit the variable)."""
    path = tmp_path / "traced.log"
    path.write_text("")
    monkeypatch.setenv("ZOO_FAKE_LOG", str(path))
    return path
