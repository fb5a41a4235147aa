"""Times `opscan PATH`'s static part (model search + recipes + call sites + scan) and counts its parses.

Runs `opscan.pipeline.analyse.analyse` on each tree with the trace phase replaced by a stub (no child, no
torch: only what reads the project is timed) and no coverage database, in a fresh process per
run, with the scan cache off (OPSCAN_NO_CACHE), `--jobs 1` and no fix check (which imports torch),
so every file the run needs is read and parsed, and little else is timed. Counts every `ast.parse`
of a file of the tree (whoever calls it) and reports
per tree: median / min wall and CPU seconds (user + sys of the process; machine load inflates it
far less than wall time) over the runs, files parsed, parses, and files parsed more
than once. Run it from a checkout; `--pythonpath DIR` runs another checkout's opscan instead
(e.g. a worktree of main), to compare before and after.

  python benchmarks/speed/index_bench.py --tree repos=tests/targets/repos --tree opscan=opscan --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import ast, json, sys, time
from collections import Counter
from pathlib import Path
root = Path(sys.argv[1]).resolve()
files = {p.resolve().as_posix() for p in root.rglob("*.py")}
parses = Counter()
real = ast.parse
def counted(source, filename="<unknown>", *args, **kwargs):
    name = str(filename)
    full = name if name.startswith("/") else (root / name).as_posix()
    if full in files:
        parses[full] += 1
    return real(source, filename, *args, **kwargs)
ast.parse = counted
from opscan.pipeline.analyse import Phases, RunOptions, analyse
from opscan.config import Config
from opscan.pipeline.options import ScanOptions
from opscan.records import ModelTrace
trace = lambda model, project_root, profile, limits: ModelTrace(model.target, model.mode, "neuron", ())
start, cpu = time.perf_counter(), time.process_time()
options = RunOptions(limits=None, scan=ScanOptions(jobs=1, cache=False, check_fixes=False))
report = analyse(root, Config(root=root), options,
                 phases=Phases.default(trace=trace, database=lambda config: None))
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"seconds": seconds, "cpu": cpu, "files": len(parses), "parses": sum(parses.values()),
                  "twice": sum(1 for n in parses.values() if n > 1), "findings": len(report.findings),
                  "candidates": len(report.discovery.candidates) if report.discovery else 0}))
"""


def run(tree: Path, pythonpath: str | None) -> dict:
    env = {**os.environ, "OPSCAN_NO_CACHE": "1"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    # cwd: a folder holding no opscan (`python -c` puts the working directory first on sys.path)
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree.resolve())], capture_output=True, text=True,
                         env=env, check=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pythonpath", default=None, help="import opscan from this folder instead")
    args = parser.parse_args()
    print("| tree | wall s (median / min) | CPU s (median / min) | files parsed | parses | parsed twice or more "
          "| findings | candidates |")
    print("|---|---|---|---|---|---|---|---|")
    for item in args.tree:
        name, _, path = item.partition("=")
        results = [run(Path(path), args.pythonpath) for _ in range(args.runs)]
        times = [r["seconds"] for r in results]
        cpu = [r["cpu"] for r in results]
        last = results[-1]
        print(f"| {name} | {statistics.median(times):.2f} / {min(times):.2f} "
              f"| {statistics.median(cpu):.2f} / {min(cpu):.2f} | {last['files']} | {last['parses']} "
              f"| {last['twice']} | {last['findings']} | {last['candidates']} |")


if __name__ == "__main__":
    main()
