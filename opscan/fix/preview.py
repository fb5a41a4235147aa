"""What `opscan fix` would rewrite, planned without writing: the `fixable` mark of a report's findings.

# NOTE [fixable is what fix fixes]
# "N fixable with `opscan fix`" (terminal, markdown, the pre-commit line, JSON `fixable` and
# `summary.fixable`) must be the number of findings `opscan fix` rewrites. The rules alone cannot
# say it: a rule's `autofix` covers a finding, but the codemod may still leave that site (a form it
# does not handle, no device to use, a replacement missing from the installed torch), and the
# bfloat16 choice is rewritten although its query is guarded -- once rewritten, it is the same
# guarded query, left. So the mark comes from the fixer itself: every file with a finding the
# fixer would try is planned exactly as `opscan fix --diff` plans it (`files._fix_file`, nothing
# written), and a finding is fixable when that plan rewrites it. Files with no such finding are
# never parsed with libcst; the cost is measured in docs/benchmarks.md ("fixable").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from opscan.records import Finding


def _key(finding: Finding) -> tuple:
    loc = finding.location
    return (finding.rule, loc.path, loc.cell, loc.line, loc.column)


def fixed_by_fix(root: Path, findings: Iterable[Finding], rules, probe=None, jobs: int = 1) -> set[tuple]:
    """Keys (rule, path, cell, line, column) of the findings `opscan fix` (safe fixes, the default)
    rewrites in the files under `root`, planned as `opscan fix --diff` plans them."""
    from opscan.fix import manifest as manifest_fix
    from opscan.fix.files import AnsweredProbe, lookups, run_jobs, fixable

    by_id = {r.id: r for r in rules}
    paths = sorted({f.location.path for f in findings if fixable(f, by_id) or manifest_fix.certain(f, by_id)})
    if not paths:
        return set()
    if probe is None:
        from opscan.scan.fixes import TorchProbe

        probe = TorchProbe()
    answered = AnsweredProbe(probe, lookups(rules))
    jobs_ = [(Path(root), rel, tuple(rules), False, False, answered) for rel in paths]
    return {_key(o.finding) for item in run_jobs(jobs_, jobs) for o in item.outcomes if o.status == "fixed"}


def mark(root: Path, findings: tuple[Finding, ...], rules, probe=None, jobs: int = 1) -> tuple[Finding, ...]:
    """`findings` with `fixable` set to whether `opscan fix` rewrites each (NOTE [fixable is what fix fixes])."""
    fixed = fixed_by_fix(root, findings, rules, probe, jobs)
    return tuple(f if f.fixable == (_key(f) in fixed) else replace(f, fixable=_key(f) in fixed) for f in findings)


class _NotChecked:
    """No torch to ask (`--no-fix-check`): every replacement is taken to exist, as `opscan fix` does without torch."""

    installed = False
    version = None

    def has(self, path: str) -> bool:
        return True


def mark_scanned(root: Path, findings: tuple[Finding, ...], config, options=None, *,
                 rules=None) -> tuple[Finding, ...]:
    """The scan's findings of `root` marked as `opscan fix` would rewrite them, under the same
    config (rules, selection) and the scan's options (`check_fixes`: ask the installed torch, from
    the scan cache's answers when it is on; `jobs`); `rules`: the RuleSet the scan ran (else
    loaded again from `config`)."""
    import os

    from opscan.scan.rules import load_rules
    from opscan.scan.workers import default_jobs

    if not findings:
        return findings
    if rules is None:
        rules = load_rules(extra_dirs=config.extra_rules, select=config.select, ignore=config.ignore)
    check = options is None or options.check_fixes
    probe = None if check else _NotChecked()
    cached = options is None or options.cache
    if check and cached and not os.environ.get("OPSCAN_NO_CACHE"):
        from opscan.scan.cache import default_cache_dir
        from opscan.scan.probe_cache import CachedProbe

        probe = CachedProbe(default_cache_dir(options.cache_dir if options is not None else None))
    jobs = default_jobs() if options is None or options.jobs is None else options.jobs
    marked = mark(root, findings, rules, probe, jobs)
    if probe is not None and hasattr(probe, "save"):
        probe.save()
    return marked
