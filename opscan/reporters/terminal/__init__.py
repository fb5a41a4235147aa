"""Terminal report (rich): the sections in reading order, each from its own module.

Order: the run (`opscan run` only: its answer leads), verdict, models found (when none was configured), port tasks, findings by file, ops and their coverage, summary. A section module has
`section(report, console) -> None` and prints nothing when it has nothing to say.
"""

from __future__ import annotations

import importlib
from typing import TextIO

from rich.console import Console

from opscan.records import Report

SECTIONS = ("run", "verdict", "models", "tasks", "findings", "ops", "summary")


def make_console(out: TextIO) -> Console:
    """A console on `out`: colour only when `out` is a terminal; fixed width otherwise."""
    is_tty = hasattr(out, "isatty") and out.isatty()
    return Console(file=out, width=None if is_tty else 100, color_system="auto" if is_tty else None,
                   highlight=False, soft_wrap=False)


def render(report: Report, out: TextIO, console: Console | None = None) -> None:
    """Print every section of `report` that has something to say."""
    console = console or make_console(out)
    for name in SECTIONS:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue
            raise
        module.section(report, console)
