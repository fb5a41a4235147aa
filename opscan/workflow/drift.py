"""Classifies the gap between two loss curves: none, flat (accumulation order) or growing.

# NOTE [drift classification]
The gap g_i = |candidate_i - baseline_i| at each compared step s_i with both losses finite is
summarised by two statistics, and the call is made from both:

- a least-squares line g = intercept + slope * s, with its R^2 (how much of the gap's variation
  the line explains);
- the mean gap over the first third of the compared steps against the mean over the last third
  (`late_over_early`; infinite when the early mean is 0 and the late one is not).

  none     every gap is at most `floor` (1% of the absolute tolerance; exactly 0 when the
           tolerance is 0): there is no measurable gap.
  growing  slope > 0 and late_over_early >= 2, and either R^2 >= 0.5 (a steady rise), or
           late_over_early >= 10 (an exponential blow-up or a late jump fits a line poorly but is
           no accumulation noise), or fewer than 4 points (a line says nothing): the gap keeps
           widening - a numeric or kernel problem to chase.
  flat     any other measurable gap: it appears and stays at about the same size, the signature
           of a different floating-point accumulation order; widen the tolerance only if it sits
           near it, do not chase kernels.

A gap that appears mid-run as a jump and stays there is called growing (its late mean is far
above its early one): a sudden change is not accumulation order either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FLOOR_FRACTION = 0.01        # "no measurable gap": every |delta| <= 1% of the tolerance
GROWTH_RATIO = 2.0           # late mean at least twice the early mean
MIN_R_SQUARED = 0.5          # the line must explain at least half the variation
MIN_FIT_POINTS = 4           # below this, the line is not used
STEEP_RATIO = 10.0           # a late mean this far above the early one is growth, line or not


@dataclass(frozen=True)
class Drift:
    """The drift call and the statistics behind it (None where a statistic is undefined)."""

    kind: str                        # "none" | "flat" | "growing"
    points: int                      # compared steps with both losses finite
    floor: float
    max_abs_delta: float | None
    max_abs_delta_step: int | None
    mean_abs_delta: float | None
    first_gap_step: int | None       # first step whose |delta| exceeds the floor
    slope: float | None              # |delta| per step, least squares
    intercept: float | None
    r_squared: float | None
    early_mean: float | None
    late_mean: float | None
    late_over_early: float | None
    reason: str


def linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float, float | None]:
    """Least-squares line through (xs, ys): (slope, intercept, R^2). R^2 is None when ys are constant."""
    n = len(xs)
    mean_x = math.fsum(xs) / n
    mean_y = math.fsum(ys) / n
    sxx = math.fsum((x - mean_x) ** 2 for x in xs)
    sxy = math.fsum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
    syy = math.fsum((y - mean_y) ** 2 for y in ys)
    slope = sxy / sxx if sxx > 0 else 0.0
    intercept = mean_y - slope * mean_x
    if syy == 0:
        return slope, intercept, None
    residual = math.fsum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys))
    return slope, intercept, max(0.0, 1.0 - residual / syy)


def classify(steps: list[int], gaps: list[float], tolerance: float) -> Drift:
    """Classify the gaps |delta| (finite, one per step, steps ascending) against `tolerance`."""
    floor = tolerance * FLOOR_FRACTION
    n = len(gaps)
    if n == 0:
        return Drift("none", 0, floor, None, None, None, None, None, None, None, None, None, None,
                     "no step has two finite losses to compare")
    peak = max(range(n), key=lambda i: (gaps[i], -i))
    mean = math.fsum(gaps) / n
    first_gap = next((s for s, g in zip(steps, gaps) if g > floor), None)
    third = max(1, n // 3)
    early = math.fsum(gaps[:third]) / third
    late = math.fsum(gaps[-third:]) / third
    ratio = late / early if early > 0 else (math.inf if late > 0 else None)
    slope = intercept = r2 = None
    if n >= 2:
        slope, intercept, r2 = linear_fit([float(s) for s in steps], gaps)
    common = dict(points=n, floor=floor, max_abs_delta=gaps[peak], max_abs_delta_step=steps[peak],
                  mean_abs_delta=mean, first_gap_step=first_gap, slope=slope, intercept=intercept,
                  r_squared=r2, early_mean=early, late_mean=late, late_over_early=ratio)
    if gaps[peak] <= floor:
        return Drift("none", reason=f"every |delta| is at most {floor:.3g} (1% of the tolerance)",
                     **common)
    rising = slope is not None and slope > 0 and ratio is not None and ratio >= GROWTH_RATIO
    fits = n < MIN_FIT_POINTS or (r2 is not None and r2 >= MIN_R_SQUARED)
    steep = ratio is not None and ratio >= STEEP_RATIO
    if rising and (fits or steep):
        if n < MIN_FIT_POINTS:
            fit = "too few points to judge the line"
        elif r2 is not None and r2 >= MIN_R_SQUARED:
            fit = "a straight line fits the rise"
        else:
            fit = "the rise is too steep to be accumulation noise"
        return Drift("growing", reason=(
            f"|delta| keeps widening: late mean {_ratio(ratio)} the early mean, {fit}"), **common)
    if rising:
        why = f"late mean {_ratio(ratio)} the early mean but the line fits poorly (R^2 {r2:.2f})"
    elif ratio is not None and ratio < GROWTH_RATIO:
        why = f"late mean {_ratio(ratio)} the early mean"
    else:
        why = "|delta| does not rise with the steps"
    return Drift("flat", reason=f"gap present but not widening: {why}", **common)


def _ratio(ratio: float) -> str:
    return "is far above" if math.isinf(ratio) else f"is {ratio:.2f}x"
