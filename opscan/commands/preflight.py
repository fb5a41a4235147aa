"""`opscan preflight`: the checklist a reviewer wants attached before the job moves to Trainium."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from opscan.errors import InputError
from opscan.workflow.reportfile import load_report

HELP = ("pre-flight checklist: torch / torch-neuronx pairing, device, op coverage, blockers, "
        "rollback path (markdown or JSON)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", default=".", metavar="PATH",
                        help="the project (its config gives the models and the rollback command; "
                             "it is scanned unless --report is given)")
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown")
    parser.add_argument("--output", metavar="FILE", help="write the checklist to FILE instead of stdout")
    parser.add_argument("--report", metavar="REPORT.json",
                        help="take ops and blockers from an `opscan PATH --format json` report "
                             "instead of scanning PATH")
    parser.add_argument("--exit-on-missing", action="store_true",
                        help="exit 1 when a traced op has no Neuron kernel (cpu-fallback or unsupported)")
    parser.add_argument("--unknown-as-missing", action="store_true",
                        help="count ops of unknown status as missing too")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when the checklist is not ready (any FAIL or STOP)")


def _read_report(path: str):
    from opscan.workflow.preflight import from_json

    doc = load_report(path)
    if not isinstance(doc, dict) or "summary" not in doc or "ops" not in doc:
        raise InputError("not an opscan JSON report (no `ops` / `summary`): "
                         "make it with `opscan PATH --format json`", path)
    return from_json(doc)


def _scan(path: Path):
    """Analyse PATH as `opscan PATH` does; the checklist reads the finished Report."""
    from opscan.pipeline.analyse import analyse
    from opscan.config.checks import load_checked_config
    from opscan.workflow.preflight import from_report

    if not path.exists():
        raise InputError("no such file or folder", str(path))

    def progress(event: str, detail: str) -> None:
        if event in ("phase", "trace"):
            print(f"opscan preflight: {detail}", file=sys.stderr)

    return from_report(analyse(path, load_checked_config(path), progress=progress))


def run(args: argparse.Namespace) -> int:
    from opscan.workflow import preflight as pf
    from opscan.workflow import preflight_render as render
    from opscan.workflow.settings import parity_settings

    path = Path(args.path)
    settings = parity_settings(path if path.exists() else None)
    if args.report:
        report, source = _read_report(args.report), args.report
    else:
        report, source = _scan(path), f"scan of {args.path}"
    checklist = pf.checklist(
        pf.probe(), report, source,
        fallback_command=settings.fallback_command, config_source=settings.source,
        unknown_missing=args.unknown_as_missing, exit_on_missing=args.exit_on_missing)
    text = (render.render_json(checklist, args.exit_on_missing) if args.format == "json"
            else render.render_markdown(checklist))
    from opscan.commands.flags import write_output

    write_output(text, args.output)   # the one writer of --output (atomic; commands/flags.py)
    if args.output:
        print(f"opscan preflight: checklist written to {args.output}", file=sys.stderr)
    if args.exit_on_missing and checklist.missing_ops:
        return 1
    if args.strict and not checklist.ready:
        return 1
    return 0
