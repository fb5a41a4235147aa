"""The aten ops of a REAL CPU run of a script, for the same optimizer steps as `opscan run --device cpu`.

Usage:
    python benchmarks/accuracy/run_real_record.py [--steps N] [--json] -- python SCRIPT ARGS...
    python benchmarks/accuracy/run_real_record.py --compare [--steps N] -- python SCRIPT ARGS...

The script runs for real on the CPU, from the current directory, under a TorchDispatchMode that
records every op overload (`aten::add.Tensor`, the default overload as `aten::relu`), in the
script's process and in its DataLoader worker processes (each worker sends its ops back when it
ends); torch.optim's global step hooks end the run when an optimizer is about to take step N+1, as
`opscan run` does (docs/run.md). Dispatcher bookkeeping (`prim::device`, `profiler::*`) is left
out, as in the trace. `--compare` also runs `opscan run --device cpu --format json` on the same
command and prints both op sets' Jaccard index and their differences. Run it only on scripts you
trust: it executes them in this process. The benchmark of real scripts is benchmarks/accuracy/scripts/run.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import runpy
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARTIFACTS = ("prim::device", "profiler::")


class _Done(BaseException):
    pass


def record(script: str, argv: list[str], steps: int | None = 1) -> set[str]:
    """The op overloads a real run of `script argv` dispatches until its optimizers took `steps` steps."""
    from torch.optim.optimizer import register_optimizer_step_pre_hook
    from torch.utils._python_dispatch import TorchDispatchMode

    ops: set[str] = set()
    counts: dict[int, int] = {}

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.name()
            if not name.startswith(ARTIFACTS):
                ops.add(name.removesuffix(".default"))
            return func(*args, **(kwargs or {}))

    def pre(optimizer, args, kwargs):
        if steps is not None and counts.get(id(optimizer), 0) >= steps:
            raise _Done
        counts[id(optimizer)] = counts.get(id(optimizer), 0) + 1

    hook = register_optimizer_step_pre_hook(pre)
    saved = list(sys.argv), list(sys.path)
    sys.argv = [script, *argv]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    with tempfile.TemporaryDirectory(prefix="opscan-real-") as folder:
        try:
            with contextlib.redirect_stdout(sys.stderr), _workers_report(ops, folder), Record():
                runpy.run_path(script, run_name="__main__")
        except (_Done, SystemExit):
            pass
        finally:
            hook.remove()
            sys.argv, sys.path[:] = saved
        _collect_workers(folder, ops)
    return ops


@contextlib.contextmanager
def _workers_report(ops: set[str], folder: str):
    """DataLoader workers (forked with the recording mode active) write their op sets to `folder`
    when their loop ends."""
    from torch.utils.data._utils import worker

    original = worker._worker_loop

    def loop(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        finally:
            Path(folder, f"worker-{os.getpid()}.json").write_text(json.dumps(sorted(ops)))

    worker._worker_loop = loop
    try:
        yield
    finally:
        worker._worker_loop = original


def _collect_workers(folder: str, ops: set[str], wait: float = 10.0) -> None:
    """Add the ops of the workers that reported (workers shut down asynchronously: wait briefly)."""
    import gc

    from torch.utils.data.dataloader import _MultiProcessingDataLoaderIter

    for obj in gc.get_objects():   # loaders the ended run left (persistent workers, an open iterator)
        try:
            found = isinstance(obj, _MultiProcessingDataLoaderIter)
        except ReferenceError:   # a weakref.proxy whose object is gone (e.g. left by torch._dynamo)
            continue
        if found:
            obj._shutdown_workers()
    deadline = time.monotonic() + wait
    seen: set[str] = set()
    while True:
        for path in Path(folder).glob("worker-*.json"):
            if path.name not in seen:
                try:
                    ops.update(json.loads(path.read_text()))
                    seen.add(path.name)
                except ValueError:
                    continue   # still being written
        import multiprocessing

        if not multiprocessing.active_children() or time.monotonic() > deadline:
            break
        time.sleep(0.2)


def fake_ops(command: list[str], steps: int, root: Path) -> set[str]:
    """The ops `opscan run --device cpu` lists for the same command (device and host ops)."""
    out = subprocess.run([sys.executable, "-m", "opscan", "run", "--device", "cpu", "--steps", str(steps),
                          "--format", "json", "--exit-zero", "--", *command],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)}, check=False)
    if out.returncode != 0:
        raise SystemExit(f"opscan run failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    doc = json.loads(out.stdout)
    return {op["op"] for op in doc["ops"]} | {op["op"] for op in doc.get("host_ops", [])}


def jaccard(a: set[str], b: set[str]) -> float:
    """|a & b| / |a | b| (1.0 for two empty sets)."""
    return len(a & b) / len(a | b) if a | b else 1.0


def _script(command: list[str]) -> tuple[str, list[str]]:
    if command and Path(command[0]).name.startswith("python"):
        command = command[1:]
    if not command:
        raise SystemExit("expected: -- python SCRIPT ARGS...")
    return command[0], command[1:]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the op set as a JSON list")
    parser.add_argument("--compare", action="store_true", help="compare with `opscan run --device cpu`")
    args = parser.parse_args(own)
    script, script_argv = _script(command)
    if args.compare:
        root = Path(__file__).resolve().parents[2]
        fake = fake_ops(command, args.steps, root)
        real = record(script, script_argv, args.steps)
        print(json.dumps({"script": script, "jaccard": round(jaccard(real, fake), 4), "real": len(real),
                          "opscan": len(fake), "only_real": sorted(real - fake),
                          "only_opscan": sorted(fake - real)}, indent=2))
        return 0
    ops = sorted(record(script, script_argv, args.steps))
    print(json.dumps(ops) if args.json else "\n".join(ops))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
