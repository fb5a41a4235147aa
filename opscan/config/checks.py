"""The checks of a configuration that need the coverage database or the rules (docs/config.md).

opscan/config/load.py reads `[tool.opscan]` and checks what the file alone says (keys, types, values,
paths); it imports neither the database nor the scan. The callers that load a configuration pass
`CHECKS` (or call `load_checked_config`), so a `backend` that names no release and a `select` /
`ignore` entry that names no rule are reported with the file's other problems, in one run.
Neither check imports torch (the pre-commit hook runs them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opscan.config.load import Check, Config, load_config


def backend_problem(spec: str, db: Path | None = None) -> str:
    """Why `spec` names no release of the coverage database (`db`: the configured one), or "".

    Read without checking the release files against the installed torch, so a source-only run
    (the pre-commit hook) checks its `backend` without importing torch.
    """
    from opscan.db.shipped import spec_problem

    return spec_problem(spec, db)


def check_backend(values: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """`backend` names a release of the configured database (not checked when `db` does not exist:
    that is the file's own problem)."""
    db = values.get("db")
    if not values.get("backend") or (db is not None and not db.exists()):
        return
    problem = backend_problem(values["backend"], db)
    if problem:
        yield "backend", problem


def check_selectors(values: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """`select` / `ignore` entries name rules, built-in or from extra-rules; a rule file of
    extra-rules that does not load is one more problem."""
    if not (values.get("select") or values.get("ignore")):
        return
    from opscan.errors import OpscanError
    from opscan.scan.rules import load_rules, unknown_selectors

    try:
        rules = load_rules(extra_dirs=values.get("extra_rules", ()))
    except OpscanError as exc:
        yield "extra-rules", str(exc)
        return
    for key in ("select", "ignore"):
        for problem in unknown_selectors(rules, values.get(key, ())):
            yield key, problem


CHECKS: tuple[Check, ...] = (check_backend, check_selectors)


def load_checked_config(start: Path, tolerant: bool = False) -> Config:
    """`load_config(start)` with CHECKS: the configuration every command runs with. `tolerant`:
    opscan's own config file that cannot be read is reported, not raised (the commands that report
    findings; NOTE [unreadable config files] in opscan/config/load.py)."""
    return load_config(start, CHECKS, tolerant)
