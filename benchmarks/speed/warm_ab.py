"""Warm `opscan scan` of one tree by two checkouts, interleaved run by run: wall and CPU seconds.

    python benchmarks/speed/warm_ab.py --before ../base [--after .] [--tree PATH] [--pairs 15]
        [--format json|terminal|sarif] [--json OUT]

`--before`/`--after` are opscan checkouts (e.g. `git archive COMMIT | tar -x -C ../base`); each run
is `python -m opscan scan TREE --format json --cache-dir CACHE` (`--format terminal`: no --format,
the default report a user sees, rendered to a pipe) started in that checkout, so its
own `opscan` is imported, with this interpreter and a cache of its own filled by two untimed runs
first. The runs alternate (before, after, before, ...), so machine load hits both alike: on a
shared machine compare the CPU columns and the minima, and quote the load. The tree defaults to
transformers' installed source (what the CI speed gate scans, scan_bench.py --gate).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(python: str, checkout: Path, tree: Path, cache: Path, fmt: str = "json") -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    fmt_args = [] if fmt == "terminal" else ["--format", fmt]
    subprocess.run([python, "-m", "opscan", "scan", str(tree), *fmt_args, "--cache-dir", str(cache)],
                   cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _commit(checkout: Path) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() or checkout.name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, type=Path, help="the checkout to compare against")
    parser.add_argument("--after", default=Path("."), type=Path, help="the checkout measured (default: here)")
    parser.add_argument("--tree", type=Path, help="the tree scanned (default: transformers' installed source)")
    parser.add_argument("--pairs", type=int, default=15, help="interleaved runs of each checkout")
    parser.add_argument("--format", default="json", choices=["json", "terminal", "sarif"],
                        help="the report measured (terminal: the default one)")
    parser.add_argument("--label-before", help="what --before is, in the results (default: its folder name)")
    parser.add_argument("--label-after", help="what --after is, in the results (default: its git commit)")
    parser.add_argument("--json", type=Path, help="write the results here (no path of this machine in it)")
    args = parser.parse_args()
    tree = args.tree
    if tree is None:
        spec = importlib.util.find_spec("transformers")       # located, never imported
        if spec is None or not spec.origin:
            parser.error("no --tree given and transformers is not installed")
        tree = Path(spec.origin).parent
    checkouts = [args.before.resolve(), args.after.resolve()]
    work = Path(tempfile.mkdtemp(prefix="warm-ab-"))
    caches = [work / "before", work / "after"]
    rows: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
    loads = []
    try:
        for checkout, cache in zip(checkouts, caches):
            subprocess.run([sys.executable, "-m", "compileall", "-q", "opscan"], cwd=checkout, check=True,
                           stdout=subprocess.DEVNULL)   # as an installed package is
            for _ in range(2):
                run(sys.executable, checkout, tree, cache, args.format)
        for _ in range(args.pairs):
            for name, checkout, cache in zip(rows, checkouts, caches):
                rows[name].append(run(sys.executable, checkout, tree, cache, args.format))
            loads.append(round(os.getloadavg()[0], 2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    labels = [args.label_before or checkouts[0].name, args.label_after or _commit(checkouts[1])]
    out: dict = {"tree": tree.name, "format": args.format, "pairs": args.pairs, "load_1min": loads,
                 "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for name, label in zip(rows, labels):
        walls, cpus = [w for w, _ in rows[name]], [c for _, c in rows[name]]
        out[name] = {"checkout": label, "wall_min": min(walls), "wall_median": statistics.median(walls),
                     "cpu_min": min(cpus), "cpu_median": statistics.median(cpus)}
        print(f"{name}: wall min {min(walls):.3f} s, median {statistics.median(walls):.3f} s; "
              f"CPU min {min(cpus):.3f} s, median {statistics.median(cpus):.3f} s")
    print(f"load {min(loads)}-{max(loads)} (1-minute average), {args.pairs} interleaved pairs")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
