"""Golden-file comparison with an update switch: OPSCAN_UPDATE_GOLDEN=1 rewrites the files."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "reporters" / "golden"


def check(name: str, text: str, folder: Path = GOLDEN) -> None:
    """Assert `text` equals the golden file `name` (or write it when updating)."""
    path = folder / name
    if os.environ.get("OPSCAN_UPDATE_GOLDEN") == "1" or not path.exists():
        if not os.environ.get("OPSCAN_UPDATE_GOLDEN") == "1":
            raise AssertionError(f"golden file {path} missing: run with OPSCAN_UPDATE_GOLDEN=1")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{name} differs from its golden file (OPSCAN_UPDATE_GOLDEN=1 to accept)"
