"""Drift classification on synthetic gap shapes with known answers."""

from __future__ import annotations

import math
import random

import pytest

from opscan.workflow.drift import classify, linear_fit

STEPS = list(range(0, 200, 2))
TOL = 2e-3


def test_linear_fit_recovers_a_line():
    slope, intercept, r2 = linear_fit([0, 1, 2, 3], [1, 3, 5, 7])
    assert slope == pytest.approx(2.0) and intercept == pytest.approx(1.0) and r2 == pytest.approx(1.0)
    slope, intercept, r2 = linear_fit([0, 1, 2], [4, 4, 4])
    assert slope == 0 and intercept == 4 and r2 is None


def test_identical_runs_have_no_drift():
    drift = classify(STEPS, [0.0] * len(STEPS), TOL)
    assert drift.kind == "none" and drift.max_abs_delta == 0 and drift.first_gap_step is None


def test_gap_below_the_floor_is_none():
    drift = classify(STEPS, [1e-6 * (i % 3) for i in range(len(STEPS))], TOL)
    assert drift.kind == "none"
    assert drift.floor == pytest.approx(TOL / 100)


def test_flat_accumulation_noise():
    rng = random.Random(3)
    gaps = [0.0, 0.0] + [1e-4 * (1 + 0.3 * rng.random()) for _ in STEPS[2:]]
    drift = classify(STEPS, gaps, TOL)
    assert drift.kind == "flat"
    assert drift.first_gap_step == 4
    assert drift.late_over_early < 2
    assert drift.r_squared < 0.5


@pytest.mark.parametrize("shape", [
    [2e-5 * s for s in STEPS],                            # linear
    [1e-5 * math.sqrt(s) for s in STEPS],                 # random-walk-like
    [1e-6 * math.exp(s / 20) for s in STEPS],             # exponential blow-up (poor linear fit)
    [1e-5 if s < 180 else 1e-2 for s in STEPS],           # late jump (poor linear fit)
])
def test_growing_shapes(shape):
    drift = classify(STEPS, shape, TOL)
    assert drift.kind == "growing", drift.reason
    assert drift.slope > 0 and drift.late_over_early >= 2


def test_decaying_gap_is_not_growing():
    drift = classify(STEPS, [1e-3 * math.exp(-s / 50) for s in STEPS], TOL)
    assert drift.kind == "flat" and drift.slope < 0


def test_statistics_are_reported():
    drift = classify([0, 10, 20, 30], [1e-4, 2e-4, 3e-4, 4e-4], TOL)
    assert drift.kind == "growing"
    assert drift.slope == pytest.approx(1e-5)
    assert drift.r_squared == pytest.approx(1.0)
    assert drift.max_abs_delta_step == 30 and drift.points == 4
    assert drift.early_mean == pytest.approx(1e-4) and drift.late_mean == pytest.approx(4e-4)


def test_no_points():
    drift = classify([], [], TOL)
    assert drift.kind == "none" and drift.points == 0 and drift.slope is None
