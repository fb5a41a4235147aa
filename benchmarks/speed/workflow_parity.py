"""Times `opscan parity` on long synthetic loss logs (read, compare, drift, JSON), in process.

Usage: python benchmarks/speed/workflow_parity.py [STEPS]   (default 100000). Results: docs/workflow.md.
"""

from __future__ import annotations

import io
import json
import math
import sys
import tempfile
import time
from pathlib import Path

from opscan.workflow.losslog import read_loss_log
from opscan.workflow.parity import Tolerance, compare
from opscan.workflow.parity_render import render_json


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    base = {s: 2.3 * math.exp(-s / (steps / 4)) + 0.1 for s in range(steps)}
    cand = {s: v + 1e-7 * s for s, v in base.items()}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "base.json").write_text(json.dumps({str(k): v for k, v in base.items()}))
        (folder / "cand.csv").write_text("step,loss\n" + "".join(f"{k},{v!r}\n" for k, v in cand.items()))
        (folder / "cand.jsonl").write_text(
            "".join(json.dumps({"step": k, "loss": v}) + "\n" for k, v in cand.items()))
        timings = {}
        start = time.perf_counter()
        baseline = read_loss_log(folder / "base.json")
        timings["read JSON object"] = time.perf_counter() - start
        start = time.perf_counter()
        read_loss_log(folder / "cand.jsonl")
        timings["read JSON lines"] = time.perf_counter() - start
        start = time.perf_counter()
        candidate = read_loss_log(folder / "cand.csv")
        timings["read CSV"] = time.perf_counter() - start
        start = time.perf_counter()
        result = compare(baseline, candidate, Tolerance(2e-3))
        timings["compare + drift"] = time.perf_counter() - start
        start = time.perf_counter()
        render_json(result, io.StringIO())
        timings["JSON record"] = time.perf_counter() - start
    print(f"{steps} steps; drift {result.drift.kind}; first divergence {result.first_divergence_step}")
    for name, seconds in timings.items():
        print(f"  {name:18s} {seconds * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
