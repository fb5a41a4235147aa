"""Does the port pay back? Port cost, monthly saving, break-even months and a verdict, in Decimal.

Money-like figures are Decimals rounded half-up (0.01 for money, 0.1 for months): Python's
round(3.15, 1) gives 3.1 because 3.15 is stored as 3.149999...; Decimal("3.15") rounds to 3.2.
The verdict compares the exact break-even (not the rounded one) with the horizon.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path

from opscan.errors import InputError, UsageError
from opscan.workflow.reportfile import load_report

HOURS_PER_DAY = Decimal(8)       # one engineer-day, for showing effort from a report
CENT = Decimal("0.01")
TENTH = Decimal("0.1")

WORTH_A_PILOT = "worth a pilot"
NOT_THIS_QUARTER = "not this quarter"
NO_SAVINGS = "no savings on these inputs"


@dataclass(frozen=True)
class Effort:
    """The engineering time of the port and where it came from."""

    hours: Decimal               # the likely effort: what the cost and the verdict use
    basis: str                   # e.g. "3 weeks x 35 h/week" or "port-task list in report.json"
    low: Decimal | None = None   # the range of the port-task list (None: given as one figure)
    high: Decimal | None = None


@dataclass(frozen=True)
class Payback:
    """The payback calculation; Decimals are exact until rounded for display."""

    effort: Effort
    rate: Decimal
    monthly_now: Decimal
    monthly_after: Decimal
    horizon_months: Decimal
    port_cost: Decimal
    monthly_saving: Decimal
    breakeven_months: Decimal | None     # exact; None when the saving is not positive
    verdict: str

    @property
    def port_cost_range(self) -> tuple[Decimal, Decimal] | None:
        """Port cost at the low and high effort; None when the effort has no range."""
        if self.effort.low is None or self.effort.high is None:
            return None
        return self.effort.low * self.rate, self.effort.high * self.rate

    @property
    def breakeven_range(self) -> tuple[Decimal, Decimal] | None:
        """Break-even months at the low and high effort (rounded to a tenth); None without a range
        or without a saving."""
        costs = self.port_cost_range
        if costs is None or self.monthly_saving <= 0:
            return None
        return tuple((c / self.monthly_saving).quantize(TENTH, rounding=ROUND_HALF_UP) for c in costs)

    @property
    def breakeven_rounded(self) -> Decimal | None:
        if self.breakeven_months is None:
            return None
        return self.breakeven_months.quantize(TENTH, rounding=ROUND_HALF_UP)


def money(value: Decimal) -> Decimal:
    """Round a money figure to cents, half-up."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def decimal(text: str | float | int, name: str) -> Decimal:
    """Parse a command-line figure into a finite Decimal; raises UsageError naming the flag."""
    try:
        value = Decimal(str(text).strip().replace(",", "").replace("_", ""))
    except InvalidOperation:
        raise UsageError(f"{name}: {text!r} is not a number") from None
    if not value.is_finite():
        raise UsageError(f"{name}: {text!r} is not a finite number")
    return value


def require_positive(value: Decimal | None, name: str) -> Decimal:
    """Raise UsageError unless `value` is given and > 0."""
    if value is None:
        raise UsageError(f"{name} is required")
    if value <= 0:
        raise UsageError(f"{name} must be greater than 0 (got {value})")
    return value


def effort_from_weeks(weeks: Decimal, hours_per_week: Decimal) -> Effort:
    """Effort as weeks x hours per week."""
    weeks = require_positive(weeks, "--weeks")
    hours_per_week = require_positive(hours_per_week, "--hours-per-week")
    return Effort(weeks * hours_per_week, f"{plain(weeks)} weeks x {plain(hours_per_week)} h/week")


def effort_from_report(path: str | Path) -> Effort:
    """Effort from an `opscan --format json` report: summary.effort_hours (the likely effort of the
    port-task list) and, when the report has them, summary.effort_low_hours / effort_high_hours."""
    name = str(path)
    doc = load_report(path)
    summary = doc.get("summary") if isinstance(doc, dict) else None
    hours = summary.get("effort_hours") if isinstance(summary, dict) else None
    if isinstance(hours, bool) or not isinstance(hours, (int, float)):
        raise InputError("no summary.effort_hours: is this an `opscan PATH --format json` report?", name)
    value = Decimal(str(hours))
    if value <= 0:
        raise InputError("summary.effort_hours is 0: the report lists no port tasks; "
                         "give --weeks and --hours-per-week instead", name)
    tasks = summary.get("tasks")
    count = f"{tasks} task(s), " if isinstance(tasks, int) else ""
    days = money(value / HOURS_PER_DAY)
    low, high = (summary.get(key) for key in ("effort_low_hours", "effort_high_hours"))
    ranged = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high))
    low_d, high_d = (Decimal(str(low)), Decimal(str(high))) if ranged else (None, None)
    if ranged and not low_d <= value <= high_d:
        raise InputError(f"summary.effort_low_hours..effort_high_hours ({low}..{high}) does not contain "
                         f"effort_hours ({hours})", name)
    basis = (f"port-task list in {name}: {count}{plain(value)} h likely "
             f"= {plain(days)} engineer-days of {plain(HOURS_PER_DAY)} h")
    if ranged:
        basis += f" (range {plain(low_d)}-{plain(high_d)} h)"
    unsized = summary.get("unsized_tasks")
    if isinstance(unsized, list) and unsized:
        basis += f"; not sized, so not counted: {', '.join(map(str, unsized))}"
    return Effort(value, basis, low_d, high_d)


def compute(effort: Effort, rate: Decimal, monthly_now: Decimal, monthly_after: Decimal,
            horizon_months: Decimal = Decimal(6)) -> Payback:
    """Port cost = hours x rate; saving = now - after; break-even = cost / saving (months)."""
    rate = require_positive(rate, "--rate")
    monthly_now = require_positive(monthly_now, "--monthly-now")
    if monthly_after is None:
        raise UsageError("--monthly-after is required")
    if monthly_after < 0:
        raise UsageError(f"--monthly-after must not be negative (got {monthly_after})")
    horizon_months = require_positive(horizon_months, "--horizon-months")
    port_cost = effort.hours * rate
    saving = monthly_now - monthly_after
    if saving <= 0:
        breakeven, verdict = None, NO_SAVINGS
    else:
        breakeven = port_cost / saving
        verdict = WORTH_A_PILOT if breakeven <= horizon_months else NOT_THIS_QUARTER
    return Payback(effort, rate, monthly_now, monthly_after, horizon_months, port_cost, saving,
                   breakeven, verdict)


def to_dict(result: Payback) -> dict:
    """The JSON record (numbers rounded half-up: money to cents, months to a tenth)."""
    return {
        "port_cost": float(money(result.port_cost)),
        "monthly_saving": float(money(result.monthly_saving)),
        "breakeven_months": None if result.breakeven_rounded is None else float(result.breakeven_rounded),
        "verdict": result.verdict,
        "horizon_months": float(result.horizon_months),
        "effort_hours": float(result.effort.hours),
        "engineer_days": float(money(result.effort.hours / HOURS_PER_DAY)),
        "effort_basis": result.effort.basis,
        "rate": float(result.rate),
        "monthly_now": float(result.monthly_now),
        "monthly_after": float(result.monthly_after),
        "effort_low_hours": None if result.effort.low is None else float(result.effort.low),
        "effort_high_hours": None if result.effort.high is None else float(result.effort.high),
        "port_cost_range": None if result.port_cost_range is None
        else [float(money(c)) for c in result.port_cost_range],
        "breakeven_months_range": None if result.breakeven_range is None
        else [float(m) for m in result.breakeven_range],
    }


def plain(value: Decimal) -> str:
    """A Decimal without exponent or trailing zeros: 35, 2.5, 12600."""
    text = format(value.normalize(), "f")
    return text


def grouped(value: Decimal) -> str:
    """Money for people: 12,600 or 12,600.50 (cents only when there are some)."""
    rounded = money(value)
    if rounded == rounded.to_integral_value():
        return f"{int(rounded):,}"
    return f"{rounded:,.2f}"
