"""Measures `opscan fix` on the shipped example, three real training projects and transformers.

For each tree, on a fresh copy under a temporary folder (nothing is written anywhere else):
findings before (the scan, as `opscan fix` sees it), fixed automatically, left (by rule, by
category and by the reason the report gives; findings left without one), files changed, whether
every changed file still parses, compound statements the fix wrote on one line (counted with `ast`,
and with ruff's E701/E702 when ruff is installed), and the wall and CPU time of one
`opscan fix TREE` process (start-up included, cold: a fresh, empty scan cache).

The three projects are downloaded at run time as pinned pure-Python wheels (`pip download
--no-deps --only-binary :all: NAME==VERSION`, unzipped: a wheel holds the package's source);
transformers is copied from the installed package (site-packages). Nothing is committed.

    python benchmarks/speed/fix_bench.py                 # every tree, markdown table on stdout
    python benchmarks/speed/fix_bench.py --trees nanogpt,transformers --json results.json
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = {   # name -> pinned wheel (training code: runners, recipes, trainers)
    "mmengine": "mmengine==0.10.7",
    "ultralytics": "ultralytics==8.3.0",
    "torchtune": "torchtune==0.6.1",
}
TREES = ["nanogpt", *PROJECTS, "transformers"]


def fetch(name: str, work: Path) -> Path:
    """A fresh copy of the tree `name` under `work`."""
    target = work / name
    if name == "nanogpt":
        shutil.copytree(ROOT / "examples" / "nanogpt", target)
    elif name == "transformers":
        import transformers

        shutil.copytree(Path(transformers.__file__).parent, target,
                        ignore=shutil.ignore_patterns("__pycache__"))
    else:
        wheels = work / "wheels"
        wheels.mkdir(exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                        PROJECTS[name], "-d", str(wheels)], check=True)
        wheel = next(w for w in wheels.glob("*.whl") if w.name.lower().startswith(name.lower()))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(target)
    return target


def findings(tree: Path) -> list:
    """The findings `opscan fix` starts from (the scan of the tree under its config, no fixable mark)."""
    os.environ["OPSCAN_NO_CACHE"] = "1"
    from opscan.config import load_config
    from opscan.pipeline.options import ScanOptions
    from opscan.pipeline.phases import scan

    return list(scan(tree.resolve(), load_config(tree), ScanOptions(mark_fixable=False)).findings)


def fixable(tree: Path, found: list) -> tuple[int, float]:
    """(findings marked fixable, seconds): the mark every report shows, planned in the scan's own
    per-file work as `opscan fix` plans it (opscan/fix/preview.py; issue 35: it must equal what the
    fix rewrites, and 0 after). The seconds are the cold scan with the mark minus the same scan
    without it (`found`'s), both uncached: what the mark adds to a cold `opscan scan`."""
    from opscan.config import load_config
    from opscan.pipeline.options import ScanOptions
    from opscan.pipeline.phases import scan

    start = time.perf_counter()
    scan(tree.resolve(), load_config(tree), ScanOptions(mark_fixable=False))
    plain = time.perf_counter() - start
    start = time.perf_counter()
    marked = scan(tree.resolve(), load_config(tree)).findings
    return sum(f.fixable for f in marked), max(0.0, time.perf_counter() - start - plain)


def snapshot(tree: Path) -> dict[str, bytes]:
    return {p.relative_to(tree).as_posix(): p.read_bytes() for p in sorted(tree.rglob("*"))
            if p.is_file() and p.suffix in (".py", ".ipynb")}


def parses(rel: str, data: bytes) -> bool:
    try:
        if rel.endswith(".ipynb"):
            from opscan.scan import native

            ast.parse(native.notebook_source(data)[0])
        else:
            ast.parse(data)
    except (SyntaxError, ValueError):
        return False
    return True


def compound_lines(rel: str, data: bytes) -> int:
    """Compound statements written on one line (`if x: y()`, ruff E701): a body that starts on the
    line where its header ends."""
    try:
        if rel.endswith(".ipynb"):
            from opscan.scan import native

            tree = ast.parse(native.notebook_source(data)[0])
        else:
            tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return 0
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.While)):
            header_end = node.test.end_lineno
        elif isinstance(node, (ast.For, ast.With, ast.Try, ast.FunctionDef, ast.ClassDef)):
            header_end = node.lineno
        else:
            continue
        count += node.body[0].lineno == header_end
    return count


def ruff_e70x(tree: Path, rels: list[str]) -> int | None:
    """ruff's E701/E702 findings in the given .py files (None when ruff is not installed)."""
    import importlib.util

    paths = [str(tree / rel) for rel in rels if rel.endswith(".py")]
    if importlib.util.find_spec("ruff") is None:
        return None
    if not paths:
        return 0
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "E701,E702",
                           "--output-format", "concise", *paths], capture_output=True, text=True, check=False)
    return sum(1 for line in proc.stdout.splitlines() if re.search(r":\d+:\d+: E70[12]", line))


def written_lines(pristine: dict[str, bytes], after: dict[str, bytes]) -> set[tuple[str, int]]:
    """(path, line) of every line of the fixed .py files that `opscan fix` wrote or changed."""
    import difflib

    out = set()
    for rel, data in after.items():
        if not rel.endswith(".py") or pristine.get(rel) == data:
            continue
        old = pristine.get(rel, b"").decode("utf-8", "replace").splitlines()
        new = data.decode("utf-8", "replace").splitlines()
        for tag, _, _, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
            if tag in ("replace", "insert"):
                out.update((rel, line) for line in range(j1 + 1, j2 + 1))
    return out


def reasons(output: str) -> dict[str, int]:
    """The `by reason:` section of `opscan fix`'s report: reason -> findings left for it."""
    section = output.split("by reason:\n", 1)[1].split("\n\n", 1)[0] if "by reason:\n" in output else ""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^  ([a-z-]+) \((\d+)\): ", section, re.MULTILINE)}


def run_fix(tree: Path, cache: Path) -> tuple[float, float, int, str, str]:
    """(wall s, CPU s, exit code, summary line, whole report) of one cold `opscan fix TREE`."""
    env = {**os.environ, "OPSCAN_CACHE_DIR": str(cache)}
    env.pop("OPSCAN_NO_CACHE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "opscan", "fix", str(tree)], env=env, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = proc.stdout.strip().splitlines()
    return wall, cpu, proc.returncode, lines[-1] if lines else proc.stderr.strip(), proc.stdout


def measure(name: str, work: Path) -> dict:
    tree = fetch(name, work)
    pristine = snapshot(tree)
    before = findings(tree)
    fixable_before, fixable_s = fixable(tree, before)
    ruff_before = ruff_e70x(tree, list(pristine))
    wall, cpu, code, summary, report = run_fix(tree, work / f"cache-{name}")
    after_files = snapshot(tree)
    after = findings(tree)
    fixable_after, _ = fixable(tree, after)
    changed = [rel for rel, data in after_files.items() if pristine.get(rel) != data]
    fixed = Counter(f.rule for f in before) - Counter(f.rule for f in after)
    ruff_after = ruff_e70x(tree, list(after_files))
    left_count = int(m.group(1)) if (m := re.search(r"; (\d+) left \(", summary)) else 0
    left_count += int(m.group(1)) if (m := re.search(r"; (\d+) more with --unsafe-fixes", summary)) else 0
    by_reason = reasons(report)
    written = written_lines(pristine, after_files)   # issue 35: the fixer's own lines pass the gate
    on_written = [f for f in after if f.severity == "error" and not f.guarded
                  and (f.location.path, f.location.line) in written]
    return {
        "fixable_before": fixable_before, "fixable_after": fixable_after, "fixable_s": round(fixable_s, 2),
        "lines_written": len(written), "errors_on_written_lines": len(on_written),
        "errors_on_written_lines_by_rule": dict(sorted(Counter(f.rule for f in on_written).items())),
        "tree": name, "files": len(pristine), "findings_before": len(before), "fixed": sum(fixed.values()),
        "fixed_by_rule": dict(sorted(fixed.items())), "left": len(after),
        "left_by_category": dict(sorted(Counter(f.category for f in after).items())),
        "left_by_rule": dict(sorted(Counter(f.rule for f in after).items())),
        "files_changed": len(changed), "all_parse": all(parses(rel, after_files[rel]) for rel in changed),
        "new_findings": sum((Counter(f.rule for f in after) - Counter(f.rule for f in before)).values()),
        "rewritten": int(m.group(1)) if (m := re.search(r"fixed (\d+) of", summary)) else None,
        "new_compound_statements": sum(max(0,
                                           compound_lines(rel, after_files[rel]) - compound_lines(rel,
                                                                                                  pristine.get(rel,
                                                                                                               b"")))
                                       for rel in changed),
        "ruff_e701_e702_new": None if ruff_before is None else ruff_after - ruff_before,
        "left_by_reason": dict(sorted(by_reason.items())), "left_without_reason": left_count - sum(by_reason.values()),
        "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "exit": code, "summary": summary,
    }


def table(rows: list[dict]) -> str:
    out = [("| tree | .py/.ipynb files | findings before | rewritten by `opscan fix` | gone on re-scan | left | "
            "left without a reason | new one-line compound statements (ast / ruff E701-2) | "
            "files changed | all parse | lines written | errors on written lines | fixable before / after "
            "(s to plan) | wall s | CPU s |"),
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ruff = "n/a" if r["ruff_e701_e702_new"] is None else r["ruff_e701_e702_new"]
        out.append(f"| {r['tree']} | {r['files']} | {r['findings_before']} | {r['rewritten']} | {r['fixed']} | "
                   f"{r['left']} | "
                   f"{r['left_without_reason']} | {r['new_compound_statements']} / {ruff} | "
                   f"{r['files_changed']} | {'yes' if r['all_parse'] else 'NO'} | {r['lines_written']} | "
                   f"{r['errors_on_written_lines']} | {r['fixable_before']} / {r['fixable_after']} "
                   f"({r['fixable_s']}) | "
                   f"{r['wall_s']} | {r['cpu_s']} |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", default=",".join(TREES), help=f"comma list of {', '.join(TREES)}")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="opscan-fix-bench-") as tmp:
        for name in args.trees.split(","):
            rows.append(measure(name.strip(), Path(tmp)))
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["all_parse"] and r["exit"] == 0 and r["new_findings"] == 0 and r["new_compound_statements"] == 0
                    and not r["ruff_e701_e702_new"] and r["left_without_reason"] == 0
                    and r["fixable_before"] == r["rewritten"] and r["fixable_after"] == 0 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
