"""Per-op time of the trace's recorder alone and with the compiled-region bookkeeping (RegionOps),
which `opscan run` and `opscan trace` keep on for every run, compiled or not.

Usage: python benchmarks/accuracy/compile_breaks/region_overhead.py
Prints microseconds per op (5 runs of 6000 fake ops each, sorted); docs/compile.md has the result.
"""

from __future__ import annotations

import contextlib
import time

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from opscan.trace import compiled
from opscan.trace.recorder import Recorder
from opscan.trace.sources import SourceFinder

FINDER = SourceFinder(".")


def per_op(with_regions: bool, ops: int = 6000) -> float:
    with FakeTensorMode():
        x = torch.randn(64, 64)
        recorder = Recorder(FINDER, "cpu", {})
        extra = compiled.RegionOps(compiled.Compiles(FINDER)) if with_regions else contextlib.nullcontext()
        with recorder, extra:
            started = time.perf_counter()
            for _ in range(ops // 2):
                x = (x @ x).relu()
            return (time.perf_counter() - started) / ops * 1e6


def main() -> None:
    for _ in range(2):   # warm-up
        per_op(False)
        per_op(True)
    alone = sorted(per_op(False) for _ in range(5))
    both = sorted(per_op(True) for _ in range(5))
    print("us per op, recorder alone:", [round(v, 1) for v in alone])
    print("us per op, with RegionOps:", [round(v, 1) for v in both])


if __name__ == "__main__":
    main()
