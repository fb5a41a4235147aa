"""Reads an `opscan PATH --format json` report given to a workflow command (preflight, payback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opscan.errors import InputError


def load_report(path: str | Path) -> Any:
    """The parsed JSON document at `path`; a missing, unreadable or invalid file is an InputError.

    Callers check the parts they need, since each reads a different part of the report.
    """
    name = str(path)
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("report not found", name) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read report: {exc}", name) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", name, exc.lineno) from None
