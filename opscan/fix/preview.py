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
# (`FixableMark` is the scan's enrichment, scan/enrichment.py NOTE [enrichments]): the same bytes
# the scan read, its findings, import bindings and tree, in the same worker process, on the file
# elided to what the codemods read (NOTE [planning on an elided module] in fix/elision.py). The
# plan asks no torch: a rewrite that relies on a torch name (`torch.accelerator.synchronize`)
# says so (`SiteOutcome.needs`), the marked result keeps those names (`FileResult.fix_needs`) in
# the scan's content-keyed cache, under a salt that covers the fixer's code and size bound, and
# each run unmarks a finding whose name the installed torch lacks, asking the scan's probe
# (scan/probe_cache.py: the answers are remembered per torch install, so no run imports torch for
# them twice). That is what `opscan fix` does with the same torch: it leaves that site
# ("missing-in-torch"). So a warm scan plans nothing, whatever torch is installed. libcst is
# loaded only for a file the fixer would try, never for one over the fixer's size bound (NOTE
# [the fixer's size bound] in fix/file_plan.py). A plan that raises costs
# its file's mark only: one note "fixable not computed for FILE: reason", the findings unmarked,
# and the scan's findings, verdict, gate and exit code unchanged.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path
from typing import Any

from opscan.fix import file_plan
from opscan.fix.file_plan import too_large
from opscan.fix.scope import would_try
from opscan.records import Finding
from opscan.fix.reasons import FixStatus


def _key(finding: Finding) -> tuple[str, str, int | None, int, int]:
    loc = finding.location
    return (finding.rule, loc.path, loc.cell, loc.line, loc.column)


class AllPresent:
    """A torch with every replacement: what the mark plans with (each rewrite keeps the names it
    relies on), as `opscan fix` plans without torch."""

    installed = False
    version: str | None = None

    def has(self, path: str) -> bool:
        return True


class FixableMark:
    """The scan's per-file enrichment that sets `Finding.fixable` from the fixer's own plan
    (NOTE [fixable is what fix fixes]). Called by the scan's workers as
    `mark(relpath, data, result, rules, tree) -> result`. The plan asks no torch: each finding
    fixed carries the torch names its rewrite relies on (`FileResult.fix_needs`), and the scan
    unmarks it when the installed torch lacks one (scan/collect.py `collect`), so a cached mark
    holds for any torch."""

    what = "fixable"        # the note's word: "fixable not computed for FILE: reason"

    def __init__(self) -> None:
        self.plans = 0      # files planned by this process (benchmarks and tests count them)

    def fingerprint(self) -> str:
        """What a cached mark depends on besides the file and the rules: the fixer's code and its
        size bound (not torch: NOTE [fixable is what fix fixes])."""
        from opscan.scan.cache import files_fingerprint, fingerprint

        here = Path(__file__).resolve().parent
        return fingerprint("fixable", files_fingerprint(here.glob("*.py")), str(file_plan.MAX_FIX_BYTES))

    def prepare(self, pooled: bool = False) -> None:
        """Before worker processes are forked (`pooled`), load the fixer once for all of them."""
        if pooled:
            import opscan.fix.module  # noqa: F401 - libcst and the codemods, inherited by the forked workers

    def __call__(self, relpath: str, data: bytes, result: Any, rules: Any, tree: ast.Module | None = None) -> Any:
        """`result` (a scan/results.py FileResult of `data`) with each finding's `fixable` set to
        whether `opscan fix` rewrites it, with torch's every replacement taken to exist, and the
        torch names each rewrite relies on in `fix_needs`; `tree`: the scan's parse of the file,
        which the plan reuses (NOTE [planning on an elided module] in fix/elision.py). Raises what
        the plan raises (the engine makes it a note)."""
        by_id = {r.id: r for r in rules}
        findings = result.findings
        unmarked = tuple(replace(f, fixable=False) if f.fixable else f for f in findings)
        if not would_try(findings, by_id):
            return replace(result, findings=unmarked, marked=True, fix_needs=())
        large = too_large(len(data))
        if large:
            return replace(result, findings=unmarked, marked=True, fix_needs=(),
                           notes=result.notes + (f"{result.path}: {large}: `opscan fix` leaves it, and nothing "
                                                 "in it is marked fixable",))
        self.plans += 1
        plan = file_plan.plan_file(relpath, data, list(findings), by_id, probe=AllPresent(),
                                   bindings=result.facts.bindings, outcomes_only=True, tree=tree)
        fixed = {_key(o.finding): o.needs for o in plan.outcomes if o.status is FixStatus.FIXED}
        marked = tuple(f if f.fixable == (_key(f) in fixed) else replace(f, fixable=_key(f) in fixed)
                       for f in findings)
        needs = tuple(fixed.get(_key(f), ()) for f in findings)
        return replace(result, findings=marked, marked=True, fix_needs=needs if any(needs) else ())
