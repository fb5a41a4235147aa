"""The workflow commands' settings from the project config ([tool.opscan.parity]), with their origin.

The config is loaded and checked by opscan.config (unknown keys, wrong types: one ConfigError).
A value counts as "from the config" only when the file sets it: ParityConfig's defaults are never
used, because a tolerance must be decided by someone, not inherited from a default.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from opscan.config import find_config
from opscan.config.checks import load_checked_config


@dataclass(frozen=True)
class ParitySettings:
    """The keys the project config sets in its parity table (None: not set there)."""

    tolerance: float | None = None
    rel_tolerance: float | None = None
    steps: tuple[int, ...] | None = None
    target_device: str | None = None
    fallback_command: str | None = None
    source: str = ""              # e.g. "pyproject.toml [tool.opscan.parity]"; "" without a file
    path: str | None = None       # the config file


def parity_settings(start: Path | None = None) -> ParitySettings:
    """Read the parity table of the config that applies to `start` (default: the current folder)."""
    start = Path.cwd() if start is None else Path(start)
    path, raw = find_config(start)
    if path is None:
        return ParitySettings()
    config = load_checked_config(start)   # checks every key; raises ConfigError
    table = raw.get("parity", {}) if isinstance(raw.get("parity"), dict) else {}
    parity = config.parity
    label = ("pyproject.toml [tool.opscan.parity]" if path.name == "pyproject.toml"
             else f"{path.name} [parity]")
    return ParitySettings(
        tolerance=parity.tolerance,
        rel_tolerance=parity.rel_tolerance,
        steps=parity.steps or None,
        target_device=parity.target_device if "target-device" in table else None,
        fallback_command=parity.fallback_command if "fallback-command" in table else None,
        source=label,
        path=str(path),
    )
