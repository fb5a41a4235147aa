"""Job order: models an earlier run timed start longest first; new models start before them."""

from __future__ import annotations

import pytest

from tests.support.release import static_release
from tests.support.zoo_fakes import FAKE_TRACER, STATUSES, logging, started

from opscan.containment.process import Limits
from opscan.zoo.cache import Cache
from opscan.zoo.execution import run_zoo
from opscan.zoo.schedule import longest_first
from opscan.zoo.selection import ZooTarget

LIMITS = Limits(timeout=30, max_memory=None, start_method="fork")
COVERAGE = static_release(STATUSES, "fakeneuron==1.0")


def _targets(*names: str) -> list[ZooTarget]:
    return [ZooTarget(name=n, target=n, family="test", config_hash=n) for n in names]


def test_unknown_times_first_by_name_then_longest_first():
    times = {"a": 1.0, "b": None, "c": 30.0, "d": None, "e": 30.0}
    assert longest_first(list(times), str, times.get) == ["b", "d", "c", "e", "a"]


@pytest.mark.slow
def test_a_second_run_starts_the_model_the_first_run_timed_longest(tmp_path, trace_log):
    cache = Cache(tmp_path / "cache")
    first = run_zoo(_targets("fake:alpha", "fake:beta", "fake:slow"), COVERAGE, tracer=FAKE_TRACER,
                    workers=1, limits=logging(LIMITS, trace_log), cache=cache)
    assert started(trace_log) == ["fake:alpha", "fake:beta", "fake:slow"]   # nothing known: by name

    # --no-cache traces everything again and writes nothing, but still orders by the kept times;
    # a model no earlier run traced (gamma) may be long, so it starts first
    again = run_zoo(_targets("fake:alpha", "fake:beta", "fake:gamma", "fake:slow"), COVERAGE,
                    tracer=FAKE_TRACER, workers=1, limits=logging(LIMITS, trace_log),
                    cache=Cache(tmp_path / "cache", enabled=False))
    assert started(trace_log)[3:5] == ["fake:gamma", "fake:slow"]
    assert again.meta["traced"] == 4
    # rows are written in name order whatever the start order, with the same content
    assert [r.name for r in again.rows] == ["fake:alpha", "fake:beta", "fake:gamma", "fake:slow"]
    assert [r.ops for r in again.rows if r.name != "fake:gamma"] == [r.ops for r in first.rows]
