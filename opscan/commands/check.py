"""`opscan PATH`: scan, trace, check coverage and plan the port; print one report; gate CI on it."""

from __future__ import annotations

import argparse
from pathlib import Path

from opscan.commands.flags import (FORMATS, add_backend_argument, add_db_argument, codes, gate, on_screen, progress,
                                  render_report)
from opscan.records import MODES

HELP = "the whole answer for PATH: source scan, model trace, op coverage, port tasks (the default command)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `opscan PATH`; each one overrides the matching [tool.opscan] key."""
    parser.add_argument("path", nargs="?", default=".", help="project folder or file (default: .)")
    parser.add_argument("--model", action="append", metavar="TARGET", default=None,
                        help="trace this model instead of the configured ones (file.py:NAME, "
                             "module:NAME, hf:PATH, timm:NAME); repeatable")
    parser.add_argument("--entry", metavar="COMMAND", default=None,
                        help="the training command whose step is traced (e.g. \"python pretrain.py --model "
                             "vit_base\"), instead of the one found by reading the project (default: "
                             "[tool.opscan] entry, else the best found; docs/check.md)")
    parser.add_argument("--mode", choices=MODES, default=None,
                        help="trace mode for every model (default: as configured, else train)")
    add_backend_argument(parser)   # one --backend RELEASE and one --db FILE meaning in every command
    add_db_argument(parser)
    parser.add_argument("--environment", metavar="PYTHON", default=None,
                        help="judge dependency manifests by the torch requirements of the distributions "
                             "installed for PYTHON (or `current`), not the tables (docs/dependencies.md)")
    parser.add_argument("--fail-on", action="append", metavar="WHAT", default=None,
                        help="exit 1 on: error, warning, fallback, unknown, custom-kernel, not-ready "
                             "(comma list or repeated; default: [tool.opscan] fail-on, else error)")
    parser.add_argument("--baseline", metavar="FILE", default=None,
                        help="report only findings not recorded in FILE (see `opscan baseline`)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 whatever was found (report-only "
                        "runs); a model that could not be checked still exits 2")
    parser.add_argument("--allow-unchecked", action="store_true",
                        help="a model that cannot be built or traced does not exit 2: the gate judges the "
                             "source (and the models it could check) alone (default: [tool.opscan] "
                             "allow-unchecked, else false)")
    parser.add_argument("--format", choices=FORMATS, default="terminal", help="output format")
    parser.add_argument("--output", "-o", metavar="FILE", default=None, help="write the report to FILE")
    parser.add_argument("--no-trace", action="store_true", help="skip tracing (no torch needed)")
    parser.add_argument("--no-project-code", action="store_true",
                        help="with no configured model, build only what runs no project code (model folders, "
                        ".pt2 files); README blocks, hubconf, package factories and tests are not run")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="let a model folder whose config.json has auto_map run its own code "
                             "(in the trace's child process); refused without it")
    from opscan.commands.flags import add_limit_arguments

    add_limit_arguments(parser)   # --timeout, --max-memory, --in-process for the traces
    parser.add_argument("--select", action="append", default=None, metavar="CODES",
                        help="only these rule codes / prefixes / names (comma list or repeated)")
    parser.add_argument("--ignore", action="append", default=None, metavar="CODES",
                        help="drop these rule codes / prefixes / names (comma list or repeated)")


def load_effective_config(args: argparse.Namespace):
    """[tool.opscan] for args.path with the command-line flags applied on top."""
    from opscan.pipeline.analyse import with_models
    from opscan.config import parse_fail_on
    from opscan.config.checks import load_checked_config
    from opscan.errors import InputError

    target = Path(args.path)
    if not target.exists():
        raise InputError("no such file or folder", path=str(target))
    config = load_checked_config(target, tolerant=True)   # the release and the rule selectors checked with the file
    config = config.override(
        backend=args.backend,
        db=Path(args.db).resolve() if getattr(args, "db", None) else None,
        fail_on=parse_fail_on(args.fail_on) if getattr(args, "fail_on", None) else None,
        select=codes(getattr(args, "select", None)),
        ignore=codes(getattr(args, "ignore", None)),
    )
    if getattr(args, "backend", None):   # checked now, as the config's `backend` is, not when a trace first needs it
        from opscan.config.checks import backend_problem
        from opscan.errors import UsageError

        problem = backend_problem(args.backend, config.db)
        if problem:
            raise UsageError(f"--backend: {problem}")
    config = with_models(config, getattr(args, "model", None), getattr(args, "mode", None))
    if getattr(args, "trust_remote_code", False):
        from dataclasses import replace

        config = replace(config, models=tuple(replace(m, trust_remote_code=True) for m in config.models))
    return config


def _scan_options(args: argparse.Namespace):
    """`--environment`: the scan reads that environment's installed metadata (None: the defaults)."""
    if not getattr(args, "environment", None):
        return None
    from opscan.pipeline.options import ScanOptions

    return ScanOptions(environment=args.environment)


def run(args: argparse.Namespace) -> int:
    """Run the whole analysis of args.path and print it."""
    from opscan.pipeline.analyse import analyse
    from opscan.pipeline.options import RunOptions
    from opscan.commands.flags import isolation_from

    config = load_effective_config(args)
    options = RunOptions(
        trace=not args.no_trace, baseline=Path(args.baseline) if args.baseline else config.baseline,
        trust_remote_code=getattr(args, "trust_remote_code", False), mode=getattr(args, "mode", None),
        limits=isolation_from(args),   # each model's code runs in a contained child process (docs/reliability.md)
        scan=_scan_options(args),
        project_code=not getattr(args, "no_project_code", False), entry=getattr(args, "entry", None) or "")
    errors = []   # models that could not be checked; the verdict carries them (Verdict.unchecked)
    with progress() as update:
        report = analyse(Path(args.path), config, options, progress=update, on_error=errors.append)
    render_report(report, args.format, args.output)
    return gate(report, config.fail_on, args.exit_zero, args.allow_unchecked or config.allow_unchecked,
                shown=on_screen(args.format, args.output))
