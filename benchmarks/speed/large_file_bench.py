"""Scans one large generated Python file and prints wall time and peak memory (issue 40).

The file: `import torch`, N generated assignments (`value_000000 = 0`, ...), then one `.cuda()` line
(N = 700,000 by default: 700,002 lines, 15 MB). It is written to a temporary folder and scanned by
`opscan scan FOLDER --format json` in a fresh process, cold (an empty cache folder; torch's answers
for the fix check are imported once, as on a first run) and again warm; each run is measured by
scan_bench.measure (wall seconds, CPU seconds, peak RSS of the largest process and summed over
the process and its workers). The goals (docs/benchmarks.md, "A very large generated file"):
under 60 s and under 1 GB; the script prints whether each run met them and exits 1 when a run
failed to report the `.cuda()` line (OPS105 at the last line). No test asserts a time.

    python benchmarks/speed/large_file_bench.py [--lines 700000] [--runs 1] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scan_bench import measure  # a sibling script, not a package

GOAL_SECONDS = 60.0
GOAL_MB = 1024.0


def generate(folder: Path, lines: int) -> Path:
    path = folder / "generated.py"
    with path.open("w", encoding="utf-8") as out:
        out.write("import torch\n")
        for i in range(lines):
            out.write(f"value_{i:06d} = {i}\n")
        out.write("model = torch.nn.Linear(2, 2).cuda()\n")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=700_000, help="generated assignments (default 700,000)")
    parser.add_argument("--runs", type=int, default=1, help="cold and warm runs each (default 1)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter with opscan installed")
    parser.add_argument("--json", default="", help="write the rows to this file")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="large-file-bench-"))
    rows = []
    ok = True
    try:
        tree = work / "tree"
        tree.mkdir()
        path = generate(tree, args.lines)
        total = args.lines + 2
        out = work / "report.json"
        cmd = [args.python, "-m", "opscan", "scan", str(tree), "--format", "json", "--output", str(out),
               "--cache-dir", str(work / "cache")]
        for kind in ["cold"] * args.runs + ["warm"] * args.runs:
            if kind == "cold":
                shutil.rmtree(work / "cache", ignore_errors=True)
            result = measure(cmd)
            report = json.loads(out.read_text()) if out.exists() else {}
            found = [(f["rule"], f["line"]) for f in report.get("findings", [])]
            reported = ("OPS105", total) in found
            ok &= reported and result["rc"] == 1
            row = {"run": kind, "lines": total, "bytes": path.stat().st_size, "seconds": round(result["seconds"], 2),
                   "cpu": round(result["cpu"], 2), "peak_mb_largest": round(result["maxrss_mb"]),
                   "peak_mb_all": round(result["tree_rss_mb"]), "exit": result["rc"], "cuda_line_found": reported,
                   "load": round(result["load"], 1),
                   "goal_met": result["seconds"] < GOAL_SECONDS and max(result["maxrss_mb"], result["tree_rss_mb"])
                   < GOAL_MB}
            rows.append(row)
            print(f"{kind}: {row['seconds']} s wall, {row['cpu']} s CPU, peak {row['peak_mb_largest']} MB "
                  f"(largest process) / {row['peak_mb_all']} MB (all), exit {row['exit']}, .cuda() line "
                  f"{'found' if reported else 'NOT FOUND'}, load {row['load']}, "
                  f"goal (< {GOAL_SECONDS:.0f} s, < {GOAL_MB:.0f} MB) {'met' if row['goal_met'] else 'NOT met'}",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
