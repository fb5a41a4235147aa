"""The precision and robustness sweep (issue #43, docs/dependencies.md "Precision sweep").

Exports from each repository snapshot listed in sweep.txt (`owner/name commit`, a git directory
per repository brought by the search tool's `fetch`: DIR/<owner>+<name>/repo, no work tree) every
file opscan reads as a manifest by its name (`opscan.scan.files.manifest_kind`, "What is read"),
at the pinned commit, into benchmarks/accuracy/dependencies/corpus/sweep/<owner>+<name>/
(git-ignored); then runs `opscan scan DIR --format json` over each repository's export in a
process of its own and writes one table of every manifest finding (category `dependency`, and
OPS000 / OPS001 / OPS002 / OPS005) with the text of its line, plus a row per scan that failed
(exit status other than 0 under --exit-zero, or no JSON report: rule `CRASH`; an export holding
only a pyproject.toml without findings is "nothing to check", exit 2 by design: rule `NOTHING`).

    python benchmarks/accuracy/dependencies/sweep.py --mirror DIR            # export, then scan
    python benchmarks/accuracy/dependencies/sweep.py --scan-only             # scan the last export
    python benchmarks/accuracy/dependencies/sweep.py --pin DIR --names FILE  # write sweep.txt from
                                                                             # folder names at HEAD

The table goes to results/sweep-findings.csv unless --table says otherwise. Judge it with
sweep_judgements.csv (one row per error: the label rule of HELDOUT2.md) and
`sweep.py --precision sweep_judgements.csv` (`--of TABLE`: also a later table's errors, by the same
rows); `--unfound CSV` lists the lines that mention torch or
CUDA and got no finding (the cheap look for misses).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from opscan.scan.files import manifest_kind  # noqa: E402
from opscan.scan.manifests import decode_lines  # noqa: E402

OUT = HERE / "corpus" / "sweep"
LIST = HERE / "sweep.txt"
TABLE = HERE / "results" / "sweep-findings.csv"
KEPT_RULES = ("OPS000", "OPS001", "OPS002", "OPS005")
COLUMNS = ["repo", "file", "line", "rule", "severity", "guarded", "subject", "message", "text"]


def _git(git_dir: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], input=data, capture_output=True,
                          check=True).stdout


def pin(mirror: Path, names: Path) -> int:
    """Writes sweep.txt: `owner/name commit` for each folder name (owner+name) holding a git directory."""
    rows = []
    for folder in names.read_text(encoding="utf-8").split():
        git_dir = mirror / folder / "repo"
        if "+" not in folder or not (git_dir / "HEAD").is_file():
            print(f"skipped {folder}: no snapshot", file=sys.stderr)
            continue
        commit = _git(git_dir, "rev-parse", "HEAD").decode().strip()
        rows.append(f"{folder.replace('+', '/', 1)} {commit}")
    LIST.write_text("# the sweep's repositories (sweep.py): owner/name commit\n" + "\n".join(sorted(rows)) + "\n",
                    encoding="utf-8")
    print(f"wrote {len(rows)} repositories to {LIST.relative_to(ROOT)}")
    return 0


def _repos() -> list[tuple[str, str]]:
    return [tuple(line.split()[:2]) for line in LIST.read_text(encoding="utf-8").splitlines()  # type: ignore[misc]
            if line.strip() and not line.startswith("#")]


def _manifests(git_dir: Path, commit: str) -> list[tuple[str, str]]:
    """(blob id, path) of every file at `commit` whose name makes it a manifest (no links, no submodules)."""
    listing = _git(git_dir, "ls-tree", "-r", "-z", commit).split(b"\0")
    found = []
    for entry in listing:
        if not entry:
            continue
        meta, _, raw = entry.partition(b"\t")
        mode, kind, blob = meta.decode().split()
        path = raw.decode("utf-8", errors="surrogateescape")
        if kind == "blob" and mode != "120000" and manifest_kind(path):
            found.append((blob, path))
    return found


def export(mirror: Path) -> int:
    """Copies each repository's manifests into OUT/<owner>+<name>/ (replacing an earlier export)."""
    total = 0
    absent: list[str] = []
    for name, commit in _repos():
        git_dir = mirror / name.replace("/", "+") / "repo"
        target = OUT / name.replace("/", "+")
        try:
            files = _manifests(git_dir, commit)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"{name}: cannot list {commit} ({exc}); skipped", file=sys.stderr)
            continue
        shutil.rmtree(target, ignore_errors=True)
        for blob, path in files:
            dest = target / path
            if ".." in Path(path).parts:
                continue
            try:
                data = _git(git_dir, "cat-file", "blob", blob)
            except subprocess.CalledProcessError:   # a large file the snapshot lists but does not hold
                absent.append(f"{name}:{path}")
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            total += 1
    print(f"exported {total} manifests of {len(_repos())} repositories into {OUT.relative_to(ROOT)}")
    for entry in absent:
        print(f"  absent from the snapshot: {entry}")
    return 0


def _line_text(path: Path, line: int) -> str:
    """The text of a finding's line, decoded as opscan decodes the manifest (a UTF-16 file too)."""
    try:
        text, _ = decode_lines(path.read_bytes())
    except OSError:
        return ""
    lines = text.splitlines()
    return lines[line - 1].strip()[:300] if 0 < line <= len(lines) else ""


def _scan_one(folder: Path) -> list[dict]:
    command = [sys.executable, "-m", "opscan", "scan", str(folder), "--format", "json", "--exit-zero",
               "--no-cache", "--jobs", "1", "--no-fix-check"]
    done = subprocess.run(command, capture_output=True, cwd=ROOT)
    repo = folder.name.replace("+", "/", 1)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = None
    if done.returncode == 2 and b"nothing to check" in done.stderr:   # only a pyproject with no finding
        return [{"repo": repo, "file": "", "line": 0, "rule": "NOTHING", "severity": "note", "guarded": "",
                 "subject": "", "message": "nothing to check (a build file without findings only)", "text": ""}]
    if done.returncode or report is None:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no report"]
        return [{"repo": repo, "file": "", "line": 0, "rule": "CRASH", "severity": "error", "guarded": "",
                 "subject": "", "message": f"exit {done.returncode}: {tail[0]}"[:300], "text": ""}]
    rows = []
    for finding in report["findings"]:
        if finding["category"] != "dependency" and finding["rule"] not in KEPT_RULES:
            continue
        rows.append({"repo": repo, "file": finding["path"], "line": finding["line"], "rule": finding["rule"],
                     "severity": finding["severity"], "guarded": finding["guarded"],
                     "subject": finding.get("subject", ""), "message": finding["message"][:300],
                     "text": _line_text(folder / finding["path"], finding["line"])})
    return rows


def scan(table: Path, workers: int) -> int:
    folders = sorted(p for p in OUT.iterdir() if p.is_dir()) if OUT.is_dir() else []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(_scan_one, folders))
    rows = [row for rows in results for row in rows]
    rows.sort(key=lambda r: (r["repo"], r["file"], int(r["line"]), r["rule"]))
    table.parent.mkdir(parents=True, exist_ok=True)
    with table.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    counts: dict[str, int] = {}
    for row in rows:
        counts[f"{row['rule']} {row['severity']}"] = counts.get(f"{row['rule']} {row['severity']}", 0) + 1
    print(f"scanned {len(folders)} repositories: {len(rows)} manifest findings -> {table}")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")
    return 0


# the words of a line a port may have to change (the brief of the sweep, step 3): torch, a CUDA label,
# NVIDIA's wheels, cuda, triton, a CUDA base image, the CUDA build variables
MENTIONS = re.compile(r"torch|\bcu1\d\d?\b|cu1\d\d|nvidia-|cuda|triton|FORCE_CUDA|TORCH_CUDA_ARCH_LIST", re.I)


def unfound(table: Path, out: Path) -> int:
    """Lines of the exported manifests that mention MENTIONS and got no finding (candidate misses)."""
    with table.open(encoding="utf-8") as handle:
        hit = {(r["repo"], r["file"], int(r["line"])) for r in csv.DictReader(handle)}
    rows = []
    for folder in sorted(p for p in OUT.iterdir() if p.is_dir()):
        repo = folder.name.replace("+", "/", 1)
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = path.relative_to(folder).as_posix()
            text = path.read_bytes().decode("utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), 1):
                stripped = line.strip()
                if stripped and not stripped.startswith("#") and MENTIONS.search(stripped) \
                        and (repo, rel, number) not in hit:
                    rows.append({"repo": repo, "file": rel, "line": number, "text": stripped[:200]})
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["repo", "file", "line", "text"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} lines mention torch / CUDA / triton and got no finding -> {out}")
    return 0


def precision(judgements: Path, table: Path | None = None) -> int:
    """Error precision before and after from sweep_judgements.csv (`seen`: before | after | both;
    `judgement`: port | outside | input | false, HELDOUT2.md's label rule, docs/dependencies.md).
    With `table` (a later sweep's findings, `--of`): its errors (distinct file, line, rule, subject)
    judged by the same rows; an error no row judges is counted `unjudged` and listed, to be judged."""
    with judgements.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    sides: list[tuple[str, list[dict]]] = [(side, [r for r in rows if r["seen"] in (side, "both")])
                                           for side in ("before", "after")]
    if table is not None:
        judged = {(r["repo"], r["file"], r["line"], r["rule"], r["subject"]): r for r in rows}
        with table.open(encoding="utf-8") as handle:
            errors = {(r["repo"], r["file"], r["line"], r["rule"], r["subject"]) for r in csv.DictReader(handle)
                      if r["severity"] == "error"}
        for key in sorted(errors - set(judged)):
            print("unjudged error:", *key)
        sides.append((table.name, [judged.get(k, {"judgement": "unjudged"}) for k in sorted(errors)]))
    for side, kept in sides:
        counts = {j: sum(r["judgement"] == j for r in kept) for j in ("port", "outside", "input", "false", "unjudged")}
        total = len(kept) or 1
        print(f"{side}: {len(kept)} errors; {counts}; precision (port / all) {counts['port'] / total:.3f}; "
              f"wrong judgements (false) {counts['false']}; on lines a port need not change "
              f"(outside + input + false) {counts['outside'] + counts['input'] + counts['false']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", default=os.environ.get("OPSCAN_MIRROR", ""),
                        help="folder holding <owner>+<name>/repo git directories")
    parser.add_argument("--pin", metavar="DIR", help="write sweep.txt from the snapshots in DIR at HEAD")
    parser.add_argument("--names", type=Path, help="with --pin: a file of folder names (owner+name)")
    parser.add_argument("--scan-only", action="store_true", help="scan the last export, do not export")
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--unfound", type=Path, metavar="CSV",
                        help="list the lines that mention torch / CUDA and got no finding in --table, into CSV")
    parser.add_argument("--precision", type=Path, metavar="CSV", help="print error precision from a judgements CSV")
    parser.add_argument("--of", type=Path, metavar="TABLE",
                        help="with --precision: also judge this findings table's errors by the same rows")
    args = parser.parse_args(argv)
    if args.precision:
        return precision(args.precision, args.of)
    if args.unfound:
        return unfound(args.table, args.unfound)
    if args.pin:
        if not args.names:
            parser.error("--pin needs --names")
        return pin(Path(args.pin), args.names)
    if not args.scan_only:
        if not args.mirror:
            parser.error("--mirror DIR (or OPSCAN_MIRROR) is needed to export")
        export(Path(args.mirror))
    return scan(args.table, args.workers)


if __name__ == "__main__":
    sys.exit(main())
