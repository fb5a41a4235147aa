"""A run's enrichment of each file's scan result (the fixable mark), applied per file where the file
was scanned, and failing per file into one note.

# NOTE [enrichments]
# An enrichment adds to a file's findings what the scan alone cannot say (today: whether `opscan
# fix` rewrites each, fix/preview.py `FixableMark`). It runs in the scan's own per-file work
# (scan/workers.py), right after `scan_source`, on the same bytes, in the same worker process,
# and its result is cached with the file's (the engine salts the cache with its `fingerprint()`),
# so a warm run does none of it. `prepare(pooled)` runs once in the parent before any file is read
# (a warm run never calls it): what workers must not do themselves (import torch) happens there,
# and, when worker processes are about to be forked (`pooled`), what each would do alike (import
# libcst) is done once for all of them.
# It never changes what the scan found: an enrichment that raises on one file leaves that file's
# findings as the scan gave them (`marked=True`, nothing marked) with one note,
# "WHAT not computed for FILE: reason"; the findings, verdict, gate and exit code are the scan's.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any, Protocol


class Enrichment(Protocol):
    """What the engine asks of an enrichment (fix/preview.py FixableMark is the one there is)."""

    what: str   # the note's word: "fixable not computed for FILE: reason"

    def fingerprint(self) -> str: ...

    def prepare(self, pooled: bool = False) -> None: ...

    def __call__(self, relpath: str, data: bytes, result: Any, rules: Any, tree: ast.Module | None = None) -> Any: ...


def enriched(relpath: str, data: bytes, result: Any, rules: Any, enrich: Enrichment | None,
             tree: ast.Module | None = None) -> Any:
    """`result` (a FileResult of `data`) as `enrich` completes it; `tree`: the scan's parse of a
    Python file's decoded text (newlines made `\n`), None when the scan did not parse it. A file
    without findings is left as it is, and an enrichment that raises gives the result unmarked with
    one note (NOTE [enrichments])."""
    if enrich is None or not result.findings:
        return result
    try:
        return enrich(relpath, data, result, rules, tree)
    except Exception as exc:  # noqa: BLE001 - NOTE [enrichments]: one file's annotation, never the scan
        unmarked = tuple(replace(f, fixable=False) if f.fixable else f for f in result.findings)
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        return replace(result, findings=unmarked, marked=True,
                       notes=result.notes + (f"{enrich.what} not computed for {result.path}: {reason}",))
