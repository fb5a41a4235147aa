"""Which labelled sites of the recall corpus block (an unguarded error finding at the label's file,
line and category), to check that a change of severities loses no labelled true blocker.

    python benchmarks/accuracy/recall/blockers.py --set dev > before.json        # with the old scanner
    python benchmarks/accuracy/recall/blockers.py --set dev --diff before.json   # with the new one

`--diff` prints the counts and every labelled site that blocked before and does not now (and the
reverse). score.py counts a label found by an error or a warning; this counts only what blocks.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from score import CORPUS, HERE, SETS, read_files, read_labels


def blocking(files: list[str]) -> set[tuple[str, int, str]]:
    """(file, line, category) of every unguarded error finding in `files`."""
    from opscan.records import Severity
    from opscan.scan import load_rules, scan_paths

    rules = load_rules()
    by_package: dict[str, list[str]] = defaultdict(list)
    for f in files:
        package, rest = f.split("/", 1)
        by_package[package].append(rest)
    out = set()
    for package, rels in sorted(by_package.items()):
        root = CORPUS / package
        for finding in scan_paths(root, paths=[root / r for r in rels], rules=rules, check_fixes=False).findings:
            if finding.severity == Severity.ERROR and not finding.guarded:
                out.add((f"{package}/{finding.location.path}", finding.location.line, finding.category))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=tuple(SETS), default="dev")
    parser.add_argument("--diff", help="the JSON of a previous run: compare with it")
    args = parser.parse_args(argv)
    files, labels = [], set()
    for suffix in SETS[args.set]:
        files += read_files(HERE / f"files{suffix}.txt")
        labels |= read_labels(HERE / f"labels{suffix}.csv")
    now = sorted(labels & blocking(files))
    if not args.diff:
        json.dump([list(k) for k in now], sys.stdout, indent=0)
        print()
        return 0
    before = {tuple(k) for k in json.loads(Path(args.diff).read_text(encoding="utf-8"))}
    after = set(now)
    print(f"{args.set}: {len(labels)} labels; labelled sites that block: {len(before)} before, {len(after)} now")
    for f, line, cat in sorted(before - after):
        print(f"  no longer blocks: {f}:{line} {cat}")
    for f, line, cat in sorted(after - before):
        print(f"  now blocks: {f}:{line} {cat}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
