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

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from opscan.fix import manifest as manifest_fix
from opscan.fix.codemods import handles_guarded
from opscan.fix.module import SiteOutcome, fix_module, manual_outcome
from opscan.fix.notebook import fix_notebook
from opscan.fsutil import UnreadableFile, atomic_write, read_source_bytes
from opscan.records import Finding

INPUT_RULES = ("parse-error", "unreadable-file")   # a file with these is never touched


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

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes())


def _has_fix(finding: Finding, rules: dict) -> bool:
    rule = rules.get(finding.rule)
    return rule is not None and rule.autofix is not None


def fixable(finding: Finding, rules: dict, unsafe: bool = False) -> bool:
    """Whether the finding's rule declares a rewrite for it (as the scan marks it; with `unsafe`,
    unsafe rewrites count too). Only files with such a finding are parsed with libcst."""
    rule = rules.get(finding.rule)
    if rule is None or rule.autofix is None:
        return False
    if finding.fixable or (unsafe and not finding.guarded and rule.autofix.covers(finding.subject)):
        return True
    return handles_guarded(rule.autofix.codemod, finding.subject)   # the bfloat16 choice (codemods.py)


class AnsweredProbe:
    """The torch lookups a fix may need, answered once in the parent (worker processes never import torch)."""

    def __init__(self, probe, names) -> None:
        self.installed = bool(probe.installed)
        self.answers = {name: probe.has(name) for name in sorted(names)} if self.installed else {}
        self.installed = bool(probe.installed)     # asking may find torch broken
        self.version = getattr(probe, "version", None)

    def has(self, path: str) -> bool:
        return self.answers.get(path, True)


def lookups(rules) -> set[str]:
    """Every torch name a codemod may check: the `replace` targets and the helpers codemods use."""
    from opscan.fix.codemods import LOOKUPS

    return {new for r in rules if r.autofix is not None for _, new in r.autofix.replace} | set(LOOKUPS)


def _fix_job(job: tuple) -> FileFix:
    root, rel, rules, unsafe, write, probe = job
    from opscan.scan.rules import RuleSet

    rules = RuleSet(rules)
    return _fix_file(root, rel, rules, {r.id: r for r in rules}, unsafe, write, probe)


def run_jobs(jobs: list[tuple], workers: int) -> list[FileFix]:
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


def fix_paths(targets, config_for, unsafe: bool = False, write: bool = True, probe=None,
              jobs: int | None = None) -> FixRun:
    """Fix the files under each target (a file or folder).

    Args:
        targets: paths given on the command line.
        config_for: target -> Config (the project config with command-line overrides applied).
        unsafe: also apply unsafe fixes.
        write: False for `--diff` (compute, never write).
        probe: torch lookup for replacements (default: the installed torch).
        jobs: worker processes for the files to rewrite (default: the CPUs; results are the same).
    """
    from opscan.pipeline.phases import scan
    from opscan.scan.fixes import TorchProbe
    from opscan.scan.rules import load_rules
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
        outcome = scan(target, config)
        run.findings += len(outcome.findings)
        run.notes.extend(outcome.notes)
        rules = load_rules(extra_dirs=config.extra_rules, select=config.select, ignore=config.ignore)
        by_id = {r.id: r for r in rules}
        by_path: dict[str, list[Finding]] = {}
        for finding in outcome.findings:
            by_path.setdefault(finding.location.path, []).append(finding)
        work: list[tuple] = []
        for rel, findings in sorted(by_path.items()):
            path = (root / rel).resolve()
            if path in seen:
                continue
            seen.add(path)
            if not any(fixable(f, by_id, unsafe) or manifest_fix.certain(f, by_id) for f in findings):
                run.files.append(FileFix(rel, str(root), outcomes=tuple(manual_outcome(f, by_id) for f in findings),
                                         skipped="no fixable finding"))
                continue
            work.append((root, rel, tuple(rules), unsafe, write, None))
        if work:
            answered = AnsweredProbe(probe, lookups(rules))
            for item in run_jobs([job[:-1] + (answered,) for job in work], jobs):
                if item.skipped and not item.outcomes:   # not even read: the scan's findings, with the reason
                    item = replace(item, outcomes=tuple(
                        SiteOutcome(f, "left", f"file not touched: {item.skipped}", "file-skipped")
                        if _has_fix(f, by_id) else manual_outcome(f, by_id) for f in by_path[item.path]))
                run.files.append(item)
    run.files.sort(key=lambda f: (f.root, f.path))
    run.seconds = time.perf_counter() - started
    return run


def _fix_file(root: Path, rel: str, rules, by_id: dict, unsafe: bool, write: bool, probe) -> FileFix:
    from opscan.scan.engine import scan_source

    path = root / rel
    if path.is_symlink():
        return FileFix(rel, str(root), skipped="a symlink: not written through")
    try:
        before = read_source_bytes(path, root)
    except (UnreadableFile, OSError) as exc:
        return FileFix(rel, str(root), skipped=f"cannot read: {getattr(exc, 'reason', exc)}")
    from opscan.scan.files import manifest_kind

    scanned = scan_source(rel, before, rules)
    findings = list(scanned.findings)
    if manifest_kind(rel) and manifest_kind(rel) != "setup-py":   # text edits of exact lines (fix/manifest.py)
        if any(by_id.get(f.rule) is not None and by_id[f.rule].name in INPUT_RULES for f in findings):
            return FileFix(rel, str(root), before, before, tuple(manual_outcome(f, by_id) for f in findings),
                           skipped="the manifest could not be read")
        after, outcomes = manifest_fix.fix_manifest(before, findings, by_id)
        return _write(path, rel, root, before, after, outcomes, write)
    broken = [f for f in findings if by_id.get(f.rule) is not None and by_id[f.rule].name in INPUT_RULES]
    if broken:
        return FileFix(rel, str(root), before, before, tuple(
            SiteOutcome(f, "left", f"file not touched: {broken[0].message}", "file-skipped") if _has_fix(f, by_id)
            else manual_outcome(f, by_id) for f in findings), skipped=f"{broken[0].message}")
    try:
        if rel.endswith(".ipynb"):
            result = _on_big_stack(fix_notebook, before, findings, by_id, unsafe, probe)
        else:
            result = _on_big_stack(fix_module, before, findings, by_id, unsafe, probe, bindings=scanned.facts.bindings)
    except (RecursionError, MemoryError) as exc:   # nested too deeply for libcst: this file only is left
        why = f"file not touched: too deeply nested for the fixer ({type(exc).__name__})"
        return FileFix(rel, str(root), before, before, tuple(
            SiteOutcome(f, "left", why, "file-skipped") if _has_fix(f, by_id) else manual_outcome(f, by_id)
            for f in findings), skipped=why)
    after = result.text if isinstance(result.text, bytes) else result.text.encode("utf-8")
    return _write(path, rel, root, before, after, result.outcomes, write)


FIX_STACK = 512 << 20   # bytes of C stack for one file's rewrite (NOTE [deep nesting and libcst])


# NOTE [deep nesting and libcst]
# libcst's native parser recurses once per operand of a long `a and b and ...` chain (stdlib ast
# keeps it flat): at 10,000 operands it overflows the main thread's 8 MB C stack, a segmentation
# fault that would end `opscan fix` and, through the fixable mark, `opscan PATH` itself. A file
# is therefore rewritten on a thread with a FIX_STACK stack, where that parse succeeds, and the
# RecursionError its Python visitors then raise (from about 1,000 levels) leaves that file alone
# ("too deeply nested for the fixer"); the other files are fixed (tests/fix/test_fix_cli.py).
def _on_big_stack(fn, *args, **kwargs):
    """`fn(*args, **kwargs)` on a thread with a FIX_STACK stack; its exception is raised here."""
    import threading

    result: list = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fn(*args, **kwargs))
        except BaseException as exc:   # noqa: BLE001 - handed to the caller's thread, raised there
            error.append(exc)

    previous = threading.stack_size(FIX_STACK)
    try:
        thread = threading.Thread(target=run, name="opscan-fix")
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    if error:
        raise error[0]
    return result[0]


def _write(path: Path, rel: str, root: Path, before: bytes, after: bytes, outcomes, write: bool) -> FileFix:
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
            SiteOutcome(o.finding, "left", "the file changed on disk while it was being fixed: not overwritten",
                        "file-skipped")
            if o.status == "fixed" else o for o in outcomes), skipped="changed on disk during the fix")
    try:
        atomic_write(path, after)
    except OSError as exc:
        return FileFix(rel, str(root), before, before, outcomes, skipped=f"cannot write: {exc.strerror or exc}")
    return FileFix(rel, str(root), before, after, outcomes, written=True)
