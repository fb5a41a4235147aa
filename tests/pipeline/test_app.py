"""One frozen RunOptions value drives `analyse`; the trace limits reach the tracer as an argument."""

from __future__ import annotations

import argparse
import dataclasses

import pytest
from tests.support.release import static_release

from opscan.pipeline.analyse import Phases, RunOptions, analyse
from opscan.commands.flags import add_limit_arguments, isolation_from
from opscan.config import Config, ModelConfig
from opscan.containment.process import Limits
from opscan.records import ModelTrace, OpUsage


def _run(tmp_path, options: RunOptions) -> list:
    (tmp_path / "m.py").write_text("x = 1\n")
    seen = []

    def trace(model, root, profile, limits):
        seen.append(limits)
        return ModelTrace(model.target, model.mode, "neuron", (OpUsage("aten::mm", 1, ("forward",)),))

    config = Config(root=tmp_path, models=(ModelConfig("a.py:build"),))
    database = lambda _config: static_release({"aten::mm": "native"}, "torchneuron==2.33.0")  # noqa: E731
    report = analyse(tmp_path, config, options, phases=Phases.default(trace=trace, database=database))
    assert [c.status for c in report.coverage] == ["native"]
    return seen


def test_the_limits_of_the_options_reach_the_tracer(tmp_path):
    limits = Limits(timeout=12.0, max_memory=3 << 30)
    assert _run(tmp_path, RunOptions(limits=limits)) == [limits]
    assert _run(tmp_path, RunOptions(limits=None)) == [None]     # --in-process


def test_run_options_are_frozen_and_phases_are_explicit():
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunOptions().trace = False   # type: ignore[misc]
    from opscan.pipeline import phases

    assert Phases.default().trace is phases.trace
    with pytest.raises(TypeError, match="no such phase: tracer"):
        Phases.default(tracer=lambda *a: None)


@pytest.mark.parametrize("flags,expected", [
    ([], "limits"), (["--in-process"], None), (["--timeout", "7", "--max-memory", "1G"], Limits(7.0, 1 << 30)),
])
def test_limit_flags_become_the_isolation_of_the_run(flags, expected):
    parser = argparse.ArgumentParser()
    add_limit_arguments(parser)
    got = isolation_from(parser.parse_args(flags))
    if expected == "limits":
        assert isinstance(got, Limits) and got.timeout == 900.0
    else:
        assert got == expected
