"""Locates the data shipped with opscan: the built-in rules and the coverage database."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    """Return the folder `name` from the wheel (opscan/_data) or from a source checkout."""
    installed = _PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name


def rules_dir() -> Path:
    """The folder of built-in rule files (one YAML file per rule)."""
    return _data_dir("rules")


def coverage_db_dir() -> Path:
    """The folder of shipped coverage-database release files."""
    return _data_dir("coverage_db")
