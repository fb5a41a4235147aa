"""The cost of the containment of a child that runs project code (opscan/containment/).

Runs the same child with and without containment, several times each, alternating, and prints
the median wall time of each and the difference (the containment's cost per child):

- `noop/spawn`: a child that runs nothing (`os:getpid`), started as `opscan PATH` / `opscan trace`
  start theirs (spawn: a fresh isolated interpreter, `python -I`, that answers in JSON);
- `noop/forkserver`: the same, started as the zoo starts its children (forks of opscan's own fork
  server, itself started isolated);
- `enter`: the time `containment.enter` itself takes inside the child (the file allow-list, the
  namespaces, the new root and its mounts, pivot_root, the keyring filter, the limits, the two
  forks), read from inside;
- `trace/spawn` (with --trace): `opscan.targets.loader:trace_target` of a small model file;
- `codec` (with --codec): the size of an 80-layer Llama's trace as the child sends it (JSON), and the
  time to encode it and to decode it into records (containment/codec.py), in this process.

    python benchmarks/speed/containment_bench.py [--runs 7] [--trace] [--codec]

Results go to docs/benchmarks.md, "Containment".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from opscan import containment  # noqa: E402
from opscan.containment import Policy  # noqa: E402
from opscan.containment.process import Limits, run  # noqa: E402
from opscan.records import ModelTrace  # noqa: E402

MODEL = """import torch
from torch import nn


def build():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    return model, (torch.randn(2, 16),)
"""



def _one(func: str, kwargs: dict, method: str, contained: bool, returns: Any) -> float:
    root = kwargs.get("project_root")   # a trace's project is an overlay in the child, as opscan PATH has it
    limits = Limits(timeout=300, start_method=method,
                    containment=Policy(enabled=contained, overlays=(root,) if root else ()))
    started = time.perf_counter()
    ended = run(func, kwargs, limits, preload=("opscan.containment.process",) if method == "forkserver" else (),
                returns=returns)   # decoded as the commands decode it (a trace: into its records)
    seconds = time.perf_counter() - started
    if ended.how != "returned":
        raise SystemExit(f"{func} ({method}, contained={contained}) ended {ended.how}: {ended.error}")
    if contained and not (ended.containment and ended.containment.all):
        print(f"warning: containment did not fully hold: {ended.containment}", file=sys.stderr)
    return seconds


def enter_seconds(runs: int) -> list[float]:
    """containment.enter timed in a forked process of this one (no multiprocessing around it)."""
    out = []
    for _ in range(runs):
        read_end, write_end = os.pipe()
        scratch = containment.prepare_scratch()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            started = time.perf_counter()
            containment.enter(Policy(overlays=(str(ROOT),)), scratch)
            os.write(write_end, f"{time.perf_counter() - started:.6f}".encode())
            os._exit(0)
        os.close(write_end)
        out.append(float(os.read(read_end, 64).decode()))
        os.close(read_end)
        os.waitpid(pid, 0)
        containment.remove_scratch(scratch)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--trace", action="store_true", help="also time a small model's trace")
    parser.add_argument("--codec", action="store_true", help="also time the answer of an 80-layer Llama's trace")
    args = parser.parse_args()
    cases: list[tuple[str, str, dict, str, Any]] = [("noop/spawn", "os:getpid", {}, "spawn", int),
                                                    ("noop/forkserver", "os:getpid", {}, "forkserver", int)]
    tmp = tempfile.mkdtemp(prefix="opscan-bench-")
    if args.trace:
        model = Path(tmp) / "tiny_model.py"
        model.write_text(MODEL)
        cases.append(("trace/spawn", "opscan.targets.loader:trace_target",
                      {"target": f"{model}:build", "project_root": tmp}, "spawn", ModelTrace))
    print(f"python {sys.version.split()[0]}, {os.uname().sysname} {os.uname().release}, "
          f"{os.cpu_count()} cpus, {args.runs} runs each (median seconds)")
    for name, func, kwargs, method, returns in cases:
        plain, contained = [], []
        _one(func, kwargs, method, False, returns)   # warm the page cache and the forkserver
        for _ in range(args.runs):
            plain.append(_one(func, kwargs, method, False, returns))
            contained.append(_one(func, kwargs, method, True, returns))
        a, b = statistics.median(plain), statistics.median(contained)
        print(f"{name:16s} without {a:7.3f}  with {b:7.3f}  cost {b - a:+7.3f}  (max with {max(contained):.3f})")
    inside = enter_seconds(args.runs)
    print(f"{'enter':16s} median {statistics.median(inside):.4f}  max {max(inside):.4f}  (inside the child)")
    if args.codec:
        codec_seconds(Path(tmp), args.runs)
    containment.remove_scratch(tmp)


def codec_seconds(tmp: Path, runs: int) -> None:
    """An 80-layer copy of examples/models/hf/llama-tiny traced here; its answer encoded and decoded."""
    import json
    import shutil

    from opscan.containment import codec
    from opscan.targets.loader import trace_target
    from opscan.trace import prepare

    folder = tmp / "llama80"
    shutil.copytree(ROOT / "examples" / "models" / "hf" / "llama-tiny", folder)
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] = 80
    (folder / "config.json").write_text(json.dumps(config))
    prepare()
    trace = trace_target(f"hf:{folder}", mode="both")
    encode, decode = [], []
    for _ in range(runs):
        started = time.perf_counter()
        data = codec.dumps(trace)
        encode.append(time.perf_counter() - started)
        started = time.perf_counter()
        assert codec.loads(data, ModelTrace) == trace
        decode.append(time.perf_counter() - started)
    print(f"{'codec':16s} {len(trace.ops)} ops, {len(data)} bytes; encode {statistics.median(encode):.4f}  "
          f"decode {statistics.median(decode):.4f}  (median seconds, 80-layer Llama, in this process)")


if __name__ == "__main__":
    main()
