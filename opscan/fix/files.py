"""Runs `opscan fix` over files: the scan picks the files, each is re-read, fixed and written safely.

# NOTE [fix writes]
# 1. The scan (`opscan.pipeline.phases.scan`, the same config, file selection and rule selection as
#    `opscan PATH`) finds the files that have a fixable finding; nothing else is read again.
# 2. Each such file is read once (bytes B) and scanned again from B (`scan_source`, pure), so the
#    positions the codemods use are those of exactly the bytes being rewritten.
# 3. Files with a parse error or that cannot be read (OPS000/OPS001), and symlinks, are skipped.
# 4. Before writing, the file is read again: if it is no longer B (an editor saved it meanwhile),
#    it is not overwritten. The write itself is atomic (fsutil.atomic_write): old or new, never half.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

from opscan.fix.file_plan import INPUT_RULES, AnsweredProbe, Probe, has_fix, plan_file
from opscan.fix.module import SiteOutcome, manual_outcome
from opscan.fix.reasons import FixStatus
from opscan.fix.scope import fixable, lookups, would_try
from opscan.fsutil import UnreadableFile, atomic_write, read_source_bytes
from opscan.records import Finding
from opscan.scan.rule_records import Rule

if TYPE_CHECKING:
    from opscan.config import Config
    from opscan.scan.rules import RuleSet

# one file's work in a worker: (root, path relative to it, rules, unsafe, write, torch answers)
FixJob = tuple[Path, str, tuple[Rule, ...], bool, bool, "Probe | None"]

__all__ = ["INPUT_RULES", "AnsweredProbe", "FileFix", "FixRun", "fix_paths", "fixable", "lookups", "run_jobs"]


@dataclass(frozen=True)
class FileFix:
    """One file `opscan fix` looked at."""

    path: str                               # relative to its root, `/` separators
    root: str
    before: bytes = b""
    after: bytes = b""
    outcomes: tuple[SiteOutcome, ...] = ()
    skipped: str = ""                       # why the file was not touched ("" when it was fixed)
    written: bool = False
    failed: str = ""                        # the fixer raised on this file (an opscan bug): what it raised

    @property
    def changed(self) -> bool:
        return self.after != self.before and not self.skipped


@dataclass
class FixRun:
    """Every file of one `opscan fix` run and the scan's findings left elsewhere."""

    files: list[FileFix] = field(default_factory=list)
    findings: int = 0                        # findings of the scan (all files)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def outcomes(self) -> list[SiteOutcome]:
        return [o for f in self.files for o in f.outcomes]

    def count(self, status: FixStatus) -> int:
        return sum(o.status == status for o in self.outcomes())


def _fix_job(job: FixJob) -> FileFix:
    root, rel, rules, unsafe, write, probe = job
    from opscan.scan.rules import RuleSet

    ruleset = RuleSet(rules)
    by_id = {r.id: r for r in ruleset}
    try:
        return _fix_file(root, rel, ruleset, by_id, unsafe, write, probe)
    except Exception as exc:  # noqa: BLE001 - NOTE [one file's failure]: this file only is left
        why = f"{type(exc).__name__}: {exc}"
        return FileFix(rel, str(root), failed=why,
                       skipped=f"the fixer failed on this file (an opscan bug: please report it): {why}")


# NOTE [one file's failure]
# A codemod that raises on one file is a bug of opscan, and it costs that file only: the file is
# left unchanged, its findings are reported as left ("file not touched: the fixer failed on this
# file ..."), `FileFix.failed` says what was raised (`opscan fix` prints it on stderr as an
# internal error, which the crash guard, tools/crash_guard.py, fails on), and every other file is
# fixed. The scan's fixable mark catches the same failure per file into one note (fix/preview.py).


def run_jobs(jobs: list[FixJob], workers: int) -> list[FileFix]:
    """The per-file fixes, in `workers` processes when there are enough files to pay for starting
    them (POOL_MIN_FILES, as the scan; results in order)."""
    from opscan.scan.workers import POOL_MIN_FILES

    if workers <= 1 or len(jobs) < POOL_MIN_FILES:
        return [_fix_job(job) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)),
                             mp_context=multiprocessing.get_context(method)) as pool:
        return list(pool.map(_fix_job, jobs))


def fix_paths(targets: Iterable[str | os.PathLike[str]], config_for: Callable[[Path], Config], unsafe: bool = False,
              write: bool = True, probe: Probe | None = None, jobs: int | None = None) -> FixRun:
    """Fix the files under each target (a file or folder).

    Args:
        targets: paths given on the command line.
        config_for: target -> Config (the project config with command-line overrides applied).
        unsafe: also apply unsafe fixes.
        write: False for `--diff` (compute, never write).
        probe: torch lookup for replacements (default: the installed torch).
        jobs: worker processes for the files to rewrite (default: the CPUs; results are the same).
    """
    from opscan.pipeline.options import ScanOptions
    from opscan.pipeline.phases import scan
    from opscan.scan.fixes import TorchProbe
    from opscan.scan.workers import default_jobs

    started = time.perf_counter()
    probe = probe or TorchProbe()
    jobs = default_jobs() if jobs is None else jobs
    run = FixRun()
    seen: set[Path] = set()
    for target in targets:
        target = Path(target).resolve()
        config = config_for(target)
        root = target if target.is_dir() else target.parent
        outcome = scan(target, config, ScanOptions(mark_fixable=False))   # this run plans every file itself
        run.findings += len(outcome.findings)
        run.notes.extend(outcome.notes)
        rules = cast("RuleSet", outcome.ruleset)   # the rules the scan step loaded and ran (not loaded again)
        by_id = {r.id: r for r in rules}
        by_path: dict[str, list[Finding]] = {}
        for finding in outcome.findings:
            by_path.setdefault(finding.location.path, []).append(finding)
        work: list[FixJob] = []
        for rel, findings in sorted(by_path.items()):
            path = (root / rel).resolve()
            if path in seen:
                continue
            seen.add(path)
            if not would_try(findings, by_id, unsafe):
                run.files.append(FileFix(rel, str(root), outcomes=tuple(manual_outcome(f, by_id) for f in findings),
                                         skipped="no fixable finding"))
                continue
            work.append((root, rel, tuple(rules), unsafe, write, None))
        if work:
            answered = AnsweredProbe(probe, lookups(rules))
            for item in run_jobs([(*job[:5], answered) for job in work], jobs):
                if item.skipped and not item.outcomes:   # not even read: the scan's findings, with the reason
                    item = replace(item, outcomes=tuple(
                        SiteOutcome(f, FixStatus.LEFT, f"file not touched: {item.skipped}", "file-skipped")
                        if has_fix(f, by_id) else manual_outcome(f, by_id) for f in by_path[item.path]))
                run.files.append(item)
    run.files.sort(key=lambda f: (f.root, f.path))
    run.seconds = time.perf_counter() - started
    return run


def _fix_file(root: Path, rel: str, rules: RuleSet, by_id: dict[str, Rule], unsafe: bool, write: bool,
              probe: Probe | None) -> FileFix:
    from opscan.fix.file_plan import too_large
    from opscan.scan.file_scan import scan_source

    path = root / rel
    if path.is_symlink():
        return FileFix(rel, str(root), skipped="a symlink: not written through")
    try:
        size = path.stat().st_size
    except OSError as exc:
        return FileFix(rel, str(root), skipped=f"cannot read: {exc.strerror or exc}")
    if too_large(size):   # NOTE [the fixer's size bound]: not even read again
        return FileFix(rel, str(root), skipped=too_large(size))
    try:
        before = read_source_bytes(path, root)
    except (UnreadableFile, OSError) as exc:
        return FileFix(rel, str(root), skipped=f"cannot read: {getattr(exc, 'reason', exc)}")
    scanned = scan_source(rel, before, rules)
    plan = plan_file(rel, before, list(scanned.findings), by_id, unsafe=unsafe, probe=probe,
                     bindings=scanned.facts.bindings)
    if plan.skipped:
        return FileFix(rel, str(root), before, before, plan.outcomes, skipped=plan.skipped)
    return _write(path, rel, root, before, plan.after, plan.outcomes, write)


def _write(path: Path, rel: str, root: Path, before: bytes, after: bytes, outcomes: tuple[SiteOutcome, ...],
           write: bool) -> FileFix:
    """Write `after` over `before` atomically, unless the file changed on disk meanwhile (NOTE [fix writes])."""
    fixed = FileFix(rel, str(root), before, after, outcomes)
    if not write or after == before:
        return fixed
    try:
        current = read_source_bytes(path, root)
    except (UnreadableFile, OSError):
        current = None
    if current != before:
        return FileFix(rel, str(root), before, before, tuple(
            SiteOutcome(o.finding, FixStatus.LEFT, "the file changed on disk while it was being fixed: not overwritten",
                        "file-skipped")
            if o.status is FixStatus.FIXED else o for o in outcomes), skipped="changed on disk during the fix")
    try:
        atomic_write(path, after)
    except OSError as exc:
        return FileFix(rel, str(root), before, before, outcomes, skipped=f"cannot write: {exc.strerror or exc}")
    return FileFix(rel, str(root), before, after, outcomes, written=True)
