"""Project configuration: `[tool.opscan]` / `opscan.toml` read and checked (docs/config.md).

load.py reads the file and checks what it alone says; checks.py holds the checks that need the
coverage database or the rules, which every command passes (`load_checked_config`). The public
names of both are re-exported here: `from opscan.config import Config, load_checked_config`.
"""

from __future__ import annotations

from opscan.config.checks import CHECKS, backend_problem, check_backend, check_selectors, load_checked_config
from opscan.config.load import (DEFAULT_BACKEND, FAIL_ON, MODES, Check, Config, CostConfig, ModelConfig, ParityConfig,
                                find_config, load_config, parse_fail_on, parse_table)

__all__ = [
    "CHECKS", "DEFAULT_BACKEND", "FAIL_ON", "MODES", "Check", "Config", "CostConfig", "ModelConfig", "ParityConfig",
    "backend_problem", "check_backend", "check_selectors", "find_config", "load_checked_config", "load_config",
    "parse_fail_on", "parse_table",
]
