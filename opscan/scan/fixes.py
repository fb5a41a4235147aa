"""Checks that a suggested replacement exists in the user's installed torch (only when torch is there).

Rules name what a fix relies on (`requires: [torch.accelerator.synchronize]`). After a scan, the
distinct requirements of the fixes that fired are looked up once: torch is imported lazily, only
if it is installed and some fired fix needs it. A missing attribute turns the fix into a plain
statement that the replacement is not available in that torch, rather than a suggestion that
would not run. Without torch nothing is checked and the run says so in its notes.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import replace
from typing import Any

from opscan.records import Finding


class TorchProbe:
    """Looks up dotted attribute paths in the installed torch, caching the answers."""

    def __init__(self) -> None:
        self._known: dict[str, bool] = {}
        self._torch: Any = None
        self.version: str | None = None
        self.installed = importlib.util.find_spec("torch") is not None

    def has(self, path: str) -> bool:
        if path not in self._known:
            self._known[path] = self._lookup(path)
        return self._known[path]

    def _lookup(self, path: str) -> bool:
        if path.split(".", 1)[0] != "torch":
            # Importing is running code: only torch's own modules are ever imported here, whatever a
            # (possibly untrusted, repository-provided) rule file names in `requires`.
            return False
        if self._torch is None:
            try:
                self._torch = importlib.import_module("torch")
            except Exception:  # noqa: BLE001 - a broken torch install is reported as "not checked"
                self.installed = False
                return True
            self.version = str(getattr(self._torch, "__version__", "?")).split("+")[0]
        parts = path.split(".")
        obj = None
        for i in range(len(parts), 0, -1):  # longest importable module prefix, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except Exception:  # noqa: BLE001
                continue
            for attr in parts[i:]:
                if not hasattr(obj, attr):
                    return False
                obj = getattr(obj, attr)
            return True
        return False


def check_fixes(findings: list[Finding], requires: list[tuple[str, ...]],
                probe: TorchProbe | None = None) -> tuple[list[Finding], list[str]]:
    """Rewrite the fixes whose replacements are missing from the installed torch.

    Args:
        findings: the run's findings.
        requires: for each finding, the dotted torch attributes its fix suggests.
        probe: the torch lookup (default: the installed torch).
    Returns:
        The findings (some with rewritten fixes) and notes for the report.
    """
    needed = sorted({r for reqs in requires for r in reqs})
    if not needed:
        return findings, []
    probe = probe or TorchProbe()
    if not probe.installed:
        return findings, ["suggested replacements were not checked: torch is not installed here"]
    missing = {r for r in needed if not probe.has(r)}
    if not probe.installed:
        return findings, ["suggested replacements were not checked: torch could not be imported"]
    out = []
    for finding, reqs in zip(findings, requires):
        gone = [r for r in reqs if r in missing]
        if gone:
            names = ", ".join(f"`{g}`" for g in gone)
            fix = (f"No replacement available in your installed torch {probe.version}: the suggested "
                   f"fix needs {names}, which it does not have. Upgrade torch, or keep this call behind a "
                   f"`dev.type == \"cuda\"` guard. (Suggested for newer torch: {finding.fix})")
            finding = replace(finding, fix=fix)
        out.append(finding)
    notes = [f"suggested replacements checked against the installed torch {probe.version}"]
    if missing:
        notes.append(f"not in the installed torch {probe.version}: {', '.join(sorted(missing))}")
    return out, notes
