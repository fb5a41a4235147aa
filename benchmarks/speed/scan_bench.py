"""Times `opscan scan` against ruff, TorchFix and Fixit on the same trees; prints a markdown table.

Every measurement is a whole process started with subprocess (start-up included), output sent to
/dev/null. Reported per (tree, tool): median / min / max wall seconds over the runs, peak RSS of
the largest single process (wait4's ru_maxrss), CPU seconds (user + sys of the process and its
children, which machine load inflates far less than wall time) and peak RSS summed over the process tree
(sampled from /proc every 20 ms, so worker pools count in full). Tools:

  opscan-cold     no cached results: the cache's results folder and its report replays are
                  emptied before each run; the fix check's remembered torch answers
                  (probe-*.json) stay, as on any machine where opscan ran once with this torch
                  (so torch is not imported)
  opscan-warm     unchanged tree, cache and report replay filled by untimed runs first (a warm
                  run of an unchanged tree replays the last output: NOTE [report replay])
  opscan-warm-rescan  (--gate only) the same with the replays put aside: the per-file cache path
  opscan-touch    one file (the largest, or --touch) gets a new comment line before each run
  opscan-nocache  --no-cache: nothing read or written, torch imported for the fix check (a first
                  run ever on the machine)
  opscan-jobs1    everything cold (cache folder removed), --jobs 1 (no workers)
  ruff-all        ruff check --select ALL --no-cache, default (full) output
  ruff-all-concise      the same with --output-format concise (less output to format)
  ruff-default    ruff check (default rules) --no-cache
  ruff-default-warm     ruff's own cache filled first
  torchfix        torchfix TREE (all cores); slow: --slow-runs times (default 1)
  fixit           fixit lint TREE; slow: --slow-runs times (default 1)

A slow tool on a tree with more than --partial-lines lines (default 0 = never) runs on a
deterministic sample of files (every k-th in path order) of about that many lines, and its time is
extrapolated by lines (marked "extrapolated"). --memory-scaling TREE scans 1x, 2x and 4x copies
(hard links) of TREE cold and reports peak RSS: flat means streamed.

Results are merged into --results (JSON, keyed by tree and tool), so slow tools measured once can
be combined with fast ones measured later; --table prints the table from that file alone.
--interleave TREE times the two goal pairs of issue 26 in one run, interleaved round by round
(opscan cold, ruff --select ALL --no-cache, opscan warm --format json, opscan warm with the
terminal report (`opscan-warm-terminal`: the default format, what a user sees), ruff default with
its cache warm), so
that machine load hits both sides of each ratio alike; it reports per-pair medians, the median
of the per-round ratios, and the 1-minute load average around each run.
Example (what docs/benchmarks.md used):
  python benchmarks/speed/scan_bench.py --tree transformers=/path/to/transformers --runs 5 \
      --tools opscan-cold,opscan-warm,opscan-touch,ruff-all,ruff-default,ruff-default-warm

--gate [NAME=TREE] is the speed check of CI (issue 40, docs/ci.md "Speed gate"): the interleaved
rounds above on the tree (default: transformers' source as installed in this environment, which
the `dev` extra pins; ruff from the same environment), then the pre-commit hook on one file of it
(`opscan scan --concise FILE`, the tree's largest, with the tree's cache warm and after that file
changed); it prints each ratio against its goal (GOALS: cold <= 1.0x ruff --select ALL, warm <=
0.25x ruff's default rules, the hook under 1 s) and exits 1 only on a gross regression (LIMITS:
the median cold ratio over 2.0, the median warm ratio over 1.0; warm is the worse of the JSON and
the terminal report), so a loaded CI machine does not
fail it while a slowdown like issue 40's (cold 2.5x, warm 6.6-10x) does.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

FAST = ["opscan-cold", "opscan-warm", "opscan-touch", "ruff-all", "ruff-all-concise",
        "ruff-default", "ruff-default-warm"]
SLOW = ["torchfix", "fixit"]
ALL = FAST + ["opscan-nocache", "opscan-jobs1"] + SLOW


# -- measuring one process ---------------------------------------------------------------------
def _tree_rss_kb(pid: int) -> int:
    total = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    stack.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return total


def measure(cmd: list[str], timeout: float | None = None, env: dict | None = None) -> dict:
    """Run `cmd` once; wall seconds, exit code, peak RSS (largest process, and summed tree)."""
    err = tempfile.TemporaryFile()
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        proc.kill()

    timer = threading.Timer(timeout, kill) if timeout else None
    if timer:
        timer.start()
    _, status, usage = os.wait4(proc.pid, 0)  # reaps it and gives its own rusage
    wall = time.perf_counter() - start
    if timer:
        timer.cancel()
    timed_out = killed.is_set()
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    err.seek(0)
    tail = err.read()[-400:].decode(errors="replace").strip().splitlines()[-1:] or [""]
    return {"seconds": wall, "rc": proc.returncode, "maxrss_mb": usage.ru_maxrss / 1024,
            "tree_rss_mb": peak[0] / 1024, "timed_out": timed_out, "stderr_tail": tail[0],
            "cpu": usage.ru_utime + usage.ru_stime,
            "load": load}


# -- trees -------------------------------------------------------------------------------------
def py_files(root: Path) -> list[Path]:
    skip = {".git", ".opscan_cache", ".ruff_cache", "__pycache__"}
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        out.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py"))
    return out


def count_lines(files: list[Path]) -> int:
    return sum(p.read_bytes().count(b"\n") for p in files)


def sample_files(files: list[Path], target_lines: int) -> tuple[list[Path], int]:
    """Every k-th file (path order) so that the sample has about target_lines lines."""
    total = count_lines(files)
    step = max(1, round(total / target_lines))
    chosen = files[::step]
    return chosen, count_lines(chosen)


# -- commands ----------------------------------------------------------------------------------
def opscan_cmd(args, tree: Path, cache: Path, extra: list[str], fmt: str = "json") -> list[str]:
    """`opscan scan TREE`; fmt "terminal" is the default report (rich, what a user sees), sent to a
    pipe here, so it is rendered at rich's default width for a non-terminal (80 columns)."""
    fmt_args = [] if fmt == "terminal" else ["--format", fmt]
    return [args.python, "-m", "opscan", "scan", str(tree), *fmt_args, "--cache-dir", str(cache), *extra]


def ruff_cmd(args, targets: list[str], select_all: bool, concise: bool, cache: Path | None):
    cmd = [str(Path(args.bench_bin) / "ruff"), "check", "--isolated", "--exit-zero", "-q"]
    if select_all:
        cmd += ["--select", "ALL"]
    if concise:
        cmd += ["--output-format", "concise"]
    cmd += ["--cache-dir", str(cache)] if cache else ["--no-cache"]
    return cmd + targets


def slow_cmd(args, tool: str, targets: list[str]) -> list[str]:
    if tool == "torchfix":
        return [str(Path(args.bench_bin) / "torchfix"), *targets]
    return [str(Path(args.bench_bin) / "fixit"), "lint", *targets]


def run_tool(args, tool: str, name: str, tree: Path, files: list[Path], lines: int) -> dict:
    runs = args.slow_runs if tool in SLOW else args.runs
    work = Path(tempfile.mkdtemp(prefix="scan-bench-"))
    cache = work / "cache"
    results, note, before = [], "", None
    touched = None
    try:
        if tool.startswith("opscan"):
            extra = {"opscan-nocache": ["--no-cache"], "opscan-jobs1": ["--jobs", "1"]}.get(tool, [])
            extra = extra + args.opscan_arg
            cmd = opscan_cmd(args, tree, cache, extra)
            if tool in ("opscan-cold", "opscan-warm", "opscan-touch"):
                before = measure(cmd)  # fills the cache; not part of the timing
            if tool == "opscan-warm":
                measure(cmd)           # records the replay (the first run used worker processes)
            if tool == "opscan-touch":
                touched = Path(args.touch) if args.touch else max(files, key=lambda p: p.stat().st_size)
                original = touched.read_bytes()
                n_lines = original.count(b"\n")
                note = f"touched {touched.relative_to(tree)} ({n_lines} lines)"
            for n in range(runs):
                if tool == "opscan-cold":  # no results, no replay; the torch answers of the fix check stay
                    shutil.rmtree(cache / "v1", ignore_errors=True)
                    shutil.rmtree(cache / "replay", ignore_errors=True)
                elif tool == "opscan-jobs1":
                    shutil.rmtree(cache, ignore_errors=True)
                if touched is not None:
                    touched.write_bytes(original + f"# scan-bench touch {n}\n".encode())
                results.append(measure(cmd))
        elif tool.startswith("ruff"):
            warm = tool.endswith("-warm")
            cmd = ruff_cmd(args, [str(tree)], "all" in tool, "concise" in tool,
                           cache if warm else None)
            if warm:
                before = measure(cmd)
            results = [measure(cmd) for _ in range(runs)]
        else:
            targets, factor = [str(tree)], 1.0
            if args.partial_lines and lines > args.partial_lines:
                chosen, part_lines = sample_files(files, args.partial_lines)
                targets = [str(p) for p in chosen]
                factor = lines / part_lines
                note = (f"extrapolated x{factor:.1f} from {len(chosen)} files / {part_lines} lines "
                        "(every k-th file)")
            for _ in range(runs):
                result = measure(slow_cmd(args, tool, targets), timeout=args.slow_timeout)
                if result["timed_out"]:
                    note = (note + "; " if note else "") + f"stopped at {args.slow_timeout:.0f} s"
                result["measured_seconds"] = result["seconds"]
                result["seconds"] *= factor
                result["cpu"] *= factor
                results.append(result)
    finally:
        if touched is not None:
            touched.write_bytes(original)
        shutil.rmtree(work, ignore_errors=True)
    secs = [r["seconds"] for r in results]
    return {
        "tree": name, "tool": tool, "files": len(files), "lines": lines, "runs": len(results),
        "median": statistics.median(secs), "min": min(secs), "max": max(secs),
        "cpu_median": statistics.median(r["cpu"] for r in results),
        "maxrss_mb": max(r["maxrss_mb"] for r in results),
        "tree_rss_mb": max(r["tree_rss_mb"] for r in results),
        "rc": sorted({r["rc"] for r in results}), "note": note,
        "all_seconds": secs, "stderr_tail": results[-1]["stderr_tail"],
        "fill_seconds": before["seconds"] if before else None,
        "load_1min": [round(r["load"], 2) for r in results],
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def interleaved(args, name: str, tree: Path) -> dict:
    """Issue 26's goal pairs, one round = one run of each tool in turn; medians and per-round ratios."""
    work = Path(tempfile.mkdtemp(prefix="scan-bench-il-"))
    cache, ruff_cache = work / "cache", work / "ruff"
    cold = opscan_cmd(args, tree, cache, list(args.opscan_arg))
    terminal = opscan_cmd(args, tree, cache, list(args.opscan_arg), fmt="terminal")
    ruff_all = ruff_cmd(args, [str(tree)], True, False, None)
    ruff_warm = ruff_cmd(args, [str(tree)], False, False, ruff_cache)
    rounds: list[dict] = []
    # Byte-compile opscan first, as an installed package is: an environment with
    # PYTHONDONTWRITEBYTECODE (this machine's) would otherwise compile its sources in every run.
    package = subprocess.run([args.python, "-c", "import opscan, os; print(os.path.dirname(opscan.__file__))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([args.python, "-m", "compileall", "-q", package], check=True, stdout=subprocess.DEVNULL)
    kept = work / "replay-kept"

    def without_replay(cmd: list[str]) -> dict:
        """A run with the replay records of earlier runs put aside (NOTE [report replay]): cold (with
        the results folder emptied too) or the per-file warm path; what it records is dropped."""
        shutil.rmtree(kept, ignore_errors=True)
        if (cache / "replay").exists():
            (cache / "replay").rename(kept)
        try:
            return measure(cmd)
        finally:
            shutil.rmtree(cache / "replay", ignore_errors=True)
            if kept.exists():
                kept.rename(cache / "replay")

    try:
        measure(cold)          # fills the probe answers and the cache; untimed
        measure(cold)          # ... and the replay records of the two warm invocations; untimed
        measure(terminal)
        measure(ruff_warm)     # fills ruff's cache; untimed
        for n in range(args.runs):
            shutil.rmtree(cache / "v1", ignore_errors=True)
            row = {"opscan-cold": without_replay(cold), "ruff-all": measure(ruff_all),
                   "opscan-warm": measure(cold), "opscan-warm-terminal": measure(terminal),
                   "opscan-warm-rescan": without_replay(cold),
                   "ruff-default-warm": measure(ruff_warm)}
            rounds.append(row)
            print(f"  round {n + 1}: " + ", ".join(f"{k} {v['seconds']:.2f} s" for k, v in row.items())
                  + f", load {row['opscan-cold']['load']:.1f}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(r[k]["seconds"] for r in rounds) for k in rounds[0]}
    return {
        "tree": name, "files": len(py_files(tree)), "runs": len(rounds), "median": med,
        "cpu_median": {k: statistics.median(r[k]["cpu"] for r in rounds) for k in rounds[0]},
        "cold_ratio_median": statistics.median(r["opscan-cold"]["seconds"] / r["ruff-all"]["seconds"] for r in rounds),
        "warm_ratio_median": statistics.median(r["opscan-warm"]["seconds"] / r["ruff-default-warm"]["seconds"]
                                               for r in rounds),
        "warm_terminal_ratio_median": statistics.median(
            r["opscan-warm-terminal"]["seconds"] / r["ruff-default-warm"]["seconds"] for r in rounds),
        "warm_rescan_ratio_median": statistics.median(
            r["opscan-warm-rescan"]["seconds"] / r["ruff-default-warm"]["seconds"] for r in rounds),
        "rc": sorted({v["rc"] for r in rounds for v in r.values()}),
        "load_1min": [round(r[k]["load"], 2) for r in rounds for k in r],
        "rounds": [{k: round(v["seconds"], 3) for k, v in r.items()} for r in rounds],
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


GOALS = {"cold": 1.0, "warm": 0.25, "hook": 1.0}      # ratios to ruff; the hook in seconds
LIMITS = {"cold": 2.0, "warm": 1.0}                     # CI fails beyond these (gross regressions)


def regressions(cold: float, warm: float, warm_terminal: float = 0.0, warm_rescan: float = 0.0) -> list[str]:
    """The ratios past CI's limits (LIMITS): a gross regression, not a goal missed. Warm is judged
    on the worse of its two reports (JSON, and the terminal report a user sees by default) and of
    the per-file warm path (the replay put aside: a slower scan after any edit is not hidden by it)."""
    warm = max(warm, warm_terminal, warm_rescan)
    return [k for k, ratio in (("cold", cold), ("warm", warm)) if ratio > LIMITS[k]]


def hook_seconds(args, tree: Path, runs: int) -> dict:
    """The pre-commit hook on one file of `tree` (its largest), in a copy of the tree: `opscan scan
    --concise FILE`, the tree's cache warm; the file unchanged, then changed before each run."""
    work = Path(tempfile.mkdtemp(prefix="scan-bench-hook-"))
    copy = work / "tree"
    shutil.copytree(tree, copy, ignore=shutil.ignore_patterns("__pycache__"))
    tree = copy
    target = max(py_files(tree), key=lambda p: p.stat().st_size)
    original = target.read_bytes()
    cache = work / "cache"
    base = [args.python, "-m", "opscan", "scan", "--cache-dir", str(cache)]
    out: dict = {"file": str(target.relative_to(tree)), "lines": original.count(b"\n")}
    try:
        measure(base + [str(tree), "--format", "json"])            # the tree's cache, as after a first run
        hook = base + ["--concise", "--root", str(tree), str(target)]
        out["unchanged"] = [measure(hook)["seconds"] for _ in range(runs)]
        changed = []
        for n in range(runs):
            target.write_bytes(original + f"# scan-bench hook {n}\n".encode())
            changed.append(measure(hook)["seconds"])
        out["changed"] = changed
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def gate(args, spec: str) -> int:
    """The speed check of CI (module docstring, --gate): prints the ratios against the goals,
    returns 1 on a gross regression."""
    name, _, path = spec.partition("=")
    if not path:
        import importlib.util

        found = importlib.util.find_spec(name or "transformers")     # located, never imported
        if found is None or not found.origin:
            print(f"scan-bench: no tree given and {name or 'transformers'} is not installed", file=sys.stderr)
            return 2
        name, path = name or "transformers", str(Path(found.origin).parent)
    tree = Path(path).resolve()
    row = interleaved(args, name, tree)
    hook = hook_seconds(args, tree, args.runs)
    row["hook"] = hook
    # The warm goal and limit hold for both reports: JSON (what tools read) and the terminal report
    # (what a user sees by default); the worse of the two is judged.
    cold, warm_json, warm_term = row["cold_ratio_median"], row["warm_ratio_median"], row["warm_terminal_ratio_median"]
    slowest_hook = max(hook["unchanged"] + hook["changed"])
    lines = [
        f"{name}: {row['files']} files, {row['runs']} interleaved rounds, load {min(row['load_1min'])}-"
        f"{max(row['load_1min'])} (1-minute average: wall times on a loaded machine are inflated)",
        f"  cold: opscan {row['median']['opscan-cold']:.2f} s / ruff --select ALL {row['median']['ruff-all']:.2f} s"
        f" = {cold:.2f}x (goal <= {GOALS['cold']}x, CI fails over {LIMITS['cold']}x)",
        f"  warm: opscan --format json {row['median']['opscan-warm']:.2f} s, terminal report "
        f"{row['median']['opscan-warm-terminal']:.2f} s / ruff default (cache warm) "
        f"{row['median']['ruff-default-warm']:.2f} s = {warm_json:.2f}x json, {warm_term:.2f}x terminal "
        f"(goal <= {GOALS['warm']}x, CI fails over {LIMITS['warm']}x, the worse of the two judged)",
        f"  warm without the report replay (the per-file cache path, as after an edit elsewhere; "
        f"no goal, CI fails over {LIMITS['warm']}x): json {row['median']['opscan-warm-rescan']:.2f} s = "
        f"{row['warm_rescan_ratio_median']:.2f}x",
        f"  pre-commit hook on {hook['file']} ({hook['lines']} lines): unchanged "
        f"{', '.join(f'{s:.2f}' for s in hook['unchanged'])} s, changed "
        f"{', '.join(f'{s:.2f}' for s in hook['changed'])} s (goal < {GOALS['hook']:.0f} s)",
        "  goals: " + ", ".join(f"{k} {'met' if ok else 'NOT met'}" for k, ok in
                                (("cold", cold <= GOALS["cold"]), ("warm json", warm_json <= GOALS["warm"]),
                                 ("warm terminal", warm_term <= GOALS["warm"]),
                                 ("hook", slowest_hook < GOALS["hook"]))),
    ]
    print("\n".join(lines), flush=True)
    if args.results:
        Path(args.results).write_text(json.dumps(row, indent=1) + "\n")
    failed = regressions(cold, warm_json, warm_term, row["warm_rescan_ratio_median"])
    if failed:
        print(f"scan-bench: gross speed regression ({', '.join(failed)}): see docs/benchmarks.md", file=sys.stderr)
        return 1
    return 0


def memory_scaling(args, name: str, tree: Path) -> list[dict]:
    """Cold opscan (--no-cache) on 1x, 2x, 4x hard-linked copies of `tree`."""
    out = []
    base = Path(tempfile.mkdtemp(prefix="scan-bench-scale-"))
    try:
        for copies in (1, 2, 4):
            root = base / f"{copies}x"
            for c in range(copies):
                shutil.copytree(tree, root / f"copy{c}", copy_function=os.link)
            files = py_files(root)
            cmd = [args.python, "-m", "opscan", "scan", str(root), "--format", "json",
                   "--no-cache", *args.opscan_arg]
            res = [measure(cmd) for _ in range(args.scale_runs)]
            tool = " ".join(["opscan-nocache", *args.opscan_arg])
            out.append({"tree": f"{name} x{copies}", "tool": tool, "files": len(files),
                        "lines": count_lines(files), "runs": len(res),
                        "median": statistics.median(r["seconds"] for r in res),
                        "min": min(r["seconds"] for r in res), "max": max(r["seconds"] for r in res),
                        "cpu_median": statistics.median(r["cpu"] for r in res),
                        "maxrss_mb": max(r["maxrss_mb"] for r in res),
                        "tree_rss_mb": max(r["tree_rss_mb"] for r in res),
                        "rc": sorted({r["rc"] for r in res}), "note": "memory scaling",
                        "load_1min": [round(r["load"], 2) for r in res],
                        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())})
            print(f"  {out[-1]['tree']}: {out[-1]['median']:.2f} s, "
                  f"{out[-1]['maxrss_mb']:.0f} MB largest / {out[-1]['tree_rss_mb']:.0f} MB sum",
                  file=sys.stderr)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return out


# -- output ------------------------------------------------------------------------------------
def table(rows: list[dict]) -> str:
    head = ("| tree | files | lines | tool | runs | median s | min s | max s | CPU s | peak RSS MB "
            "(largest proc) | peak RSS MB (all procs) | exit | load | note |")
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        lines.append(
            f"| {r['tree']} | {r['files']} | {r['lines']:,} | {r['tool']} | {r['runs']} | "
            f"{r['median']:.2f} | {r['min']:.2f} | {r['max']:.2f} | {r.get('cpu_median', 0):.1f} | "
            f"{r['maxrss_mb']:.0f} | "
            f"{r['tree_rss_mb']:.0f} | {','.join(map(str, r['rc']))} | {_load(r)} | "
            f"{r.get('note', '')} |")
    return "\n".join(lines)


def _load(row: dict) -> str:
    loads = row.get("load_1min") or []
    return f"{statistics.median(loads):.1f}" if loads else "?"


def ratios(rows: list[dict]) -> str:
    by = {(r["tree"], r["tool"]): r["median"] for r in rows}
    cpu = {(r["tree"], r["tool"]): r.get("cpu_median") for r in rows}
    out = []
    for tree in sorted({r["tree"] for r in rows}):
        def get(tool):
            return by.get((tree, tool))
        pairs = [("opscan-cold", "ruff-all", "cold / ruff --select ALL (goal <= 3)"),
                 ("opscan-cold", "ruff-all-concise", "cold / ruff --select ALL concise"),
                 ("opscan-warm", "ruff-default", "warm / ruff default --no-cache (goal <= 1)"),
                 ("opscan-warm", "ruff-default-warm", "warm / ruff default, its cache warm"),
                 ("opscan-touch", "opscan-warm", "touched-one-file / warm"),
                 ("torchfix", "opscan-cold", "TorchFix / opscan cold (goal >= 100)"),
                 ("fixit", "opscan-cold", "Fixit / opscan cold (goal >= 100)")]
        for a, b, label in pairs:
            if get(a) and get(b):
                line = f"- {tree}: {label}: {get(a) / get(b):.2f}"
                if cpu.get((tree, a)) and cpu.get((tree, b)):
                    line += f" (CPU time: {cpu[(tree, a)] / cpu[(tree, b)]:.2f})"
                out.append(line)
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    p.add_argument("--tools", default=",".join(FAST), help=f"comma list of {','.join(ALL)}")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--slow-runs", type=int, default=1)
    p.add_argument("--skip-slow", action="store_true", help="drop torchfix and fixit")
    p.add_argument("--slow-timeout", type=float, default=None)
    p.add_argument("--partial-lines", type=int, default=0)
    p.add_argument("--touch", default="", help="file to touch for opscan-touch")
    p.add_argument("--memory-scaling", metavar="TREE_NAME", default="")
    p.add_argument("--scale-runs", type=int, default=1)
    p.add_argument("--interleave", metavar="NAME=PATH", default="",
                   help="issue 26's goal pairs, interleaved (see the module docstring); JSON to --results")
    p.add_argument("--gate", metavar="NAME[=PATH]", nargs="?", const="transformers", default=None,
                   help="CI's speed check (module docstring): exit 1 on a gross regression")
    p.add_argument("--python", default=sys.executable, help="interpreter with opscan installed")
    p.add_argument("--opscan-arg", action="append", default=[], help="extra opscan scan argument")
    p.add_argument("--bench-bin", default=str(Path(sys.executable).parent),
                   help="folder with ruff, torchfix and fixit")
    p.add_argument("--results", default="", help="JSON file to merge results into")
    p.add_argument("--table", action="store_true", help="only print the table of --results")
    args = p.parse_args()

    if args.gate is not None:
        return gate(args, args.gate)
    if args.interleave:
        name, _, path = args.interleave.partition("=")
        row = interleaved(args, name, Path(path).resolve())
        if args.results:
            Path(args.results).write_text(json.dumps(row, indent=1) + "\n")
        print(json.dumps(row, indent=1))
        return 0
    stored: list[dict] = []
    if args.results and Path(args.results).exists():
        stored = json.loads(Path(args.results).read_text())
    if not args.table:
        tools = [t for t in args.tools.split(",") if t]
        if args.skip_slow:
            tools = [t for t in tools if t not in SLOW]
        unknown = set(tools) - set(ALL)
        if unknown:
            p.error(f"unknown tools: {sorted(unknown)}")
        new = []
        for spec in args.tree:
            name, _, path = spec.partition("=")
            tree = Path(path).resolve()
            files = py_files(tree)
            lines = count_lines(files)
            for tool in tools:
                print(f"{name}: {tool} ...", file=sys.stderr, flush=True)
                new.append(run_tool(args, tool, name, tree, files, lines))
                print(f"  median {new[-1]['median']:.2f} s {new[-1]['all_seconds']}, rc "
                      f"{new[-1]['rc']} {new[-1]['stderr_tail']}", file=sys.stderr, flush=True)
            if args.memory_scaling == name:
                new.extend(memory_scaling(args, name, tree))
        keys = {(r["tree"], r["tool"]) for r in new}
        stored = [r for r in stored if (r["tree"], r["tool"]) not in keys] + new
        if args.results:
            Path(args.results).write_text(json.dumps(stored, indent=1) + "\n")
    print(table(stored))
    print()
    print(ratios(stored))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
