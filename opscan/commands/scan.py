"""`opscan scan`: find where the source pins itself to CUDA (reads source only, never runs it)."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from opscan import __version__
from opscan.errors import InputError, UsageError
from opscan.model import SEVERITIES, Finding, Report, RuleInfo

HELP = "find where the source pins itself to CUDA (static; never imports or runs the code)"

FORMATS = ("terminal", "json")
FAIL_ON = ("error", "warning", "note", "never")
_RANK = {name: i for i, name in enumerate(SEVERITIES)}   # error 0, warning 1, note 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or folders to scan (default: the current folder)")
    parser.add_argument("--root", metavar="DIR",
                        help="folder that reported paths are relative to (default: PATH when it is "
                             "the only one and a folder, else the current folder)")
    parser.add_argument("--format", choices=FORMATS, default="terminal", help="output format (default: terminal)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--fail-on", choices=FAIL_ON, default="error",
                        help="exit 1 when a finding of this severity or worse is found (default: error)")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip files or folders matching GLOB (repeatable), on top of the defaults")
    parser.add_argument("--select", action="append", default=[], metavar="CODE",
                        help="only these rules: codes, code prefixes (OPS2), names or categories (repeatable)")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODE",
                        help="drop these rules (same forms as --select; repeatable)")
    parser.add_argument("--rules", action="append", default=[], metavar="DIR",
                        help="also load the rule files (*.yaml) in DIR (repeatable)")
    parser.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                        help="worker processes (default: the number of CPUs; results are the same for any N)")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the scan cache (see docs/benchmarks.md, 'Cache')")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="where to keep the scan cache (default: $OPSCAN_CACHE_DIR, else "
                             "~/.cache/opscan; never a folder an untrusted change can write)")
    parser.add_argument("--no-fix-check", action="store_true",
                        help="do not check suggested replacements against the installed torch")
    parser.add_argument("--baseline", metavar="FILE",
                        help="report only findings not recorded in FILE (see `opscan baseline`)")


def fails(findings, fail_on: str) -> bool:
    """Whether any finding is at or above the `fail_on` severity ("never": never)."""
    if fail_on == "never":
        return False
    limit = _RANK[fail_on]
    return any(_RANK.get(f.severity, 0) <= limit for f in findings)


def rule_infos(findings: tuple[Finding, ...], rules) -> tuple[RuleInfo, ...]:
    """RuleInfo for each rule that fired, sorted by id (for SARIF and help text)."""
    fired = {f.rule for f in findings}
    return tuple(
        RuleInfo(id=r.id, name=r.name, severity=r.severity, category=r.category, what=r.what,
                 why=r.why, fix=r.fix_doc, help_uri=f"docs/rules.md#{r.id.lower()}-{r.name}")
        for r in rules if r.id in fired)


def build_report(args: argparse.Namespace) -> tuple[Report, object]:
    """Run the scan for parsed arguments and return the Report (and the ScanResult)."""
    from opscan.scan import load_rules, scan_paths

    from opscan.scan.workers import default_jobs

    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    given = [Path(p) for p in args.paths] or [Path.cwd()]
    for path in given:
        if not path.exists():
            raise InputError("no such file or directory", path=str(path))
    if args.root:
        root = Path(args.root)
        if not root.is_dir():
            raise InputError("--root is not a folder", path=args.root)
    elif len(given) == 1 and given[0].is_dir():
        root = given[0]
    else:
        root = Path.cwd()
    paths = None if (len(given) == 1 and given[0].resolve() == root.resolve()) else given
    rules = load_rules(extra_dirs=args.rules, select=args.select, ignore=args.ignore)
    cache = probe = None
    if not getattr(args, "no_cache", False):
        from opscan.scan.cache import ResultCache, default_cache_dir, rules_salt, scan_salt
        from opscan.scan.probe_cache import CachedProbe

        folder = default_cache_dir(getattr(args, "cache_dir", None))
        cache = ResultCache(folder, scan_salt(rules_salt(rules)))
        probe = CachedProbe(folder) if not args.no_fix_check else None
    result = scan_paths(root, paths=paths, rules=rules, exclude=args.exclude, jobs=jobs,
                        check_fixes=not args.no_fix_check, cache=cache, probe=probe)
    if probe is not None:
        probe.save()
    report = Report(root=str(root.resolve()), tool_version=__version__, findings=result.findings,
                    files_scanned=result.files_scanned, notes=result.notes,
                    rules=rule_infos(result.findings, rules))
    return report, result


def run(args: argparse.Namespace) -> int:
    from opscan.reporters import render

    report, _ = build_report(args)
    if getattr(args, "baseline", None):   # only findings not in the baseline count (docs/ci.md)
        from opscan.baseline import filter_report

        report = filter_report(report, Path(args.baseline))
    if args.output:
        from opscan.fsutil import atomic_write

        buffer = io.StringIO()
        render(args.format, report, buffer)
        try:
            atomic_write(args.output, buffer.getvalue())   # old file or new file, never half of one
        except OSError as exc:
            raise InputError(f"cannot write the report: {exc.strerror or exc}", path=args.output) from None
    else:
        render(args.format, report, sys.stdout)
    return 1 if fails(report.findings, args.fail_on) else 0
