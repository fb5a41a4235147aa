"""What `opscan fix` would rewrite, planned without writing: the `fixable` mark of the scan's findings.

# NOTE [fixable is what fix fixes]
# "N fixable with `opscan fix`" (terminal, markdown, the pre-commit line, JSON `fixable` and
# `summary.fixable`) must be the number of findings `opscan fix` rewrites. The rules alone cannot
# say it: a rule's `autofix` covers a finding, but the codemod may still leave that site (a form it
# does not handle, no device to use, a replacement missing from the installed torch), and the
# bfloat16 choice is rewritten although its query is guarded -- once rewritten, it is the same
# guarded query, left. So the mark comes from the fixer itself: a file with a finding the fixer
# would try (fix/scope.py `would_try`) is planned exactly as `opscan fix --diff` plans it
# (fix/file_plan.py `plan_file`, nothing written), and a finding is fixable when that plan
# rewrites it.
#
# One pass per file (issue 40): the plan is made in the scan's own per-file work
# (`FixableMark` is the scan's enrichment, scan/engine.py NOTE [enrichments]): the same bytes the
# scan read, its findings and import bindings, in the same worker process. The marked result is
# kept in the scan's content-keyed cache, under a salt that covers what a plan depends on besides
# the file (the fixer's code, the installed torch the codemods ask, the size bound), so a warm scan
# plans nothing. libcst is loaded only for a file the fixer would try, never for one over the
# fixer's size bound (NOTE [the fixer's size bound] in fix/file_plan.py). A plan that raises costs
# its file's mark only: one note "fixable not computed for FILE: reason", the findings unmarked,
# and the scan's findings, verdict, gate and exit code unchanged.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from opscan.fix import file_plan
from opscan.fix.file_plan import AnsweredProbe, Probe, too_large
from opscan.fix.scope import lookups, would_try
from opscan.records import Finding


def _key(finding: Finding) -> tuple[str, str, int | None, int, int]:
    loc = finding.location
    return (finding.rule, loc.path, loc.cell, loc.line, loc.column)


class NotChecked:
    """No torch to ask (`--no-fix-check`): every replacement is taken to exist, as `opscan fix` does
    without torch."""

    installed = False
    version: str | None = None

    def has(self, path: str) -> bool:
        return True


class FixableMark:
    """The scan's per-file enrichment that sets `Finding.fixable` from the fixer's own plan
    (NOTE [fixable is what fix fixes]). Called by the scan's workers as
    `mark(relpath, data, result, rules) -> result`; picklable once `prepare()` has run."""

    what = "fixable"        # the note's word: "fixable not computed for FILE: reason"

    def __init__(self, rules: Iterable[Any], probe: Probe, identity: str) -> None:
        """`probe`: what the codemods ask of the installed torch (asked once, in `prepare`);
        `identity`: what its answers depend on (scan/probe_cache.py `torch_identity`, or the
        reason nothing is asked), part of the cache salt."""
        self._probe: Probe | None = probe
        self._names = sorted(lookups(rules))
        self._answers: AnsweredProbe | None = None
        self.identity = identity
        self.plans = 0      # files planned by this process (benchmarks and tests count them)

    def fingerprint(self) -> str:
        """What a cached mark depends on besides the file and the rules: the fixer's code, the torch
        it asks, the size bound."""
        from opscan.scan.cache import files_fingerprint, fingerprint

        here = Path(__file__).resolve().parent
        return fingerprint("fixable", files_fingerprint(here.glob("*.py")), self.identity, str(file_plan.MAX_FIX_BYTES))

    def prepare(self, pooled: bool = False) -> None:
        """Ask the probe its questions (in the parent, before any worker starts: workers never import
        torch); before workers are forked (`pooled`), load the fixer once for all of them."""
        if self._answers is None:
            assert self._probe is not None
            self._answers = AnsweredProbe(self._probe, self._names)
        if pooled:
            import opscan.fix.module  # noqa: F401 - libcst and the codemods, inherited by the forked workers

    def __getstate__(self) -> dict[str, Any]:
        self.prepare()
        return {**self.__dict__, "_probe": None}

    def __call__(self, relpath: str, data: bytes, result: Any, rules: Any, tree: ast.Module | None = None) -> Any:
        """`result` (a scan/engine.py FileResult of `data`) with each finding's `fixable` set to
        whether `opscan fix` rewrites it; `tree`: the scan's parse of the file, which the plan reuses
        (NOTE [planning on an elided module] in fix/elision.py). Raises what the plan raises (the
        engine makes it a note)."""
        by_id = {r.id: r for r in rules}
        findings = result.findings
        unmarked = tuple(replace(f, fixable=False) if f.fixable else f for f in findings)
        if not would_try(findings, by_id):
            return replace(result, findings=unmarked, marked=True)
        large = too_large(len(data))
        if large:
            return replace(result, findings=unmarked, marked=True,
                           notes=result.notes + (f"fixable not computed for {result.path}: {large}",))
        self.prepare()
        self.plans += 1
        plan = file_plan.plan_file(relpath, data, list(findings), by_id, probe=self._answers,
                                   bindings=result.facts.bindings, outcomes_only=True, tree=tree)
        fixed = {_key(o.finding) for o in plan.outcomes if o.status == "fixed"}
        marked = tuple(f if f.fixable == (_key(f) in fixed) else replace(f, fixable=_key(f) in fixed)
                       for f in findings)
        return replace(result, findings=marked, marked=True)
