"""`opscan scan`: the source-only view of `opscan PATH` (reads source only, never runs it).

It runs the same analysis as `opscan PATH --no-trace` (opscan/pipeline/analyse.py `analyse`): the same
`[tool.opscan]` config, file selection, rules (OPS003 included), baseline, verdict, `--fail-on`
words and exit codes. What it adds are conveniences for scanning part of a tree: several PATHs
(the pre-commit hook passes the staged files), `--root`, `--jobs`, the scan cache flags and
`--rules`. docs/check.md ("Commands") lists what each command adds or leaves out.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from opscan.commands.flags import FORMATS, add_backend_argument, add_db_argument, codes

HELP = "the source-only view of `opscan PATH`: where the source pins itself to CUDA (never imports or runs it)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or folders to scan (default: the current folder)")
    parser.add_argument("--root", metavar="DIR",
                        help="folder that reported paths are relative to and whose [tool.opscan] applies "
                             "(default: PATH when it is the only one and a folder, else the current folder)")
    parser.add_argument("--format", choices=FORMATS, default="terminal", help="output format (default: terminal)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--fail-on", action="append", metavar="WHAT", default=None,
                        help="exit 1 on: error, warning, fallback, unknown, custom-kernel, not-ready "
                             "(comma list or repeated; default: [tool.opscan] fail-on, else error)")
    parser.add_argument("--exit-zero", action="store_true", help="always exit 0 (report-only runs)")
    parser.add_argument("--baseline", metavar="FILE", default=None,
                        help="report only findings not recorded in FILE (default: [tool.opscan] baseline)")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip files or folders matching GLOB (repeatable), on top of the config's")
    parser.add_argument("--select", action="append", default=None, metavar="CODES",
                        help="only these rules: codes, code prefixes (OPS2), names or categories "
                             "(comma list or repeated; replaces [tool.opscan] select)")
    parser.add_argument("--ignore", action="append", default=None, metavar="CODES",
                        help="drop these rules (same forms as --select; replaces [tool.opscan] ignore)")
    parser.add_argument("--rules", action="append", default=[], metavar="DIR",
                        help="also load the rule files (*.yaml) in DIR, on top of extra-rules (repeatable)")
    parser.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                        help="worker processes (default: the number of CPUs; results are the same for any N)")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the scan cache (see docs/benchmarks.md, 'Cache')")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="where to keep the scan cache (default: $OPSCAN_CACHE_DIR, else "
                             "~/.cache/opscan; never a folder an untrusted change can write)")
    parser.add_argument("--no-fix-check", action="store_true",
                        help="do not check suggested replacements against the installed torch")
    add_backend_argument(parser)   # for scan: the torch pairing that judges dependency manifests
    add_db_argument(parser)
    parser.add_argument("--environment", metavar="PYTHON", default=None,
                        help="read the torch requirements of the distributions installed for PYTHON (or "
                             "`current`: the running interpreter) instead of the tables (docs/dependencies.md)")
    parser.add_argument("--concise", action="store_true",
                        help="print one line per finding and one summary line instead of the report "
                             "(the pre-commit hook's output; `opscan PATH` prints the whole report)")


def _root_and_paths(args: argparse.Namespace) -> tuple[Path, tuple[Path, ...]]:
    """The root (paths are reported relative to it) and the PATHs to narrow the scan to (() = all)."""
    from opscan.errors import InputError

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
    root = root.resolve()
    if len(given) == 1 and given[0].resolve() == root:
        return root, ()
    return root, tuple(p.resolve() for p in given)


def build_config(args: argparse.Namespace, root: Path):
    """[tool.opscan] that applies to `root`, with this command's flags on top (as `opscan PATH` does)."""
    from opscan.config import parse_fail_on
    from opscan.config.checks import load_checked_config

    config = load_checked_config(root, tolerant=True)
    return config.override(
        fail_on=parse_fail_on(args.fail_on) if args.fail_on else None,
        select=codes(args.select),
        ignore=codes(args.ignore),
        exclude=config.exclude + tuple(args.exclude) if args.exclude else None,
        extra_rules=_dedupe(config.extra_rules + tuple(Path(d).resolve() for d in args.rules)) if args.rules else None,
        backend=getattr(args, "backend", None),
        db=Path(args.db).resolve() if getattr(args, "db", None) else None,
    )


def _dedupe(folders: tuple[Path, ...]) -> tuple[Path, ...]:
    """Rule folders in order, each once (`--rules rules` may name a folder the config already has)."""
    seen: list[Path] = []
    for folder in folders:
        if folder.resolve() not in seen:
            seen.append(folder.resolve())
    return tuple(seen)


def build_report(args: argparse.Namespace):
    """The source-only Report for parsed arguments, and the effective config."""
    from opscan.pipeline.analyse import analyse
    from opscan.pipeline.options import RunOptions
    from opscan.errors import UsageError
    from opscan.pipeline.options import ScanOptions
    from opscan.assess.verdict import SOURCE_ONLY

    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    root, paths = _root_and_paths(args)
    config = build_config(args, root)
    baseline = Path(args.baseline) if args.baseline else config.baseline
    options = ScanOptions(paths=paths, jobs=args.jobs, cache=not args.no_cache, cache_dir=args.cache_dir,
                          check_fixes=not args.no_fix_check, environment=getattr(args, "environment", None))
    report = analyse(root, config, RunOptions(trace=False, baseline=baseline, scan=options, untraced=SOURCE_ONLY))
    return report, config


def run(args: argparse.Namespace) -> int:
    """The scan; a warm run of an unchanged tree replays the last run's output (NOTE [report replay])."""
    if args.no_cache or args.output or getattr(args, "environment", None):
        return _run(args)
    from opscan.commands import replay
    from opscan.scan.cache import default_cache_dir

    try:
        cache_dir = default_cache_dir(args.cache_dir)
        key = replay.invocation_key(vars(args))
    except (OSError, ValueError):   # e.g. the working folder was removed: no replay, no record
        return _run(args)
    code = replay.replay(cache_dir, key)
    if code is not None:
        return code
    with replay.Recorder(cache_dir, key) as recorder:
        code = _run(args)
    recorder.save(code)
    return code


def _run(args: argparse.Namespace) -> int:
    from opscan.commands.flags import gate, render_report

    report, config = build_report(args)
    if args.concise:
        import sys

        from opscan.reporters.terminal.concise import render

        if args.format != "terminal" or args.output:
            from opscan.errors import UsageError

            raise UsageError("--concise is a terminal view: drop --format / --output")
        from opscan.assess.gate import failures

        met = [] if args.exit_zero else [c for c in config.fail_on if failures(report, (c,))]
        render(report, sys.stdout, met)   # the gate's conditions in its one line
        return gate(report, config.fail_on, args.exit_zero, quiet=True)
    render_report(report, args.format, args.output)
    return gate(report, config.fail_on, args.exit_zero)
