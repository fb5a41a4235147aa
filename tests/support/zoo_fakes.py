"""Fake tracers for the zoo tests: hand-built ModelTraces, crashes, hangs and build errors.

Each call appends its target to the file named by $ZOO_FAKE_LOG, so tests can count real traces.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from opscan.errors import TargetError
from opscan.records import ModelTrace, OpUsage, StandIn

FAKE_TRACER = "tests.support.zoo_fakes:fake_tracer"
STATUSES = {"aten::mm": "native", "aten::add.Tensor": "native", "aten::_foreach_add_.Scalar": "composite",
            "aten::nonzero": "cpu-fallback", "mylib::fused_rope": "unsupported"}
TRAIN = ("forward", "backward", "optimizer")
OPS = {
    "fake:alpha": [("aten::mm", TRAIN), ("aten::add.Tensor", TRAIN), ("aten::_foreach_add_.Scalar", ("optimizer",))],
    "fake:beta": [("aten::mm", TRAIN), ("aten::nonzero", ("forward",)), ("mylib::fused_rope", ("forward",))],
    "fake:gamma": [("aten::mm", TRAIN), ("aten::add.Tensor", TRAIN), ("aten::sort", ("forward",))],
}


def fake_tracer(target: str, **options) -> ModelTrace:
    log = os.environ.get("ZOO_FAKE_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(target + "\n")
    name = target.split("/")[-1] if target.startswith("hf:") else target
    if name == "fake:segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if name == "fake:abort":
        print("about to abort: pretend C++ assertion failed", flush=True)
        os.abort()
    if name == "fake:hang":
        time.sleep(3600)
    if name == "fake:slow":
        time.sleep(1.0)
    if name == "fake:nobuild":
        raise TargetError("no such class FooForCausalLM", path=target)
    if name == "fake:raises":
        raise RuntimeError("shape mismatch in layer 3\nsecond line")
    if name == "fake:hog":
        blocks = [bytearray(64 * 2**20) for _ in range(64)]  # 4 GiB: above the test's cap
        return ModelTrace(target=target, mode="train", device="neuron", ops=(), seconds=len(blocks))
    ops = OPS.get(name, OPS["fake:alpha"])
    usages = tuple(OpUsage(op=op, count=2, phases=phases, modes=("train",), custom=not op.startswith("aten::"))
                   for op, phases in sorted(ops))
    stand_ins = (StandIn("aten::nonzero", "dynamic-shape", "upper bound 16", 1),) if name == "fake:beta" else ()
    partial = name == "fake:gamma"
    return ModelTrace(target=target, mode=options.get("mode", "train"), device="neuron", ops=usages,
                      stand_ins=stand_ins, complete=not partial,
                      stopped_at="aten::sort: data-dependent sort (try --batch 1)" if partial else "")


def started(log) -> list[str]:
    """The targets the fake tracer was called with, in the order the traces started."""
    with open(log, encoding="utf-8") as handle:
        return [line for line in handle.read().splitlines() if line]


def traced(log) -> list[str]:
    """The targets the fake tracer was called with (from $ZOO_FAKE_LOG), sorted."""
    with open(log, encoding="utf-8") as handle:
        return sorted(line for line in handle.read().splitlines() if line)


def logging(limits, log):
    """`limits` whose contained child may append to the fake tracer's log: its variable passed
    (--pass-env) and its folder writable, the rest of the containment unchanged."""
    import dataclasses

    policy = dataclasses.replace(limits.containment, pass_env=("ZOO_FAKE_LOG",), writable=(str(Path(log).parent),))
    return dataclasses.replace(limits, containment=policy)
