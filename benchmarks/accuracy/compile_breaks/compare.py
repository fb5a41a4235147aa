"""Graph breaks of torch.compile scripts: `opscan run` against a direct torch._dynamo.explain run.

Usage:
    python benchmarks/accuracy/compile_breaks/compare.py [--set dev|heldout|all] [--json OUT]

For each script of the set (dev/ or heldout/, written for this benchmark; heldout/ was written
last and never tuned on):
  - direct: the script runs for real on the CPU in a fresh process; torch.compile is replaced by a
    recorder that, on the first call of each compiled module or function, runs
    `torch._dynamo.explain(the real module or function)(*the real arguments)` and then calls it
    eagerly. Recorded per region (the line of the torch.compile call or decorator): explain's
    graph_count, graph_break_count and each break reason's innermost frame in the script (line).
    This harness shares no code with opscan.
  - opscan: `opscan run --format json --exit-zero -- python SCRIPT` (the contained child, the imitated
    neuron device, fake tensors); its `compile.torch_compile.regions`.
  - the same script with torch.compile made the identity (so the run is the one opscan made before
    it explained anything): the time the graph-break check adds.
A region matches when its graph_break_count and its multiset of break lines are equal. Prints one
row per region and the totals; docs/compile.md has the results.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

DIRECT = r'''
import json, os, runpy, sys
import torch, torch._dynamo as dynamo
from torch import nn

script = sys.argv[1]
regions = {}

def where():
    frame = sys._getframe(2)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) != os.path.abspath(script):
        frame = frame.f_back
    return frame.f_lineno if frame is not None else 0

def explain(region, fn, args, kwargs):
    if region["explained"]:
        return
    region["explained"] = True
    out = dynamo.explain(fn)(*args, **kwargs)
    region["graphs"] = out.graph_count
    region["graph_break_count"] = out.graph_break_count
    lines = []
    for reason in out.break_reasons:
        frames = [f for f in reason.user_stack if os.path.abspath(f.filename) == os.path.abspath(script)]
        lines.append(frames[-1].lineno if frames else 0)
    region["break_lines"] = sorted(lines)

def compile(model=None, *args, **kwargs):
    line = where()
    def wrap(target):
        region = regions.setdefault(line, {"explained": False})
        if isinstance(target, nn.Module):
            def pre(mod, a, k):
                if not region.get("busy"):
                    region["busy"] = True
                    try:
                        explain(region, mod, a, k)
                    finally:
                        region["busy"] = False
            target.register_forward_pre_hook(pre, with_kwargs=True)
            return target
        owner = getattr(target, "__self__", None)
        if isinstance(owner, nn.Module) and target.__name__ == "_call_impl":
            wrap(owner)
            return owner._call_impl
        def compiled(*a, **k):
            if not region.get("busy"):
                region["busy"] = True
                try:
                    explain(region, target, a, k)
                finally:
                    region["busy"] = False
            return target(*a, **k)
        return compiled
    return wrap if model is None else wrap(model)

torch.compile = compile
sys.argv = [script]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
import contextlib
with contextlib.redirect_stdout(sys.stderr):
    runpy.run_path(script, run_name="__main__")
print(json.dumps({str(k): {kk: vv for kk, vv in v.items() if kk != "busy"} for k, v in regions.items()}))
'''

IDENTITY = ("import torch as _t\n"
            "_t.compile = lambda m=None, *a, **k: m if m is not None else (lambda f: f)\n"
            "_t.nn.Module.compile = lambda self, *a, **k: None\n")


def direct(script: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", DIRECT, str(script)], capture_output=True, text=True,
                         cwd=script.parent, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"direct run of {script.name} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def opscan(script: Path) -> tuple[dict, float]:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "opscan", "run", "--format", "json", "--exit-zero", "--",
                          "python", script.name], capture_output=True, text=True, cwd=script.parent, timeout=900)
    seconds = time.perf_counter() - started
    if out.returncode != 0:
        raise RuntimeError(f"opscan run of {script.name} failed:\n{out.stderr[-2000:]}")
    doc = json.loads(out.stdout)
    tc = doc["compile"]["torch_compile"] or {"regions": []}
    regions = {}
    for r in tc["regions"]:
        lines = sorted(ln for b in r["graph_breaks"] if Path(b["path"]).name == script.name
                       for ln in [b["line"]] * b["count"])
        other = sum(b["count"] for b in r["graph_breaks"] if Path(b["path"]).name != script.name)
        regions[str(r["line"])] = {"explained": r["explained"], "graphs": r["graphs"],
                                   "graph_break_count": r["graph_break_count"],
                                   "break_lines": sorted(lines + [0] * other),
                                   "not_explained": r["not_explained"]}
    return regions, seconds


def eager_seconds(script: Path) -> float:
    """`opscan run` of the script with torch.compile the identity (no region, nothing explained)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / script.name
        copy.write_text(IDENTITY + script.read_text())
        (Path(tmp) / "pyproject.toml").write_text("")
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "opscan", "run", "--format", "json", "--exit-zero", "--",
                        "python", copy.name], capture_output=True, text=True, cwd=tmp, timeout=900)
        return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("dev", "heldout", "all"), default="dev")
    parser.add_argument("--json", default=None, help="write the rows as JSON to this file")
    args = parser.parse_args(argv)
    sets = ("dev", "heldout") if args.set == "all" else (args.set,)
    rows, totals = [], {}
    for name in sets:
        for script in sorted((HERE / name).glob("*.py")):
            truth = direct(script)
            found, seconds = opscan(script)
            eager = eager_seconds(script)
            for line in sorted(set(truth) | set(found), key=int):
                t, f = truth.get(line), found.get(line)
                match = (t is not None and f is not None and f["explained"]
                         and t["graph_break_count"] == f["graph_break_count"] and t["break_lines"] == f["break_lines"])
                rows.append({"set": name, "script": script.name, "region_line": int(line),
                             "direct_breaks": t and t["graph_break_count"],
                             "opscan_breaks": f and f["graph_break_count"],
                             "direct_lines": t and t["break_lines"], "opscan_lines": f and f["break_lines"],
                             "match": match, "note": (f or {}).get("not_explained", "") if f else "region not found"})
            total = totals.setdefault(name, {"regions": 0, "matched": 0, "direct_breaks": 0, "opscan_breaks": 0,
                                             "seconds": 0.0, "eager_seconds": 0.0})
            total["seconds"] += seconds
            total["eager_seconds"] += eager
    for row in rows:
        total = totals[row["set"]]
        total["regions"] += 1
        total["matched"] += row["match"]
        total["direct_breaks"] += row["direct_breaks"] or 0
        total["opscan_breaks"] += row["opscan_breaks"] or 0
    print(f"{'set':8} {'script':22} {'line':>4} {'direct':>6} {'opscan':>6}  lines (direct / opscan)  match")
    for r in rows:
        print(f"{r['set']:8} {r['script']:22} {r['region_line']:>4} {str(r['direct_breaks']):>6} "
              f"{str(r['opscan_breaks']):>6}  {r['direct_lines']} / {r['opscan_lines']}  "
              f"{'yes' if r['match'] else 'NO ' + r['note']}")
    for name, t in totals.items():
        added = (t["seconds"] - t["eager_seconds"]) / t["eager_seconds"] * 100 if t["eager_seconds"] else 0.0
        print(f"{name}: {t['matched']}/{t['regions']} regions match; graph breaks direct {t['direct_breaks']}, "
              f"opscan {t['opscan_breaks']}; opscan run {t['seconds']:.1f} s, with torch.compile the identity "
              f"{t['eager_seconds']:.1f} s (+{added:.0f}%)")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "totals": totals}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
