"""Terminal report (rich): the sections in reading order, each from its own module.

Order (NOTE [the first screen] in top.py): the run (`opscan run` only: its answer leads), the
verdict, the top port tasks, what was not checked and the caveats' count; then the details: models
found (when none was configured), every port task with its sites, findings by file, ops and their
coverage, torch.compile (docs/compile.md), the caveats in full, the summary. A section module has
`section(report, console) -> None` and prints nothing when it has nothing to say.
"""

from __future__ import annotations

import importlib
import os
from typing import TextIO

from rich.console import Console

from opscan.records import Report

SECTIONS = ("run", "verdict", "top", "gaps", "models", "tasks", "findings", "ops", "compile", "caveats", "summary")


PIPED_WIDTH = 120   # NOTE [piped output]


def make_console(out: TextIO) -> Console:
    """A console on `out`: colour only when `out` is a terminal; otherwise (a file, a pipe, a CI
    log) the width of `COLUMNS` when set, else PIPED_WIDTH, and no trailing spaces.

    NOTE [piped output]: rich pads every table cell to its column, which leaves trailing spaces on
    most lines of a log; a file has no terminal width to follow, so the report takes `COLUMNS` (CI
    runners and `COLUMNS=200 opscan ... > report.txt` set it) or a width where the ops table's
    columns fit whole. What is written is stripped of trailing spaces line by line."""
    is_tty = hasattr(out, "isatty") and out.isatty()
    if is_tty:
        return Console(file=out, color_system="auto", highlight=False, soft_wrap=False)
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) >= 40 else PIPED_WIDTH
    return Console(file=StrippedLines(out), width=width, color_system=None, highlight=False, soft_wrap=False)


class StrippedLines:
    """A text stream that writes whole lines to `out` without their trailing spaces."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.pending = ""

    def write(self, text: str) -> int:
        lines = (self.pending + text).split("\n")
        self.pending = lines.pop()
        if lines:
            self.out.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.out.write(self.pending.rstrip(" "))
            self.pending = ""
        self.out.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return getattr(self.out, "encoding", None) or "utf-8"


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
    console.file.flush()
