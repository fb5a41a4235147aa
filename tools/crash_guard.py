"""Runs `opscan scan` and `opscan fix --diff` over large real trees and fails on any crash (issue 40).

Usage:
  python tools/crash_guard.py                       # every package of this interpreter's site-packages
  python tools/crash_guard.py --tree PATH [--tree PATH ...]
  python tools/crash_guard.py --python .venv/bin/python --json results.json

For each tree (a package folder of site-packages; the top-level modules together as one tree) it
runs, in fresh processes, with an empty cache folder of its own:
  1. `opscan scan TREE --format json --exit-zero`: a crash is an exit code other than 0, or a
     traceback on stderr; an internal error is an OPS002 finding (`internal-error`), or a note
     that an enrichment was not computed ("fixable not computed for FILE: reason");
  2. `opscan fix --diff TREE`: a crash is an exit code other than 0 or 1, or a traceback; an
     internal error is a line "opscan: internal error: FILE: ..." on stderr (a codemod that
     raised, NOTE [one file's failure] in opscan/fix/files.py);
  3. the fixable count of the scan must be what `fix --diff` would fix (NOTE [fixable is what fix
     fixes] in opscan/fix/preview.py): a difference is reported as a mismatch.
Each failure is printed with the tree, the file and the cause; the exit code is 1 when there is
any, 0 otherwise. The trees are only read: the scan and `fix --diff` never run project code and
write nothing into them. CI (`.ci/run`) runs it over the whole site-packages of the test
environment (the `dev` extra: torch, transformers, numpy, libcst, ...: 97 trees, 12,901 files), so
no subset is left out; `--jobs` trees are checked at once (default: the CPUs), the largest first,
and the rows are printed in the trees' order whatever the number of jobs. The times: docs/ci.md,
"opscan's own CI".

# NOTE [trees at once]
Each command already spreads one tree's files over the CPUs, but most of the 97 trees are small:
their run is the interpreter's start, opscan's imports, the rules' load and an in-process scan,
one CPU busy and the other idle, twice per tree. Checking two trees at once fills the idle CPU;
starting with the largest trees (by Python files) keeps the last one running alone short.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_SUMMARY = re.compile(r"would fix (\d+) of (\d+) finding")
_INTERNAL = re.compile(r"^opscan: internal error: (.*)$", re.M)


def trees_of(site: Path) -> list[tuple[str, list[Path]]]:
    """(name, paths) per package folder of `site` holding Python files, and the top-level modules as one."""
    out: list[tuple[str, list[Path]]] = []
    modules: list[Path] = []
    for entry in sorted(site.iterdir()):
        if entry.name.startswith(("_", ".")) and entry.suffix != ".py" or entry.name.endswith((".dist-info", ".libs",
                                                                                                ".egg-info", ".data")):
            continue
        if entry.is_dir() and next(entry.rglob("*.py"), None) is not None:
            out.append((entry.name, [entry]))
        elif entry.suffix == ".py" and entry.is_file():
            modules.append(entry)
    if modules:
        out.append(("(top-level modules)", modules))
    return out


def _run(cmd: list[str], timeout: float, env: dict[str, str]) -> tuple[int, str, str, float]:
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace", env=env)
    except subprocess.TimeoutExpired:
        return -1, "", f"timed out after {timeout:.0f} s", time.perf_counter() - started
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - started


def _traceback(stderr: str) -> str:
    """The last lines of a traceback on stderr ("" when there is none)."""
    if "Traceback (most recent call last)" not in stderr:
        return ""
    return " | ".join(stderr.strip().splitlines()[-3:])


def check(name: str, paths: list[Path], python: str, timeout: float) -> dict:
    """Scan and fix-preview one tree; returns its row (failures listed in `failures`)."""
    cache = Path(tempfile.mkdtemp(prefix="crash-guard-"))
    failures: list[str] = []
    row: dict = {"tree": name, "failures": failures}
    try:
        root = ["--root", str(paths[0].parent)] if len(paths) > 1 else []
        target = [str(p) for p in paths]
        report = cache / "report.json"
        env = {**os.environ, "OPSCAN_CACHE_DIR": str(cache / "cache")}
        cmd = [python, "-m", "opscan", "scan", *target, *root, "--format", "json", "--output", str(report),
               "--exit-zero"]
        rc, _, err, seconds = _run(cmd, timeout, env)
        row["scan_seconds"] = round(seconds, 1)
        trace = _traceback(err)
        if rc != 0 or trace:
            failures.append(f"scan crashed (exit {rc}): {trace or err.strip()[-300:]}")
        fixable = None
        if report.exists():
            doc = json.loads(report.read_text(encoding="utf-8"))
            row["files"] = doc.get("summary", {}).get("files_scanned")
            row["findings"] = len(doc.get("findings", []))
            fixable = doc.get("summary", {}).get("fixable")
            for finding in doc.get("findings", []):
                if finding.get("name") == "internal-error":
                    where = f"{finding['path']}:{finding['line']}"
                    failures.append(f"internal error (OPS002) {where}: {finding['message']}")
            for note in doc.get("notes", []):
                if " not computed for " in note:
                    failures.append(f"enrichment failed: {note}")
        cmd = [python, "-m", "opscan", "fix", "--diff", *target]
        rc, _, err, seconds = _run(cmd, timeout, env)
        row["fix_seconds"] = round(seconds, 1)
        trace = _traceback(err)
        if rc not in (0, 1) or trace:
            failures.append(f"fix --diff crashed (exit {rc}): {trace or err.strip()[-300:]}")
        failures.extend(f"fix --diff internal error: {line}" for line in _INTERNAL.findall(err))
        summary = _SUMMARY.search(err)
        if summary is not None:
            row["would_fix"] = int(summary[1])
            if fixable is not None and int(summary[1]) != fixable:
                failures.append(f"fixable mismatch: the scan marks {fixable}, fix --diff would fix {summary[1]}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return row


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], type=Path, help="a folder to check (repeatable)")
    parser.add_argument("--site-packages", type=Path, default=None,
                        help="check every package of this folder (default: the interpreter's site-packages)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter opscan runs in")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per command (default 1800)")
    parser.add_argument("--jobs", "-j", type=int, default=_cpus(),
                        help="trees checked at once (default: the CPUs; NOTE [trees at once])")
    parser.add_argument("--json", default="", help="write the rows to this file")
    args = parser.parse_args()

    if args.tree:
        trees = [(str(t), [t.resolve()]) for t in args.tree]
    else:
        site = args.site_packages or Path(sysconfig.get_paths()["purelib"])
        trees = trees_of(site.resolve())
    started = time.perf_counter()
    rows = []
    failed = 0
    # NOTE [trees at once]: the largest first, the rows in the trees' order
    size = [sum(1 for p in paths for _ in (p.rglob("*.py") if p.is_dir() else [p])) for _, paths in trees]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {i: pool.submit(check, *trees[i], args.python, args.timeout)
                   for i in sorted(range(len(trees)), key=lambda i: (-size[i], i))}
        for i in range(len(trees)):
            row = futures[i].result()
            rows.append(row)
            status = "FAIL" if row["failures"] else "ok"
            print(f"{status} {row['tree']}: {row.get('files', '?')} files, {row.get('findings', '?')} findings, "
                  f"scan {row.get('scan_seconds', '?')} s, fix --diff {row.get('fix_seconds', '?')} s", flush=True)
            for failure in row["failures"]:
                print(f"    {failure}", flush=True)
            failed += bool(row["failures"])
    total = time.perf_counter() - started
    print(f"\n{len(rows)} trees, {failed} with failures, {total:.0f} s ({args.jobs} at once)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"seconds": round(total, 1), "rows": rows}, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
