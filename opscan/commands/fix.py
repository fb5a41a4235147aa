"""`opscan fix`: rewrite the mechanical part of the port in place (format-preserving; docs/fix.md)."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections import Counter
from pathlib import Path

from opscan.errors import InputError
from opscan.fix.reasons import FixStatus

HELP = "apply the automatic fixes (device strings, .cuda(), torch.cuda.amp, torch.cuda.*, NCCL) in place"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders to fix (default: .)")
    parser.add_argument("--diff", action="store_true",
                        help="print a unified diff of the fixes and change nothing "
                             "(exit 1 when there would be changes)")
    parser.add_argument("--unsafe-fixes", action="store_true",
                        help="also apply fixes that may change behaviour (docs/fix.md, 'Safety')")
    parser.add_argument("--select", action="append", default=None, metavar="CODES",
                        help="only these rule codes / prefixes / names (comma list or repeated)")
    parser.add_argument("--ignore", action="append", default=None, metavar="CODES",
                        help="drop these rule codes / prefixes / names (comma list or repeated)")
    parser.add_argument("--show-left", action="store_true",
                        help="also list one by one the findings of rules without an automatic fix "
                             "(by default they are counted per reason; docs/fix.md, 'Why a finding is left')")


def run(args: argparse.Namespace) -> int:
    from opscan.commands.flags import codes
    from opscan.config.checks import load_checked_config
    from opscan.fix import fix_paths

    targets = [Path(p) for p in args.paths] or [Path(".")]
    for target in targets:
        if not target.exists():
            raise InputError("no such file or directory", path=str(target))

    def config_for(target: Path):
        return load_checked_config(target).override(select=codes(args.select), ignore=codes(args.ignore))

    result = fix_paths(targets, config_for, unsafe=args.unsafe_fixes, write=not args.diff)
    for item in result.files:   # NOTE [one file's failure] in opscan/fix/files.py: that file only was left
        if item.failed:
            print(f"opscan: internal error: {item.path}: the fixer failed on this file and left it unchanged "
                  f"(an opscan bug: please report it): {item.failed}", file=sys.stderr)
    out = sys.stdout
    if args.diff:
        changed = [f for f in result.files if f.changed]
        for item in changed:
            _diff(item, out)
        print(_summary(result, would=True), file=sys.stderr)
        return 1 if changed else 0
    _report(result, out, args.show_left)
    return 0


def _display(item) -> str:
    return item.path


def _diff(item, out) -> None:
    before = item.before.decode("utf-8", "replace").splitlines(keepends=True)
    after = item.after.decode("utf-8", "replace").splitlines(keepends=True)
    for line in difflib.unified_diff(before, after, f"a/{item.path}", f"b/{item.path}"):
        out.write(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")


def _where(outcome) -> str:
    loc = outcome.finding.location
    if loc.cell is not None:
        return f"{loc.path}:cell {loc.cell}:{loc.line}:{loc.column}"
    return f"{loc.path}:{loc.line}:{loc.column}"


def _report(result, out, show_left: bool) -> None:
    for item in result.files:
        fixed = [o for o in item.outcomes if o.status is FixStatus.FIXED]
        if item.written:
            out.write(f"fixed {item.path} ({len(fixed)} fix{'es' if len(fixed) != 1 else ''})\n")
            for o in fixed:
                out.write(f"  {_where(o)} {o.finding.rule} {o.detail}\n")
        elif item.skipped and item.skipped != "no fixable finding":
            out.write(f"skipped {item.path}: {item.skipped}\n")
    _left(result, out, show_left)
    out.write("\n" + _summary(result) + "\n")


def _left(result, out, show_left: bool) -> None:
    """Every finding left, grouped by its reason (opscan/fix/reasons.py). Findings of rules with a
    rewrite are listed one by one; those of rules without one are counted per reason sentence
    unless `show_left` (each still says why)."""
    from opscan.fix.reasons import REASONS

    left = [o for o in result.outcomes() if o.status is not FixStatus.FIXED]
    if not left:
        return
    out.write(f"\nnot fixed automatically ({len(left)}), by reason:\n")
    groups: dict[str, list] = {}
    for o in left:
        groups.setdefault(o.reason, []).append(o)
    for reason in sorted(groups, key=lambda r: (list(REASONS).index(r) if r in REASONS else len(REASONS), r)):
        items = groups[reason]
        out.write(f"  {reason} ({len(items)}): {REASONS.get(reason, reason)}\n")
        counted: dict[str, Counter] = {}
        for o in items:
            if o.status is FixStatus.MANUAL and not show_left:
                counted.setdefault(o.detail, Counter())[o.finding.rule] += 1
                continue
            label = " (use --unsafe-fixes)" if o.status is FixStatus.UNSAFE else ""
            out.write(f"    {_where(o)} {o.finding.rule}{label}: {o.detail}\n")
        for detail, rules in counted.items():
            names = ", ".join(f"{rule} x{n}" for rule, n in sorted(rules.items()))
            out.write(f"    {names}: {detail}\n")
    if any(o.status is FixStatus.MANUAL for o in left) and not show_left:
        out.write("  (--show-left lists each finding of the rules without an automatic fix)\n")


def _summary(result, would: bool = False) -> str:
    files = sum(f.changed for f in result.files)
    fixed = result.count(FixStatus.FIXED)
    verb = "would fix" if would else "fixed"
    parts = [(f"{verb} {fixed} of {result.findings} finding{'s' if result.findings != 1 else ''} "
             f"in {files} file{'s' if files != 1 else ''}")]
    unsafe = result.count(FixStatus.UNSAFE)
    if unsafe:
        parts.append(f"{unsafe} more with --unsafe-fixes")
    left = Counter(o.finding.rule for o in result.outcomes() if o.status.left)
    if left:
        parts.append(f"{sum(left.values())} left ("
                     + ", ".join(f"{rule} x{n}" for rule, n in sorted(left.items())) + ")")
    return "; ".join(parts)
