"""The compile forecast against a REAL CPU run: per-step signature sets, the ops whose shapes change,
and the forecast's added time to `opscan run` (docs/run.md, "Compile forecast: how it is measured").

Usage:
    python benchmarks/accuracy/compile/bench.py [--set dev|held-out|both] [--steps N] [--repeat R] [--json OUT]

Each script runs twice in this process: for real on the CPU under a TorchDispatchMode that writes every
call's signature (opscan.trace.signatures.signature: op + input shapes + dtypes, the issue's format)
per optimizer step, ending when an optimizer is about to take step N+1 as `opscan run` does; and on
fake tensors with `opscan run --device cpu --steps N`'s engine. Scored:
- Jaccard of the first step's signature sets (real: every call; opscan: signatures + host_signatures);
- recall of the ops whose shapes change: real truth = ops with a signature in step k > 1 that no earlier
  step had; opscan = the ops of `compile.varying_ops` (seen or predicted);
- false "recompiles every step" (a new shape in every later step, or data-dependent sizes) on the
  scripts labelled fixed-shape (set by reading them), judged on
  the run a user makes (`--device neuron`: host ops apart, not compiled) and on `--device cpu` (where
  the data pipeline is on the device, and a sample index is an int argument of its `select`);
- time: the fake run with the forecast, and with its recording switched off, interleaved, in CPU
  seconds of this process (`time.process_time`), best and median of R each.
DEV scripts were looked at while building; HELD_OUT ones were run once for the report.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import runpy
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "run" / "fixtures"
HERE = Path(__file__).resolve().parent

# script -> (argv, labelled fixed-shape: no signature should change between steps); labelled by reading
# the scripts, before running opscan on them
DEV = {
    FIXTURES / "pad_collate.py": ([], False),
    FIXTURES / "tail_batch.py": ([], False),
    FIXTURES / "moe_nonzero.py": ([], False),
    FIXTURES / "fixed_shape.py": ([], True),
}
HELD_OUT = {
    HERE / "heldout_moe.py": ([], False),
    FIXTURES / "gpt_train.py": (["--max-iters", "4"], True),
    FIXTURES / "gan_train.py": ([], True),
    FIXTURES / "lazy_train.py": ([], True),
}


class _Done(BaseException):
    pass


_CWD: Path | None = None   # the folder the scripts run from (None: a fresh temporary folder each run)


def real_steps(script: Path, argv: list[str], steps: int) -> list[set[tuple[str, int]]]:
    """Each optimizer step's (signature, line) pairs in a real CPU run (segments grouped as
    forecast.steps_of); the line: the innermost one of the script's folder on the stack."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    from torch.utils._python_dispatch import TorchDispatchMode

    from opscan.trace.signatures import signature

    segments: list[tuple[object, set[tuple[str, int]]]] = []
    current: set[tuple[str, int]] = set()
    counts: dict[int, int] = {}
    folder_of_script = str(script.parent)

    def line() -> int:
        """The innermost line of the script's folder on the stack (0: none)."""
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename.startswith(folder_of_script):
                return frame.f_lineno
            frame = frame.f_back
        return 0

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.name()
            if not name.startswith(("prim::device", "profiler::")):
                sig = signature(name, args, kwargs)
                if sig is not None:
                    current.add((sig, line()))
            return func(*args, **(kwargs or {}))

    def pre(optimizer, args, kwargs):
        if counts.get(id(optimizer), 0) >= steps:
            raise _Done

    def post(optimizer, args, kwargs):
        nonlocal current
        counts[id(optimizer)] = counts.get(id(optimizer), 0) + 1
        segments.append((id(optimizer), current))
        current = set()

    hooks = (register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post))
    saved = list(sys.argv), list(sys.path), os.getcwd()
    sys.argv = [str(script), *argv]
    sys.path.insert(0, str(script.parent))
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(_CWD or folder)
        try:
            with contextlib.redirect_stdout(sys.stderr), Record():
                runpy.run_path(str(script), run_name="__main__")
        except (_Done, SystemExit):
            pass
        finally:
            for hook in hooks:
                hook.remove()
            sys.argv, sys.path[:] = saved[0], saved[1]
            os.chdir(saved[2])
    width = max(1, len({k for k, _ in segments}))
    out = [set().union(*(s for _, s in segments[i:i + width])) for i in range(0, len(segments), width)]
    return out or [current]


def real_steps_apart(script: Path, argv: list[str], steps: int) -> list[set[tuple[str, int]]]:
    """real_steps in a fresh Python (no `neuron` device registered, as on a CPU-only machine: a
    loader's `pin_memory` then asks no PrivateUse1 allocator)."""
    import subprocess

    out = subprocess.run([sys.executable, __file__, "--real", str(script), "--steps", str(steps), "--", *argv],
                         capture_output=True, text=True, check=False, cwd=str(_CWD) if _CWD else None,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]),
                              "OPSCAN_BENCH_CWD": str(_CWD or "")})
    if out.returncode != 0:
        raise SystemExit(f"real run of {script} failed: {out.stderr.strip()[-800:]}")
    return [{(sig, at) for sig, at in step} for step in json.loads(out.stdout.strip().splitlines()[-1])]


def fake_run(script: Path, argv: list[str], steps: int, forecast: bool = True, device: str = "cpu",
             draws: bool = True):
    """`opscan run`'s engine; `forecast=False`: the signature recording and the number-following mode
    switched off; `draws=False`: random host ops not drawn for real (NOTE [host random stream])."""
    from opscan.trace import numbers, signatures
    from opscan.trace.run import run_mode, run_script

    saved = signatures.CompileLog.record, numbers.number_shapes, run_mode.RunMode._drawn
    if not forecast:
        signatures.CompileLog.record = lambda *a, **k: None
        numbers.number_shapes = lambda log: contextlib.nullcontext()
    if not draws:
        run_mode.RunMode._drawn = lambda *a, **k: None
    try:
        with tempfile.TemporaryDirectory() as folder:
            started = time.process_time()   # CPU seconds of this process: less swayed by a shared machine
            trace, _ = run_script(str(script), argv, device=device, steps=steps, project_root=str(script.parent),
                                  cwd=str(_CWD or folder))
            return trace, time.process_time() - started
    finally:
        signatures.CompileLog.record, numbers.number_shapes, run_mode.RunMode._drawn = saved


def changing_ops(steps: list[set[tuple[str, int]]]) -> set[str]:
    """Ops with a signature in a later step that no earlier step had, called at a line where an
    earlier step called the op too (not code first run in that step)."""
    seen: set[str] = set()
    calls: set[tuple[str, int]] = set()
    out: set[str] = set()
    for number, step in enumerate(steps):
        for sig, at in step:
            op = sig.split("(", 1)[0]
            if number and sig not in seen and (op, at) in calls:
                out.add(op)
        seen |= {sig for sig, _ in step}
        calls |= {(sig.split("(", 1)[0], at) for sig, at in step}
    return out


_TENSOR = re.compile(r"\([^()]*\):\w+")


def cache_key(sig: str) -> str:
    """The signature reduced to TorchNeuron's eager cache key: op + tensor shapes + dtypes (its ints,
    bools and strs left out: a sample index given to `select` is a value, not a shape)."""
    op, _, args = sig.partition("(")
    return op + "|" + ";".join(_TENSOR.findall(args))


_SYMBOL = re.compile(r"\bu\d+\b")


def symbolic_jaccard(forecast: set[str], real: set[str], reduce=lambda sig: sig) -> float:
    """Jaccard of the first step's signatures with opscan's unknown sizes as wildcards (the rule, fixed
    before any result was looked at): each symbol (`u0`, `u1`, ...) is written `?`; a real signature
    that is not itself among opscan's is replaced by the first (sorted) of opscan's `?` patterns it
    matches, where `?` matches any one size; then the plain Jaccard of the two sets. `reduce` is
    applied to both sides first (cache_key: the ints left out)."""
    patterns = {reduce(_SYMBOL.sub("?", sig)) for sig in forecast}
    by_op: dict[str, list[tuple[str, re.Pattern]]] = {}
    for p in sorted(patterns):
        if "?" in p:
            rx = re.compile(re.escape(p).replace(r"\?", r"-?\d+") + r"\Z")
            by_op.setdefault(p.split("(", 1)[0].split("|", 1)[0], []).append((p, rx))
    mapped = set()
    for sig in (reduce(r) for r in real):
        if sig not in patterns:
            sig = next((p for p, rx in by_op.get(sig.split("(", 1)[0].split("|", 1)[0], ()) if rx.match(sig)), sig)
        mapped.add(sig)
    return _jaccard(patterns, mapped)


def every_step(fc) -> bool:
    """The forecast says "recompiles every step": a new shape in every later step, or data-dependent sizes."""
    later = [any(n.cause != "first-run" for n in step.new) for step in fc.steps[1:]]
    return (bool(later) and all(later)) or any(v.cause == "data-dependent" for v in fc.varying)


def _jaccard(a: set, b: set) -> float:
    return round(len(a & b) / len(a | b), 4) if a | b else 1.0


def score(script: Path, argv: list[str], fixed: bool, steps: int, repeat: int) -> dict:
    real = real_steps_apart(script, argv, steps)
    trace, _ = fake_run(script, argv, steps)
    fc = trace.compile
    first = set(fc.steps[0].signatures) | set(fc.steps[0].host_signatures) if fc.steps else set()
    truth = changing_ops(real)
    found = {v.op for v in fc.varying}
    on, off = [], []
    for _ in range(repeat):   # interleaved, best of each
        on.append(fake_run(script, argv, steps)[1])
        off.append(fake_run(script, argv, steps, forecast=False)[1])
    on, off = min(on), min(off)
    device = fake_run(script, argv, steps, device="neuron")[0].compile   # the user's run: host ops apart
    real_first = {sig for sig, _ in real[0]}
    inter = first & real_first
    return {
        "script": script.name, "complete": trace.complete, "real_steps": len(real), "opscan_steps": len(fc.steps),
        "first_step_jaccard": round(len(inter) / len(first | real_first), 4) if first | real_first else 1.0,
        "first_step_real": len(real_first),
        "first_step_jaccard_cache_key": _jaccard({cache_key(x) for x in first}, {cache_key(x) for x in real_first}),
        "first_step_opscan": len(first),
        "first_step_symbols": sum(1 for x in first if _SYMBOL.search(x)),
        "first_step_jaccard_symbolic": symbolic_jaccard(first, real_first),
        "first_step_jaccard_symbolic_key": symbolic_jaccard(first, real_first, cache_key),
        "changing_ops_real": sorted(truth), "varying_ops_opscan": sorted(found),
        "recall": round(len(truth & found) / len(truth), 4) if truth else None,
        "missed": sorted(truth - found), "extra": sorted(found - truth),
        "labelled_fixed": fixed, "flagged_cpu": every_step(fc), "flagged": every_step(device),
        "varying_ops_neuron": sorted({v.op for v in device.varying}),
        "seconds_with_forecast": round(on, 3), "seconds_without": round(off, 3),
        "added_time": round(on / off - 1, 4) if off else None,
    }


# public scripts, labelled by reading them (before any run): fixed-shape or not
PUBLIC_FIXED = {"nanogpt-train": True, "examples-word-lm": False, "mingpt-adder": True}


def _public(name: str, mirrors: list[str]) -> tuple[Path, list[str], bool]:
    """A public case of benchmarks/accuracy/scripts/cases.py fetched at its pinned commit, with its fake data:
    (script, argv, labelled fixed-shape). Both runs use one prepared copy, from its folder."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "accuracy" / "scripts"))
    import run as harness
    from cases import CASES
    from fetch import fetch

    case = next(c for c in CASES if c.name == name)
    source = fetch(case.repo, harness.WORK / "src", dict(m.split("=", 1) for m in mirrors).get(case.repo))
    cwd = harness._prepare(case, source, "compile")
    global _CWD
    _CWD = cwd   # the script reads its config and data from its folder
    for extra in case.pythonpath:   # folders of the copy on the path (as `pip install -e .`)
        sys.path.insert(0, str(harness.WORK / "runs" / case.name / "compile" / extra))
    return cwd / case.command[0], list(case.command[1:]), PUBLIC_FIXED.get(name, False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--set", choices=("dev", "held-out", "both"), default="both",
                        help="the development scripts, the held-out ones (run once, at the end), or both")
    parser.add_argument("--public", action="append", default=[], metavar="CASE",
                        help="also score a public script of benchmarks/accuracy/scripts/cases.py (fetched at run "
                             "time, its fake data made), e.g. nanogpt-train; its own argv")
    parser.add_argument("--mirror", action="append", default=[], metavar="OWNER/NAME=GIT_DIR",
                        help="a local git directory holding a case's pinned commit "
                             "(benchmarks/accuracy/scripts/fetch.py)")
    parser.add_argument("--real", metavar="SCRIPT", help="(internal) print the real run's steps as JSON")
    parser.add_argument("script_argv", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--time-only", action="store_true",
                        help="only the added time, on a larger run (gpt_train.py, 4 layers, 5 steps)")
    args = parser.parse_args(argv)
    if args.real:
        if os.environ.get("OPSCAN_BENCH_CWD"):
            global _CWD
            _CWD = Path(os.environ["OPSCAN_BENCH_CWD"])
        found = real_steps(Path(args.real).resolve(), args.script_argv, args.steps)
        print(json.dumps([sorted(step) for step in found]))
        return 0
    from opscan.trace import prepare

    prepare()
    if args.time_only:
        script, argv_ = FIXTURES / "gpt_train.py", ["--max-iters", "8", "--n-layer", "4", "--n-embd", "64"]
        fake_run(script, argv_, 5)   # warm-up
        on, off, undrawn = [], [], []
        for _ in range(args.repeat):
            on.append(fake_run(script, argv_, 5)[1])
            off.append(fake_run(script, argv_, 5, forecast=False)[1])
            undrawn.append(fake_run(script, argv_, 5, draws=False)[1])
        print(json.dumps({"script": "gpt_train.py " + " ".join(argv_) + " --steps 5", "with": sorted(on),
                          "without": sorted(off), "added_time_best": round(min(on) / min(off) - 1, 4),
                          "added_time_median": round(sorted(on)[len(on) // 2] / sorted(off)[len(off) // 2] - 1, 4),
                          "without_host_draws": sorted(undrawn),
                          "host_draws_time_best": round(min(on) / min(undrawn) - 1, 4)}))
        return 0
    if args.public:
        rows = {"public": [score(*_public(name, args.mirror), args.steps, args.repeat) for name in args.public]}
    else:
        rows = {}
        if args.set in ("dev", "both"):
            rows["dev"] = [score(s, a, f, args.steps, args.repeat) for s, (a, f) in DEV.items()]
        if args.set in ("held-out", "both"):
            rows["held_out"] = [score(s, a, f, args.steps, args.repeat) for s, (a, f) in HELD_OUT.items()]
    for part, found in rows.items():
        print(f"== {part}")
        for r in found:
            print(f"{r['script']:22} J1={r['first_step_jaccard']:.3f} key={r['first_step_jaccard_cache_key']:.3f} "
                  f"sym={r['first_step_jaccard_symbolic']:.3f} symkey={r['first_step_jaccard_symbolic_key']:.3f} "
                  f"({r['first_step_real']}/{r['first_step_opscan']}, {r['first_step_symbols']} with symbols) "
                  f"recall={r['recall']} changing={len(r['changing_ops_real'])} varying={len(r['varying_ops_opscan'])} "
                  f"fixed={r['labelled_fixed']} flagged={r['flagged']} (cpu {r['flagged_cpu']}) "
                  f"time +{100 * (r['added_time'] or 0):.1f}%")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
