"""Fixtures for the zoo tests: fake tracers on sys.path, a static coverage release, a trace log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))



@pytest.fixture
def coverage():
    from release_support import static_release
    from zoo_fakes import STATUSES

    return static_release(dict(STATUSES), "fakeneuron==1.0")


@pytest.fixture
def trace_log(tmp_path, monkeypatch) -> Path:
    """File the fake tracer appends each traced target to (children inherit the variable)."""
    path = tmp_path / "traced.log"
    path.write_text("")
    monkeypatch.setenv("ZOO_FAKE_LOG", str(path))
    return path
