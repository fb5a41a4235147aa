"""Which trace errors stop tracing is decided by exception class, never by message text."""

from __future__ import annotations

import pytest
from tests.support.release import static_release

from opscan.pipeline.analyse import Phases, analyse
from opscan.config import Config, ModelConfig
from opscan.errors import MissingDependencyError, TraceError
from opscan.records import ModelTrace


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


def test_a_trace_error_makes_the_model_unchecked_and_the_run_exit_2(tmp_path, run_cli, monkeypatch):
    """"failed inside the model code" is not a pass: the verdict lists it, the gate exits 2."""
    from opscan.pipeline import phases

    (tmp_path / "m.py").write_text("x = 1\n")

    def trace(model, root, profile, limits=None):
        raise TraceError(f"trace of {model.target} failed inside the model code: ValueError: "
                         "Validation error for field 'hidden_size': expected int, got str (at m.py:3)",
                         subject=f"trace of {model.target}")   # as opscan/containment/outcome.py raises it

    monkeypatch.setattr(phases, "trace", trace)
    monkeypatch.setattr(phases, "database", _database)
    code, out, err = run_cli(str(tmp_path), "--model", "a.py:build")
    assert code == 2
    assert ("opscan: error: could not check a.py:build: failed inside the model code: ValueError: "
            "Validation error for field 'hidden_size': expected int, got str (at m.py:3)") in err.splitlines()
    assert out.startswith("– source: no CUDA pins; ops: not checked — could not check 1 model")
    code, _, _ = run_cli(str(tmp_path), "--model", "a.py:build", "--allow-unchecked")
    assert code == 0
    code, _, _ = run_cli(str(tmp_path), "--model", "a.py:build", "--exit-zero")
    assert code == 2                                   # report-only runs still say it was not checked


def test_one_model_unchecked_beside_a_traced_one_is_never_ready(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")

    def trace(model, root, profile, limits=None):
        if model.target == "a.py:build":
            raise TraceError("trace of a.py:build failed inside the model code: RuntimeError: boom",
                             subject="trace of a.py:build")
        return ModelTrace(model.target, model.mode, "neuron", ())

    config = Config(root=tmp_path, models=(ModelConfig("a.py:build"), ModelConfig("b.py:build")))
    verdict = analyse(tmp_path, config, phases=Phases.default(trace=trace, database=_database)).verdict
    assert verdict.kind == "unknown" and "1 model not checked" in verdict.headline
    assert verdict.unchecked == ("a.py:build: failed inside the model code: RuntimeError: boom",)
    assert verdict.ops_checked
