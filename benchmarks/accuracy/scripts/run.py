"""`opscan run --device cpu` against a real CPU run, on the development set of real scripts.

Usage:
    python benchmarks/accuracy/scripts/run.py [--only NAME ...] [--held-out] [--neuron] [--json FILE]
        [--mirror OWNER/NAME=GIT_DIR ...]

For each case of cases.py (the development cases, or with `--held-out` the held-out ones): the
repository's files at the pinned commit (fetch.py), two fresh copies of them with the case's fake
data (fake_data.py); in one, the real script runs on the CPU under benchmarks/accuracy/run_real_record.py
for the case's steps; in the other, `opscan run --device cpu --steps N --format json -- python
SCRIPT ARGS`. Prints per case the op-overload sets' Jaccard index, the ops only on one side, the
wall time of each run and the load average; `--neuron` also runs `--device neuron` and says how it
ended. Run it only on scripts you trust: they run unmodified, as their authors wrote them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))

from cases import CASES, COMMITS
from fake_data import MAKERS
from fetch import fetch

WORK = HERE / ".work"
# the Python each case needs: the project's environment, or one with torchvision (env var to override)
PYTHONS = {"main": os.environ.get("OPSCAN_BENCH_PYTHON", sys.executable),
           "vision": os.environ.get("OPSCAN_BENCH_VISION_PYTHON", str(ROOT / ".venv-vision" / "bin" / "python"))}
TIMEOUT = 900


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def _prepare(case, source: Path, side: str) -> Path:
    """A fresh copy of the case's files with its fake data; returns the folder the script runs from."""
    base = WORK / "runs" / case.name / side
    shutil.rmtree(base, ignore_errors=True)
    for path in case.paths:
        src = source / path
        if src.is_dir():
            shutil.copytree(src, base / path)
        else:
            (base / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, base / path)
    cwd = base / case.cwd
    if case.data:
        MAKERS[case.data](cwd)
    return cwd


def _env(case, cwd: Path) -> dict:
    base = WORK / "runs" / case.name / cwd.relative_to(WORK / "runs" / case.name).parts[0]
    paths = [str(ROOT), *(str(base / p) for p in case.pythonpath)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "HF_HUB_OFFLINE": "1", **case.env}


def _error(stderr: str) -> str:
    """The end of a run's stderr, its paths of this machine made relative (the results are committed):
    the repository's root dropped (`benchmarks/accuracy/run_real_record.py`), the home folder as `~`."""
    text = stderr.strip()[-800:].replace(f"{ROOT}{os.sep}", "")
    home = str(Path.home())
    return text.replace(f"{home}{os.sep}", f"~{os.sep}") if home not in ("", os.sep) else text


def _timed(command: list[str], cwd: Path, env: dict) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    out = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    return out, round(time.perf_counter() - started, 1)


def real_run(case, source: Path) -> dict:
    cwd = _prepare(case, source, "real")
    python = PYTHONS[case.python]
    out, seconds = _timed([python, str(ROOT / "benchmarks" / "accuracy" / "run_real_record.py"), "--json", "--steps",
                           str(case.steps), "--", "python", *case.command], cwd, _env(case, cwd))
    if out.returncode != 0:
        return {"error": _error(out.stderr), "seconds": seconds}
    return {"ops": json.loads(out.stdout.strip().splitlines()[-1]), "seconds": seconds}


def opscan_run(case, source: Path, device: str) -> dict:
    cwd = _prepare(case, source, device)
    python = PYTHONS[case.python]
    out, seconds = _timed([python, "-m", "opscan", "run", "--device", device, "--steps", str(case.steps),
                           "--format", "json", "--exit-zero", "--timeout", str(TIMEOUT), "--", "python",
                           *case.command_for(device)], cwd, _env(case, cwd))
    if out.returncode != 0 or not out.stdout.strip():
        return {"error": _error(out.stderr), "seconds": seconds}
    doc = json.loads(out.stdout)
    trace = (doc.get("traces") or [{}])[0]
    notes = [n for n in doc.get("notes", []) if any(w in n for w in ("ended after", "ran to its end", ": stopped;"))]
    return {"ops": sorted({o["op"] for o in doc["ops"]} | {o["op"] for o in doc.get("host_ops", [])}),
            "device_ops": len({o["op"] for o in doc["ops"]}),
            "host_ops": len({o["op"] for o in doc.get("host_ops", [])}),
            "stopped_at": trace.get("stopped_at", ""), "notes": notes[:3], "seconds": seconds}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def neuron_row(case, source: Path) -> dict:
    n = opscan_run(case, source, "neuron")
    return ({"error": n["error"], "seconds": n["seconds"]} if "error" in n else
            {"device_ops": n["device_ops"], "host_ops": n["host_ops"], "stopped_at": n["stopped_at"],
             "ended": n["notes"][:1], "seconds": n["seconds"], "load": _load()})


def measure(case, source: Path, neuron: bool) -> dict:
    row = {"case": case.name, "repo": case.repo, "commit": COMMITS[case.repo][:10],
           "script": f"{case.cwd}/{case.command[0]}".removeprefix("./"), "steps": case.steps,
           "held_out": case.held_out, "load_before": _load()}
    real = real_run(case, source)
    fake = opscan_run(case, source, "cpu")
    row.update(real_seconds=real["seconds"], opscan_seconds=fake["seconds"])
    if "error" in real or "error" in fake:
        row["error"] = {"real": real.get("error"), "opscan": fake.get("error")}
    else:
        r, f = set(real["ops"]), set(fake["ops"])
        row.update(real_ops=len(r), opscan_ops=len(f), jaccard=round(jaccard(r, f), 4),
                   only_real=sorted(r - f), only_opscan=sorted(f - r), stopped_at=fake["stopped_at"],
                   ended=fake["notes"][:1])
    if neuron:
        row["neuron"] = neuron_row(case, source)
    row["load_after"] = _load()
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    parser.add_argument("--held-out", action="store_true", help="run the held-out cases instead")
    parser.add_argument("--neuron", action="store_true", help="also run --device neuron")
    parser.add_argument("--neuron-only", action="store_true", help="only run --device neuron")
    parser.add_argument("--json", metavar="FILE", help="write the rows as JSON")
    parser.add_argument("--mirror", action="append", default=[], metavar="OWNER/NAME=GIT_DIR")
    args = parser.parse_args(argv)
    mirrors = dict(m.split("=", 1) for m in args.mirror)
    cases = [c for c in CASES if (c.name in args.only if args.only else c.held_out == args.held_out)]
    rows = []
    for case in cases:
        source = fetch(case.repo, WORK, mirrors.get(case.repo))
        row = {"case": case.name, "neuron": neuron_row(case, source)} if args.neuron_only else \
            measure(case, source, args.neuron)
        rows.append(row)
        print(json.dumps(row, indent=1), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    print("\n| case | steps | real | opscan | Jaccard | only real | only opscan | s real | s opscan | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        if args.neuron_only:
            print(f"| {row['case']} | neuron | {json.dumps(row['neuron'])} |")
            continue
        if "error" in row:
            print(f"| {row['case']} | {row['steps']} | error | | | | | {row['real_seconds']} | "
                  f"{row['opscan_seconds']} | {row['load_before']} |")
            continue
        print(f"| {row['case']} | {row['steps']} | {row['real_ops']} | {row['opscan_ops']} | {row['jaccard']:.2f} | "
              f"{', '.join(row['only_real']) or '-'} | {', '.join(row['only_opscan']) or '-'} | "
              f"{row['real_seconds']} | {row['opscan_seconds']} | {row['load_before']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
