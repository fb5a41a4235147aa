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

    hours: Decimal
    basis: str                   # e.g. "3 weeks x 35 h/week" or "port-task list in report.json"


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
    return Effort(weeks * hours_per_week, f"{_plain(weeks)} weeks x {_plain(hours_per_week)} h/week")


def effort_from_report(path: str | Path) -> Effort:
    """Effort from an `opscan --format json` report: summary.effort_hours (the port-task list)."""
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
    return Effort(value, f"port-task list in {name}: {count}{_plain(value)} h "
                  f"= {_plain(days)} engineer-days of {_plain(HOURS_PER_DAY)} h")


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
    }


def _plain(value: Decimal) -> str:
    """A Decimal without exponent or trailing zeros: 35, 2.5, 12600."""
    text = format(value.normalize(), "f")
    return text


def grouped(value: Decimal) -> str:
    """Money for people: 12,600 or 12,600.50 (cents only when there are some)."""
    rounded = money(value)
    if rounded == rounded.to_integral_value():
        return f"{int(rounded):,}"
    return f"{rounded:,.2f}"
