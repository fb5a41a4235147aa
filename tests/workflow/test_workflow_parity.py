"""Comparison of two loss logs: tolerance rule, first divergence, NaN/inf, step sets."""

from __future__ import annotations

import math

import pytest

from opscan.errors import InputError, UsageError
from opscan.workflow.losslog import LossLog
from opscan.workflow.parity import Tolerance, compare, parse_steps


def log(name: str, losses: dict[int, float]) -> LossLog:
    return LossLog(name, "json-object", tuple(sorted(losses.items())))


BASE = {s: 2.0 - 0.01 * s for s in range(0, 101, 5)}


def test_identical_logs_are_in_parity():
    result = compare(log("a", BASE), log("b", BASE), Tolerance(1e-3))
    assert result.ok and result.first_divergence_step is None and result.drift.kind == "none"
    assert [r.step for r in result.rows] == sorted(BASE)


def test_known_divergence_point():
    cand = {s: v + (0.0 if s < 60 else 0.01) for s, v in BASE.items()}
    result = compare(log("a", BASE), log("b", cand), Tolerance(2e-3))
    assert not result.ok
    assert result.first_divergence_step == 60
    assert [r.step for r in result.rows if not r.ok] == [60, 65, 70, 75, 80, 85, 90, 95, 100]
    row = next(r for r in result.rows if r.step == 60)
    assert row.delta == pytest.approx(0.01) and row.allowed == pytest.approx(2e-3)


def test_relative_tolerance_widens_the_band():
    cand = {s: v * 1.004 for s, v in BASE.items()}        # 0.4% off everywhere
    assert not compare(log("a", BASE), log("b", cand), Tolerance(1e-3)).ok
    result = compare(log("a", BASE), log("b", cand), Tolerance(1e-3, 5e-3))
    assert result.ok
    assert result.rows[0].allowed == pytest.approx(1e-3 + 5e-3 * 2.0)


def test_nan_in_one_run_is_a_divergence_at_that_step():
    cand = dict(BASE)
    cand[40] = math.nan
    result = compare(log("a", BASE), log("b", cand), Tolerance(1e-3))
    assert result.first_divergence_step == 40
    row = next(r for r in result.rows if r.step == 40)
    assert row.delta is None and not row.ok and "NaN in candidate only" in row.note
    assert result.drift.points == len(BASE) - 1       # the NaN step is left out of the fit


def test_nan_in_both_runs_agrees_but_warns():
    base, cand = dict(BASE), dict(BASE)
    base[100] = cand[100] = math.nan
    result = compare(log("a", base), log("b", cand), Tolerance(1e-3))
    assert result.ok
    assert any("training itself broke" in w for w in result.warnings)


def test_infinities():
    base, cand = dict(BASE), dict(BASE)
    base[50], cand[50] = math.inf, -math.inf
    result = compare(log("a", base), log("b", cand), Tolerance(1e-3))
    assert result.first_divergence_step == 50
    cand[50] = math.inf
    assert compare(log("a", base), log("b", cand), Tolerance(1e-3)).ok


def test_mismatched_step_sets_are_reported():
    cand = {s: v for s, v in BASE.items() if s <= 50}
    cand[51] = 1.0
    result = compare(log("a", BASE), log("b", cand), Tolerance(1e-3))
    assert result.ok                                       # the common steps agree
    assert result.only_in_baseline == (55, 60, 65, 70, 75, 80, 85, 90, 95, 100)
    assert result.only_in_candidate == (51,)
    assert any("step sets differ" in w for w in result.warnings)
    strict = compare(log("a", BASE), log("b", cand), Tolerance(1e-3), require_same_steps=True)
    assert not strict.ok and strict.first_divergence_step is None


def test_requested_steps_missing_from_a_log():
    cand = {s: v for s, v in BASE.items() if s <= 50}
    with pytest.raises(InputError) as info:
        compare(log("a.json", BASE), log("b.json", cand), Tolerance(1e-3), steps=(10, 50, 100))
    assert str(info.value).startswith("b.json: ") and "100" in str(info.value)


def test_only_requested_steps_are_compared():
    cand = {s: v + (0.05 if s == 15 else 0.0) for s, v in BASE.items()}
    result = compare(log("a", BASE), log("b", cand), Tolerance(1e-3), steps=(10, 50, 100))
    assert result.ok and [r.step for r in result.rows] == [10, 50, 100]


def test_no_common_step():
    with pytest.raises(InputError, match="share no step"):
        compare(log("a", {0: 1.0}), log("b", {1: 1.0}), Tolerance(1e-3))


def test_parse_steps():
    assert parse_steps("10,50,100,200") == (10, 50, 100, 200)
    assert parse_steps("0-20:10, 5") == (0, 5, 10, 20)
    for bad in ("ten", "-5", "20-10", "0-10:0", ","):
        with pytest.raises(UsageError):
            parse_steps(bad)
