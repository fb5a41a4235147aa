"""Zoo wall time on a subset of hf:causal-lm: 1 vs N local workers, and through Dask (LocalCluster).

Usage: python benchmarks/speed/zoo_bench.py [--models 12] [--layers 2] [--workers 2] [--timeout 180]
Every configuration traces the same models from scratch (no cache). Prints a markdown table.
The numbers depend on the machine's load: say so when you quote them.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from opscan.zoo.cache import Cache
from opscan.db import load_release
from opscan.containment.process import Limits
from opscan.zoo.execution import run_zoo
from opscan.zoo.selection import family_models, resolve


def _one(label: str, targets, coverage, workers: int, limits: Limits, cluster: str | None) -> dict:
    start = time.perf_counter()
    run = run_zoo(targets, coverage, options={"mode": "train", "device": "neuron"}, workers=workers,
                  limits=limits, cache=Cache(None, enabled=False), cluster=cluster)
    wall = time.perf_counter() - start
    statuses = {}
    for row in run.rows:
        statuses[row.status] = statuses.get(row.status, 0) + 1
    return {"label": label, "wall": wall, "statuses": statuses,
            "trace_sum": sum(r.seconds for r in run.rows)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("--skip-dask", action="store_true")
    args = parser.parse_args()
    names = list(family_models("causal-lm"))[: args.models]
    with tempfile.TemporaryDirectory() as tmp:
        targets = [t for t in resolve(["hf:causal-lm"], Path(tmp), args.layers) if t.name in names]
        coverage = load_release()   # the one coverage protocol: a db.Release
        limits = Limits(timeout=args.timeout, max_memory=8 << 30, start_method="forkserver")
        # warm the forkserver (torch + transformers preloaded) so no configuration pays for it alone
        _one("warm-up", targets[:1], coverage, 1, limits, None)
        results = [_one("local, 1 worker", targets, coverage, 1, limits, None),
                   _one(f"local, {args.workers} workers", targets, coverage, args.workers, limits, None)]
        if not args.skip_dask:
            results.append(_one(f"dask LocalCluster, {args.workers} workers", targets, coverage,
                                args.workers, limits, "local"))
    base = results[0]["wall"]
    load = os.getloadavg()
    print(f"{len(targets)} causal LMs (first by name), --layers {args.layers}, {os.cpu_count()} cores, "
          f"load average at end {load[0]:.1f}\n")
    print("| configuration | wall s | speed-up | sum of per-model trace s | outcomes |")
    print("|---|---:|---:|---:|---|")
    for r in results:
        outcomes = ", ".join(f"{n} {s}" for s, n in sorted(r["statuses"].items()))
        print(f"| {r['label']} | {r['wall']:.1f} | {base / r['wall']:.2f}x | {r['trace_sum']:.1f} | {outcomes} |")


if __name__ == "__main__":
    main()
