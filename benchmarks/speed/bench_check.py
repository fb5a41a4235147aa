"""Times `opscan PATH` phase by phase (in-process) and end to end (subprocess); prints a table.

    python benchmarks/speed/bench_check.py [PATH] [--runs N]

Phase times come from the progress callback of opscan.pipeline.analyse.analyse (the time until the next
phase starts). Results for examples/nanogpt are recorded in docs/check.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


def phases_once(path: str) -> dict[str, float]:
    from opscan.pipeline.analyse import analyse
    from opscan.config import load_config

    marks: list[tuple[str, float]] = []
    start = time.perf_counter()
    def progress(event: str, detail: str) -> None:
        if event in ("phase", "trace"):
            marks.append((detail.split(" [")[0], time.perf_counter()))

    analyse(Path(path), load_config(Path(path)), progress=progress)
    end = time.perf_counter()
    out: dict[str, float] = {}
    for (name, t0), (_, t1) in zip(marks, marks[1:] + [("end", end)]):
        out[name] = out.get(name, 0.0) + t1 - t0
    out["total (in-process, first run)"] = end - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("path", nargs="?", default="examples/nanogpt")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for name, seconds in phases_once(args.path).items():
        print(f"{name:45s} {seconds:7.2f} s")
    for extra in ([], ["--no-trace"]):
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "opscan", args.path, "--format", "json", "--exit-zero", *extra],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - t0)
        label = "opscan " + " ".join([args.path, *extra])
        print(f"{label:45s} {statistics.median(times):7.2f} s median of {args.runs} (whole process)")


if __name__ == "__main__":
    main()
