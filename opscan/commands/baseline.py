"""`opscan baseline PATH --output FILE`: record today's findings so CI fails only on new ones."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "record the current findings of PATH in a baseline file (for --baseline)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `opscan baseline`."""
    parser.add_argument("path", nargs="?", default=".", help="project folder or file (default: .)")
    parser.add_argument("--output", "-o", metavar="FILE", default=None,
                        help="baseline file to write (default: the configured `baseline`, "
                             "else opscan-baseline.json in the project root)")
    parser.add_argument("--select", action="append", default=None, metavar="CODES",
                        help="only these rule codes / prefixes / names (comma list or repeated)")
    parser.add_argument("--ignore", action="append", default=None, metavar="CODES",
                        help="drop these rule codes / prefixes / names (comma list or repeated)")


def run(args: argparse.Namespace) -> int:
    """Scan args.path (source only: baselines hold findings) and write the baseline atomically."""
    from opscan import __version__
    from opscan.assess import baseline as baselines
    from opscan.pipeline.analyse import Phases, analyse
    from opscan.pipeline.options import RunOptions
    from opscan.commands.check import load_effective_config

    args.backend = args.db = args.fail_on = args.model = args.mode = None
    config = load_effective_config(args)
    output = Path(args.output) if args.output else (config.baseline or config.root / "opscan-baseline.json")
    report = analyse(Path(args.path), config, RunOptions(trace=False),
                     phases=Phases.default(database=lambda _config: None))
    count = baselines.write(output, report.findings, __version__)
    print(f"opscan: wrote {count} finding(s) to {output}", file=sys.stderr)
    return 0
