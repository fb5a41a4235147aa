"""Counts the blocking findings of `opscan scan` over installed packages, by rule (issue 40, part B).

A blocking finding is an unguarded error (NOTE [blockers] in opscan/verdict.py). Each package
folder is scanned as its own root through the scan API (`scan_paths`, no cache, one worker), so
the numbers compare two versions of the scanner on the same installed trees:

    python benchmarks/accuracy/blocker_counts.py --site PATH/site-packages torch transformers > before.json
    python benchmarks/accuracy/blocker_counts.py --site PATH/site-packages torch transformers --diff before.json

`--diff` prints, per package and rule, the counts before and after, and the blocking sites that
appeared or went away (path:line rule), so each change can be read one by one; each run also
records the scan's wall and CPU seconds (a single noisy run: compare several, interleaved).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from opscan.records import Severity
from opscan.scan.tree import scan_paths


def blockers(root: Path) -> tuple[list[str], Counter, float, float]:
    """The blocking sites (`path:line RULE`) of one package folder, their count by rule, and the scan's
    wall and CPU seconds (one process, no workers: CPU time is what machine load inflates least)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = scan_paths(root, check_fixes=False)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    sites = sorted(f"{f.location.path}:{f.location.line} {f.rule}" for f in result.findings
                   if f.severity == Severity.ERROR and not f.guarded)
    return sites, Counter(site.rsplit(" ", 1)[1] for site in sites), seconds, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("packages", nargs="+", help="folder names under --site")
    parser.add_argument("--site", required=True, help="a site-packages folder")
    parser.add_argument("--diff", help="the JSON a previous run printed: compare with it")
    args = parser.parse_args(argv)
    now = {}
    for name in args.packages:
        sites, by_rule, seconds, cpu = blockers(Path(args.site) / name)
        now[name] = {"blockers": len(sites), "by_rule": dict(sorted(by_rule.items())), "sites": sites,
                     "seconds": round(seconds, 1), "cpu_seconds": round(cpu, 2)}
    if not args.diff:
        json.dump(now, sys.stdout, indent=1)
        print()
        return 0
    before = json.loads(Path(args.diff).read_text(encoding="utf-8"))
    for name, after in now.items():
        old = before.get(name, {"blockers": 0, "by_rule": {}, "sites": []})
        print(f"{name}: {old['blockers']} -> {after['blockers']} blockers; scan CPU {old.get('cpu_seconds', '?')} -> "
              f"{after['cpu_seconds']} s")
        for rule in sorted(set(old["by_rule"]) | set(after["by_rule"])):
            a, b = old["by_rule"].get(rule, 0), after["by_rule"].get(rule, 0)
            if a != b:
                print(f"  {rule}: {a} -> {b}")
        gone, new = sorted(set(old["sites"]) - set(after["sites"])), sorted(set(after["sites"]) - set(old["sites"]))
        for site in gone:
            print(f"  - {site}")
        for site in new:
            print(f"  + {site}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
