"""`opscan payback`: does the engineering time of the port pay back within the horizon?"""

from __future__ import annotations

import argparse
import json
import sys

from opscan.errors import UsageError

HELP = "port cost, monthly saving, break-even months and a verdict (worth a pilot or not)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weeks", metavar="W", help="engineering weeks of the port")
    parser.add_argument("--hours-per-week", metavar="H", help="hours worked per week")
    parser.add_argument("--from", dest="from_report", metavar="REPORT.json",
                        help="take the effort from an `opscan PATH --format json` report "
                             "(summary.effort_hours, the likely effort of the port-task list; its "
                             "range is reported too) instead of --weeks")
    parser.add_argument("--rate", metavar="R", help="cost of one engineering hour")
    parser.add_argument("--monthly-now", metavar="A", help="compute bill per month today (GPU)")
    parser.add_argument("--monthly-after", metavar="B", help="compute bill per month after the port")
    parser.add_argument("--horizon-months", metavar="M", default="6",
                        help="break-even within this many months is worth a pilot (default 6)")
    parser.add_argument("--format", choices=("terminal", "json"), default="terminal")


def run(args: argparse.Namespace) -> int:
    from opscan.workflow import payback as pb

    def number(flag: str, value: str | None):
        return None if value is None else pb.decimal(value, flag)

    if args.from_report is not None:
        if args.weeks is not None or args.hours_per_week is not None:
            raise UsageError("payback: give either --from REPORT.json or "
                             "--weeks/--hours-per-week, not both")
        effort = pb.effort_from_report(args.from_report)
    else:
        if args.weeks is None:
            raise UsageError("payback: --weeks is required (or --from REPORT.json)")
        if args.hours_per_week is None:
            raise UsageError("payback: --hours-per-week is required with --weeks")
        effort = pb.effort_from_weeks(number("--weeks", args.weeks),
                                      number("--hours-per-week", args.hours_per_week))
    result = pb.compute(
        effort,
        number("--rate", args.rate),
        number("--monthly-now", args.monthly_now),
        number("--monthly-after", args.monthly_after),
        number("--horizon-months", args.horizon_months),
    )
    if args.format == "json":
        json.dump(pb.to_dict(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _terminal(result)
    return 0


def _terminal(result) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from opscan.workflow.payback import HOURS_PER_DAY, NO_SAVINGS, WORTH_A_PILOT, plain, grouped, money

    console = Console(highlight=False)
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(style="dim")
    effort = result.effort
    days = plain(money(effort.hours / HOURS_PER_DAY))
    basis = effort.basis if "engineer-days" in effort.basis else f"{effort.basis} = {days} engineer-days"
    table.add_row("effort", f"{plain(effort.hours)} h", basis)
    table.add_row("port cost", grouped(result.port_cost),
                  f"{plain(effort.hours)} h x {plain(result.rate)}/h (likely)")
    costs = result.port_cost_range
    if costs is not None:
        table.add_row("cost range", f"{grouped(costs[0])}-{grouped(costs[1])}",
                      f"{plain(effort.low)}-{plain(effort.high)} h x {plain(result.rate)}/h")
    table.add_row("monthly saving", grouped(result.monthly_saving),
                  f"{grouped(result.monthly_now)} now - {grouped(result.monthly_after)} after")
    if result.breakeven_months is None:
        table.add_row("break-even", "never", "the saving is not positive")
    else:
        table.add_row("break-even", f"{result.breakeven_rounded} months",
                      f"{grouped(result.port_cost)} / {grouped(result.monthly_saving)} per month")
        months = result.breakeven_range
        if months is not None:
            table.add_row("break-even range", f"{months[0]}-{months[1]} months",
                          "at the low and high effort; the verdict uses the likely one")
    console.print(table)
    style = {WORTH_A_PILOT: "bold green", NO_SAVINGS: "bold red"}.get(result.verdict, "bold yellow")
    horizon = plain(result.horizon_months)
    why = {
        WORTH_A_PILOT: f"pays back within the {horizon}-month horizon",
        NO_SAVINGS: "the bill after the port is not lower than today's",
    }.get(result.verdict, f"pays back after the {horizon}-month horizon")
    console.print(Text(f"verdict: {result.verdict}", style=style) + Text(f" ({why})"))
