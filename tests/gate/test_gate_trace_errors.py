"""Which trace errors stop tracing is decided by exception class, never by message text."""

from __future__ import annotations

import pytest
from release_support import static_release

from opscan.app import Phases, analyse
from opscan.config import Config, ModelConfig
from opscan.errors import MissingDependencyError, TraceError
from opscan.model import ModelTrace


def _database(config):
    return static_release({}, "torchneuron==2.33.0")


def _run(tmp_path, error: Exception) -> list[str]:
    (tmp_path / "m.py").write_text("x = 1\n")
    calls: list[str] = []

    def trace(model, root, profile, limits):
        calls.append(model.target)
        if model.target == "a.py:build":
            raise error
        return ModelTrace(model.target, model.mode, "neuron", ())

    config = Config(root=tmp_path, models=(ModelConfig("a.py:build"), ModelConfig("b.py:build")))
    analyse(tmp_path, config, phases=Phases.default(trace=trace, database=_database))
    return calls


def test_a_missing_torch_stops_tracing_the_other_models(tmp_path):
    assert _run(tmp_path, MissingDependencyError("tracing needs PyTorch", "torch")) == ["a.py:build"]


@pytest.mark.parametrize("message", ["the model's package 'foo' is not installed", "boom"])
def test_other_trace_errors_do_not_stop_the_next_model_whatever_their_text(tmp_path, message):
    assert _run(tmp_path, TraceError(message)) == ["a.py:build", "b.py:build"]
