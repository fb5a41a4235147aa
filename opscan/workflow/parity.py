"""Compares two loss logs step by step: per-step verdicts, first divergence, drift of the gap.

A step is ok when |candidate - baseline| <= tolerance + rel_tolerance * |baseline| (the rule of
numpy.isclose / torch.allclose). Non-finite losses: NaN in both runs, or the same infinity in
both, is ok (the runs agree; a warning says the training itself broke); NaN or inf in only one
run, or opposite infinities, is a divergence at that step with no delta.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from opscan.errors import InputError, UsageError
from opscan.workflow.drift import Drift, classify
from opscan.workflow.losslog import LossLog


@dataclass(frozen=True)
class Tolerance:
    """The pass band and where it came from (decided before looking at the numbers)."""

    absolute: float
    relative: float = 0.0
    source: str = "command line"     # "command line" | "pyproject.toml [tool.opscan.parity]"

    def allowed(self, baseline: float) -> float:
        return self.absolute + self.relative * abs(baseline)


@dataclass(frozen=True)
class StepRow:
    """One compared step."""

    step: int
    baseline: float
    candidate: float
    delta: float | None              # candidate - baseline; None when either loss is not finite
    allowed: float | None            # the band at this step; None when delta is None
    ok: bool
    note: str = ""                   # e.g. "NaN in candidate only"


@dataclass(frozen=True)
class ParityResult:
    """The whole comparison of a baseline and a candidate loss log."""

    baseline: LossLog
    candidate: LossLog
    tolerance: Tolerance
    rows: tuple[StepRow, ...]
    steps_requested: tuple[int, ...] | None      # None: every step present in both logs
    only_in_baseline: tuple[int, ...]
    only_in_candidate: tuple[int, ...]
    first_divergence_step: int | None
    drift: Drift
    require_same_steps: bool = False
    warnings: tuple[str, ...] = ()

    @property
    def steps_mismatch(self) -> bool:
        return bool(self.only_in_baseline or self.only_in_candidate)

    @property
    def ok(self) -> bool:
        """Parity holds: no divergent step (and, when required, the same steps in both logs)."""
        if self.first_divergence_step is not None:
            return False
        return not (self.require_same_steps and self.steps_mismatch)


def parse_steps(text: str) -> tuple[int, ...]:
    """Parse `--steps 10,50,100` (also ranges `0-100:10`, i.e. start-stop:stride). Raises UsageError."""
    steps: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            if "-" in part.lstrip("-") and not part.startswith("-"):
                span, _, stride = part.partition(":")
                start, stop = (int(x) for x in span.split("-", 1))
                step = int(stride) if stride else 1
                if step <= 0 or stop < start:
                    raise ValueError
                steps.update(range(start, stop + 1, step))
            else:
                value = int(part)
                if value < 0:
                    raise ValueError
                steps.add(value)
        except ValueError:
            raise UsageError(f"--steps: {part!r} is not a step or a range like 0-200:10") from None
    if not steps:
        raise UsageError("--steps: no steps given")
    return tuple(sorted(steps))


def _compare(step: int, base: float, cand: float, tol: Tolerance) -> StepRow:
    base_ok, cand_ok = math.isfinite(base), math.isfinite(cand)
    if base_ok and cand_ok:
        delta = cand - base
        allowed = tol.allowed(base)
        return StepRow(step, base, cand, delta, allowed, abs(delta) <= allowed)
    if math.isnan(base) and math.isnan(cand):
        return StepRow(step, base, cand, None, None, True, "NaN in both runs")
    if not base_ok and not cand_ok and base == cand:
        return StepRow(step, base, cand, None, None, True, f"{_fmt(base)} in both runs")
    if not base_ok and not cand_ok:
        return StepRow(step, base, cand, None, None, False,
                       f"{_fmt(base)} in baseline, {_fmt(cand)} in candidate")
    which, value = ("candidate", cand) if base_ok else ("baseline", base)
    return StepRow(step, base, cand, None, None, False, f"{_fmt(value)} in {which} only")


def _fmt(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+inf" if value > 0 else "-inf")


def compare(baseline: LossLog, candidate: LossLog, tolerance: Tolerance,
            steps: tuple[int, ...] | None = None, require_same_steps: bool = False) -> ParityResult:
    """Compare `candidate` against `baseline`. Raises InputError for requested steps a log lacks,
    or when the logs share no step at all."""
    if tolerance.absolute < 0 or tolerance.relative < 0 or not (
            math.isfinite(tolerance.absolute) and math.isfinite(tolerance.relative)):
        raise UsageError("tolerances must be finite and not negative")
    base, cand = baseline.as_dict(), candidate.as_dict()
    only_base = tuple(sorted(set(base) - set(cand)))
    only_cand = tuple(sorted(set(cand) - set(base)))
    if steps is None:
        compared = sorted(set(base) & set(cand))
        if not compared:
            raise InputError(
                f"the two loss logs share no step (baseline {_span(base)}, candidate {_span(cand)})",
                candidate.path)
    else:
        for log, losses in ((baseline, base), (candidate, cand)):
            missing = [s for s in steps if s not in losses]
            if missing:
                raise InputError(
                    f"--steps asks for step(s) {_list(missing)} that this log lacks "
                    f"(it has {_span(losses)})", log.path)
        compared = list(steps)
    rows = tuple(_compare(s, base[s], cand[s], tolerance) for s in compared)
    first = next((r.step for r in rows if not r.ok), None)
    finite = [r for r in rows if r.delta is not None]
    drift = classify([r.step for r in finite], [abs(r.delta) for r in finite], tolerance.absolute)
    warnings = []
    both_nan = [r.step for r in rows if r.ok and r.delta is None]
    if both_nan:
        warnings.append(f"both runs have non-finite losses from step {both_nan[0]}: "
                        "they agree, but the training itself broke")
    if only_base or only_cand:
        parts = []
        if only_base:
            parts.append(f"{len(only_base)} step(s) only in baseline ({_list(only_base)})")
        if only_cand:
            parts.append(f"{len(only_cand)} step(s) only in candidate ({_list(only_cand)})")
        warnings.append("step sets differ: " + "; ".join(parts) + " - not compared")
    left_out = len(rows) - len(finite)
    if left_out:
        warnings.append(f"{left_out} step(s) with a non-finite loss are left out of the drift statistics")
    if first is None and drift.kind == "growing":
        warnings.append("every step is within tolerance, but the gap is growing: "
                        "a longer run may diverge")
    return ParityResult(baseline, candidate, tolerance, rows, steps, only_base, only_cand, first,
                        drift, require_same_steps, tuple(warnings))


def _span(losses: dict[int, float]) -> str:
    steps = sorted(losses)
    return f"{len(steps)} step(s), {steps[0]}..{steps[-1]}" if steps else "no steps"


def _list(steps: list[int] | tuple[int, ...], limit: int = 8) -> str:
    shown = ", ".join(str(s) for s in steps[:limit])
    return shown + (f", ... (+{len(steps) - limit})" if len(steps) > limit else "")
