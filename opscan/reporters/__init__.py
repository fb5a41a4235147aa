"""Reporters: one output format per module; each reads a finished Report and nothing else.

REPORTERS maps a `--format` value to the module that renders it; each module has
`render(report, out: TextIO) -> None`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:   # the command line reads REPORTERS (--format) before any report exists
    from opscan.records import Report

REPORTERS: dict[str, str] = {
    "terminal": "opscan.reporters.terminal",
    "json": "opscan.reporters.json",
    "sarif": "opscan.reporters.sarif",
    "github": "opscan.reporters.github",
    "markdown": "opscan.reporters.markdown",
    "dot": "opscan.reporters.dot",
}


def render(fmt: str, report: Report, out: TextIO) -> None:
    """Render `report` in format `fmt` to `out`."""
    importlib.import_module(REPORTERS[fmt]).render(report, out)
