"""Calibrate the port-task list against real ports: run the plan on the commit before a port from
CUDA to another PyTorch backend and compare its tasks with what the port commit changed.

Usage:
    python benchmarks/accuracy/plan_calibration.py [--mirror-root DIR] [--work DIR] [--json OUT] [--case NAME]

Each case names a public repository, the port commit and the folder of the project in it. The
repository must be a local git directory with history (a bare clone works) at
`<mirror-root>/<owner>+<name>/repo` (default mirror root: `../.mirror` from the repository root), or
`git clone --bare https://github.com/<owner>/<name>` there.
Nothing fetched is kept in this repository: the tree before the port is extracted with
`git archive` into `--work` (a temporary folder by default) and scanned with
`opscan PATH --no-trace --format json` (source only; the project's code is never run).

A task is *matched* when the port changed a line within TOLERANCE lines of one of its sites;
*never needed* when it changed none of them. *Missed work* is every changed hunk of an existing
Python file that is near no task site (new files are counted apart: they hold the replacement
code, not missed sites). See docs/tasks.md, "Calibration".
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

TOLERANCE = 2    # lines between a changed line and a task site that still count as the same place


@dataclass(frozen=True)
class Case:
    name: str
    repo: str            # owner/name on GitHub
    commit: str          # the (last) port commit; the plan runs on its first parent
    folder: str = ""     # the project inside the repository ("" = the whole repository)
    backend: str = ""    # the backend the port added


CASES = (
    Case("examples-imagenet", "pytorch/examples", "dcc2474", "imagenet", "torch.accelerator (XPU/MPS/...)"),
    Case("examples-dcgan", "pytorch/examples", "cc8e404", "dcgan", "torch.accelerator"),
    Case("examples-mingpt-ddp", "pytorch/examples", "698a89e", "distributed/minGPT-ddp", "torch.accelerator + DDP"),
    Case("torchchat-xpu", "pytorch/torchchat", "2fc98f7d", "", "Intel XPU"),
    Case("torchchat-npu", "pytorch/torchchat", "701d8265", "", "Ascend NPU"),
    Case("sd-scripts-ipex", "kohya-ss/sd-scripts", "b64389c8", "", "Intel XPU (IPEX)"),
)

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True,
                          text=True).stdout


SOURCE_SUFFIXES = (".py", ".ipynb", ".toml", ".cfg", ".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp")


def _extract(git_dir: Path, commit: str, folder: str, dest: Path) -> Path:
    """Write the source files of `commit` (under `folder`) to `dest`. Blobs a partial mirror lacks
    (large binaries) are skipped: the scan reads only source files."""
    listing = _git(git_dir, "ls-tree", "-r", "--full-tree", commit, *([folder] if folder else []))
    blobs = []
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode != "120000" and path.endswith(SOURCE_SUFFIXES):
            blobs.append((sha, path))
    batch = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "--batch"], check=True, capture_output=True,
                           input="".join(f"{sha}\n" for sha, _ in blobs).encode()).stdout
    pos = 0
    for _sha, path in blobs:
        end = batch.index(b"\n", pos)
        header = batch[pos:end].decode().split()
        pos = end + 1
        if len(header) < 3 or header[1] == "missing":
            continue
        size = int(header[2])
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(batch[pos:pos + size])
        pos += size + 1
    return dest / folder if folder else dest


def _changes(git_dir: Path, parent: str, commit: str, folder: str) -> tuple[dict[str, list[tuple[int, int]]], list[str],
                                                                            int,
                                                                       dict[tuple[str, int], int]]:
    """Old-side changed line ranges per existing file (paths relative to the folder), the files the
    port added, the number of changed lines, and the changed lines (removed + added) of each hunk
    by (path, index in its file's ranges)."""
    spec = [folder] if folder else []
    diff = _git(git_dir, "diff", "-U0", "--no-color", "--no-renames", parent, commit, "--", *spec)
    ranges: dict[str, list[tuple[int, int]]] = {}
    sizes: dict[tuple[str, int], int] = {}
    added: list[str] = []
    current = None
    changed = 0
    prefix = f"{folder}/" if folder else ""
    for line in diff.splitlines():
        if line.startswith("--- "):
            current = None if line == "--- /dev/null" else line[6:]
        elif line.startswith("+++ "):
            if current is None and line != "+++ /dev/null":
                added.append(line[6:].removeprefix(prefix))
            elif current is not None:
                current = current.removeprefix(prefix)
        elif line.startswith("@@") and current is not None:
            m = _HUNK.match(line)
            start, count = int(m[1]), int(m[2] if m[2] is not None else 1)
            spans = ranges.setdefault(current, [])
            sizes[(current, len(spans))] = count + int(m[3] if m[3] is not None else 1)
            spans.append((start, start + max(count, 1) - 1))
        elif line[:1] in "+-" and not line.startswith(("+++", "---")):
            changed += 1
    return ranges, added, changed, sizes


def _near(line: int, spans: list[tuple[int, int]]) -> bool:
    return any(lo - TOLERANCE <= line <= hi + TOLERANCE for lo, hi in spans)


def run_case(case: Case, mirror_root: Path, work: Path) -> dict:
    git_dir = mirror_root / case.repo.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        return {"case": case.name, "error": f"no git directory at {git_dir}"}
    parent = _git(git_dir, "rev-parse", f"{case.commit}^").strip()
    root = _extract(git_dir, parent, case.folder, work / case.name)
    proc = subprocess.run([sys.executable, "-m", "opscan", str(root), "--no-trace", "--format", "json", "--exit-zero"],
                          capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        return {"case": case.name, "error": proc.stderr.strip().splitlines()[-1:] or ["opscan failed"]}
    report = json.loads(proc.stdout)
    ranges, added, changed, sizes = _changes(git_dir, parent, case.commit, case.folder)
    tasks = []
    used_hunks: set[tuple[str, int]] = set()
    for task in report["tasks"]:
        touched = 0
        hunks: set[tuple[str, int]] = set()
        for site in task["sites"]:
            spans = ranges.get(site["path"], [])
            hits = [i for i, (lo, hi) in enumerate(spans) if lo - TOLERANCE <= site["line"] <= hi + TOLERANCE]
            if hits:
                touched += 1
                hunks.update((site["path"], i) for i in hits)
        used_hunks |= hunks
        tasks.append({"id": task["id"], "kind": task.get("kind") or task["id"].split(":")[0],
                      "sites": len(task["sites"]), "touched": touched, "hunks": len(hunks),
                      "changed_lines": sum(sizes.get(h, 0) for h in hunks),
                      "files": sorted({site["path"] for site in task["sites"]}),
                      "likely_hours": task["effort_hours"], "low_hours": task.get("effort_low_hours"),
                      "high_hours": task.get("effort_high_hours"), "sized": task.get("sized", True)})
    missed = [(path, lo, hi) for path, spans in sorted(ranges.items()) if path.endswith(".py")
              for i, (lo, hi) in enumerate(spans) if (path, i) not in used_hunks]
    summary = report["summary"]
    task_files = {site["path"] for task in report["tasks"] for site in task["sites"]}
    in_task_files = [m for m in missed if m[0] in task_files]
    for task in tasks:   # unflagged hunks go to the matched task with the most sites in their file
        task["unflagged_hunks"] = task["unflagged_lines"] = 0
    for path, lo, hi in in_task_files:
        owners = [t for t in tasks if t["touched"] and path in t["files"]]
        if owners:
            owner = max(owners, key=lambda t: (t["sites"], t["id"]))
            owner["unflagged_hunks"] += 1
            index = next(i for i, span in enumerate(ranges[path]) if span == (lo, hi))
            owner["unflagged_lines"] += sizes.get((path, index), 0)
    planned = sum(t["sites"] for t in tasks if t["touched"])
    touched = sum(t["touched"] for t in tasks)
    return {
        "case": case.name, "repo": case.repo, "commit": case.commit, "parent": parent[:10],
        "folder": case.folder, "backend": case.backend,
        "tasks": tasks,
        "matched": [t["id"] for t in tasks if t["touched"]],
        "never_needed": [t["id"] for t in tasks if not t["touched"]],
        "missed_hunks": [f"{p}:{lo}-{hi}" for p, lo, hi in missed],
        "missed_in_task_files": len(in_task_files),
        "task_files_with_missed": len({m[0] for m in in_task_files}),
        # (sites the port touched + unflagged hunks in the same files) / sites of the matched tasks
        "work_ratio": round((touched + len(in_task_files)) / planned, 2) if planned else None,
        "added_files": added,
        "changed_lines": changed,
        "effort": {"likely": summary["effort_hours"], "low": summary.get("effort_low_hours"),
                   "high": summary.get("effort_high_hours")},
    }


def table(results: list[dict]) -> str:
    """The calibration table as markdown (docs/tasks.md)."""
    rows = ["| case | port commit | tasks (matched / planned) | never needed | missed hunks (.py; in task files) | "
            "work ratio | new files | changed lines | plan likely (low-high) h |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            rows.append(f"| {r['case']} | error: {r['error']} | | | | | | | |")
            continue
        never = ", ".join(f"`{t}`" for t in r["never_needed"]) or "none"
        e = r["effort"]
        rows.append(f"| {r['case']} ({r['backend']}) | `{r['repo']}@{r['commit']}` | {len(r['matched'])} / "
                    f"{len(r['tasks'])} | {never} | {len(r['missed_hunks'])}; {r['missed_in_task_files']} in "
                    f"{r['task_files_with_missed']} file(s) | {r['work_ratio']} | {len(r['added_files'])} | "
                    f"{r['changed_lines']} | {e['likely']:g} ({e['low']:g}-{e['high']:g}) |")
    return "\n".join(rows)


def work_by_kind(results: list[dict]) -> str:
    """The amount of work per task kind in the ports (matched tasks only), beside the plan's likely
    hours for those tasks (docs/tasks.md, "Calibration")."""
    kinds: dict[str, dict] = {}
    for r in results:
        for t in r.get("tasks", []):
            if not t["touched"]:
                continue
            k = kinds.setdefault(t["kind"], {"ports": set(), "sites": 0, "touched": 0, "hunks": 0, "lines": 0,
                                            "unflagged": 0, "unflagged_lines": 0, "hours": 0.0})
            k["ports"].add(r["case"])
            k["sites"] += t["sites"]
            k["touched"] += t["touched"]
            k["hunks"] += t["hunks"]
            k["lines"] += t["changed_lines"]
            k["unflagged"] += t["unflagged_hunks"]
            k["unflagged_lines"] += t["unflagged_lines"]
            k["hours"] += t["likely_hours"] or 0.0
    rows = [("| task kind | ports | sites touched / planned | hunks at sites | changed lines at sites | "
             "unflagged hunks (lines) in its files | changed lines per touched site | plan likely h | "
             "plan h per hunk |"), "|---|---|---|---|---|---|---|---|---|"]
    for kind, k in sorted(kinds.items()):
        hunks = k["hunks"] + k["unflagged"]
        rows.append(f"| `{kind}` | {len(k['ports'])} | {k['touched']} / {k['sites']} | {k['hunks']} | {k['lines']} | "
                    f"{k['unflagged']} ({k['unflagged_lines']}) | "
                    f"{(k['lines'] + k['unflagged_lines']) / k['touched']:.1f} | {k['hours']:.2f} | "
                    f"{k['hours'] / hunks:.2f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror-root", type=Path, default=Path(__file__).resolve().parents[3] / ".mirror",
                        help="folder of the git mirrors (default: .mirror beside the repository)")
    parser.add_argument("--work", type=Path, default=None, help="where the trees before the ports go")
    parser.add_argument("--json", type=Path, default=None, help="write the full results here")
    parser.add_argument("--case", action="append", default=[], help="run only these cases")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if not args.case or c.name in args.case]
    with tempfile.TemporaryDirectory(prefix="opscan-calibration-") as tmp:
        work = args.work or Path(tmp)
        results = [run_case(case, args.mirror_root, work) for case in cases]
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    print()
    print(work_by_kind(results))
    for r in results:
        if "error" in r:
            continue
        print(f"\n{r['case']}: " + "; ".join(f"{t['id']} {t['touched']}/{t['sites']} sites" for t in r["tasks"]))
        if r["missed_hunks"]:
            print("  missed: " + ", ".join(r["missed_hunks"][:15]) + (" ..." if len(r["missed_hunks"]) > 15 else ""))
        if r["added_files"]:
            print("  new files: " + ", ".join(r["added_files"][:10]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
