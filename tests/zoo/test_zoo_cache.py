"""Caching: a second run traces nothing; a new db release re-checks rows without re-tracing."""

from __future__ import annotations

import pytest

from tests.support.release import static_release
from tests.support.zoo_fakes import FAKE_TRACER, STATUSES, logging, traced

from opscan.containment.process import Limits
from opscan.zoo.cache import Cache, trace_from_dict, trace_to_dict
from opscan.zoo.execution import run_zoo, toolchain, trace_key
from opscan.zoo.selection import ZooTarget

LIMITS = Limits(timeout=3, max_memory=None, start_method="fork")


def _targets(*names: str) -> list[ZooTarget]:
    return [ZooTarget(name=n, target=n, family="test", config_hash=n) for n in names]


@pytest.mark.slow
def test_second_run_comes_from_cache_and_new_release_rechecks_without_tracing(tmp_path, trace_log):
    cache = Cache(tmp_path / "cache")
    targets = _targets("fake:alpha", "fake:beta", "fake:hang")
    old = static_release(STATUSES, "fakeneuron==1.0")
    first = run_zoo(targets, old, tracer=FAKE_TRACER, workers=2, limits=logging(LIMITS, trace_log), cache=cache)
    assert traced(trace_log) == ["fake:alpha", "fake:beta", "fake:hang"]
    assert first.meta["traced"] == 3 and not any(r.cached for r in first.rows)

    second = run_zoo(targets, old, tracer=FAKE_TRACER, workers=2, limits=logging(LIMITS, trace_log), cache=cache)
    # a timeout is not cached (it depends on the limit and the load): only it is traced again
    assert traced(trace_log) == ["fake:alpha", "fake:beta", "fake:hang", "fake:hang"]
    assert second.meta["row_cache"] == 2 and second.meta["traced"] == 1
    rows = {r.name: r for r in second.rows}
    assert rows["fake:alpha"].cached and rows["fake:beta"].verdict == "blocked"

    # a new release fixes the custom op and the fallback: rows change, nothing is re-traced
    new = static_release({**STATUSES, "aten::nonzero": "native", "mylib::fused_rope": "native"}, "fakeneuron==2.0")
    third = run_zoo(_targets("fake:alpha", "fake:beta"), new, tracer=FAKE_TRACER, workers=2,
                    limits=logging(LIMITS, trace_log),
                    cache=cache)
    assert traced(trace_log) == ["fake:alpha", "fake:beta", "fake:hang", "fake:hang"]
    assert third.meta["trace_cache"] == 2 and third.meta["traced"] == 0
    # as `opscan PATH` judges them: no evidence behind the static table (likely), and a custom op is a
    # kernel to check whatever its status (unknown)
    assert {r.name: r.verdict for r in third.rows} == {"fake:alpha": "likely", "fake:beta": "unknown"}


def test_changed_config_or_toolchain_means_a_new_trace(tmp_path, trace_log):
    cache = Cache(tmp_path / "cache")
    cov = static_release(STATUSES, "fakeneuron==1.0")
    run_zoo([ZooTarget("m", "fake:alpha", config_hash="aaa")], cov, tracer=FAKE_TRACER,
            limits=logging(LIMITS, trace_log), cache=cache)
    run_zoo([ZooTarget("m", "fake:alpha", config_hash="bbb")], cov, tracer=FAKE_TRACER,
            limits=logging(LIMITS, trace_log), cache=cache)
    assert traced(trace_log) == ["fake:alpha", "fake:alpha"]
    target = ZooTarget("m", "fake:alpha", config_hash="aaa")
    tools = toolchain()
    assert trace_key(target, {}, FAKE_TRACER, tools) != trace_key(target, {}, FAKE_TRACER, {**tools, "torch": "2.14.0"})
    assert trace_key(target, {}, FAKE_TRACER, tools) != trace_key(target, {"mode": "inference"}, FAKE_TRACER, tools)


def test_no_cache_traces_again_and_writes_nothing(tmp_path, trace_log):
    cache = Cache(tmp_path / "cache", enabled=False)
    cov = static_release(STATUSES, "fakeneuron==1.0")
    for _ in range(2):
        run_zoo(_targets("fake:alpha"), cov, tracer=FAKE_TRACER, limits=logging(LIMITS, trace_log), cache=cache)
    assert traced(trace_log) == ["fake:alpha", "fake:alpha"]
    assert not (tmp_path / "cache").exists()


def test_trace_round_trips_and_corrupt_entries_are_misses(tmp_path):
    from tests.support import zoo_fakes

    trace = zoo_fakes.fake_tracer("fake:beta")
    assert trace_from_dict(trace_to_dict(trace)) == trace
    cache = Cache(tmp_path)
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "k.json").write_text("{not json")
    assert cache.get_outcome("k") is None
