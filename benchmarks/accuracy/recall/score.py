"""Scores `opscan scan` against the hand-labelled recall corpus: recall and precision per category.

Each package folder under corpus/ is scanned as its own root (as a user would scan that project),
restricted to the labelled files of files.txt, through opscan's scan API (`scan_paths`). A finding
matches a label when (file, line, category) are equal. Within the labelled files:

  true positive   a label with a matching error or warning finding
  false negative  a label without one
  false positive  an error or warning finding without a label

Notes are informational and not scored (their count is printed). Labelling rules: LABELLING.md.

    python benchmarks/accuracy/recall/fetch.py                 # once: download the pinned corpus
    python benchmarks/accuracy/recall/score.py                 # table
    python benchmarks/accuracy/recall/score.py --details       # also every miss and false positive
    python benchmarks/accuracy/recall/score.py --json out.json # machine-readable result
    python benchmarks/accuracy/recall/score.py --set heldout   # the held-out files (labels_heldout.csv)
    python benchmarks/accuracy/recall/score.py --set heldout2  # held-out 2: three never-scanned packages
    python benchmarks/accuracy/recall/score.py --set heldout3  # held-out 3: three more never-scanned packages
    python benchmarks/accuracy/recall/score.py --set heldout-all  # all held-out parts together

Two label sets: `dev` (labels.csv / files.txt, labelled before opscan ran on the corpus, and
used while improving the scanner) and `heldout` (labels_heldout.csv / files_heldout.txt,
labelled afterwards, before opscan ran on those files, and never used to change the scanner).
`heldout2` (labels_heldout2.csv / files_heldout2.txt) is a second held-out part, from three
packages opscan had never scanned (issue 26); `heldout3` (labels_heldout3.csv / files_heldout3.txt) a
third, from three more such packages; `heldout-all` scores all held-out parts together.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
CATEGORIES = ("device-string", "cuda-api", "custom-kernel", "cuda-only-lib", "device-dispatch")
SCORED = ("error", "warning")
# label set -> suffixes of its files*.txt / labels*.csv parts
SETS = {"dev": ("",), "heldout": ("_heldout",), "heldout2": ("_heldout2",), "heldout3": ("_heldout3",),
        "heldout-all": ("_heldout", "_heldout2", "_heldout3")}


def read_labels(path: Path = HERE / "labels.csv") -> set[tuple[str, int, str]]:
    labels: set[tuple[str, int, str]] = set()
    with path.open(newline="", encoding="utf-8") as fh:
        for n, row in enumerate(csv.DictReader(fh), start=2):
            if row["category"] not in CATEGORIES:
                raise SystemExit(f"{path.name}:{n}: unknown category {row['category']!r}")
            labels.add((row["file"], int(row["line"]), row["category"]))
    return labels


def read_files(path: Path = HERE / "files.txt") -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def scan(files: list[str]) -> list[tuple[str, int, str, str, str, str]]:
    """(file, line, category, severity, rule, message) of every finding in `files`."""
    from opscan.scan import load_rules, scan_paths

    rules = load_rules()
    by_package: dict[str, list[str]] = defaultdict(list)
    for f in files:
        package, rest = f.split("/", 1)
        by_package[package].append(rest)
    out = []
    for package, rels in sorted(by_package.items()):
        root = CORPUS / package
        result = scan_paths(root, paths=[root / r for r in rels], rules=rules, check_fixes=False)
        for finding in result.findings:
            loc = finding.location
            out.append((f"{package}/{loc.path}", loc.line, finding.category, finding.severity, finding.rule,
                        finding.message))
    return out


def score(labels: set[tuple[str, int, str]], findings, files: list[str]) -> dict:
    inside = set(files)
    found = {(f, ln, cat) for f, ln, cat, sev, _, _ in findings if sev in SCORED and f in inside}
    notes = sum(1 for f, _, _, sev, _, _ in findings if sev not in SCORED and f in inside)
    result: dict = {"labels": len(labels), "files": len(files), "notes": notes, "categories": {}}
    for cat in (*CATEGORIES, "overall"):
        want = {k for k in labels if cat in ("overall", k[2])}
        got = {k for k in found if cat in ("overall", k[2])}
        tp, fn, fp = len(want & got), len(want - got), len(got - want)
        result["categories"][cat] = {
            "labels": len(want), "tp": tp, "fn": fn, "fp": fp,
            "recall": round(tp / len(want), 3) if want else None,
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        }
    result["misses"] = sorted(labels - found)
    result["false_positives"] = sorted(found - labels)
    return result


def table(result: dict) -> str:
    rows = ["| category | labels | found | missed | false pos. | recall | precision |", "|---|---|---|---|---|---|---|"]
    for cat, c in result["categories"].items():
        rows.append(f"| {cat} | {c['labels']} | {c['tp']} | {c['fn']} | {c['fp']} | {c['recall']} | {c['precision']} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--details", action="store_true", help="list every miss and false positive")
    parser.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    parser.add_argument("--set", choices=tuple(SETS), default="dev", help="which label set (default dev)")
    args = parser.parse_args(argv)
    files, labels = [], set()
    for suffix in SETS[args.set]:
        files += read_files(HERE / f"files{suffix}.txt")
        labels |= read_labels(HERE / f"labels{suffix}.csv")
    missing = [f for f in files if not (CORPUS / f).is_file()]
    if missing:
        print(f"score.py: {len(missing)} labelled files are missing (first: corpus/{missing[0]}); "
              "run benchmarks/accuracy/recall/fetch.py", file=sys.stderr)
        return 2
    stray = sorted({f for f, _, _ in labels} - set(files))
    if stray:
        print(f"score.py: labels.csv names files not in files.txt: {stray[0]}", file=sys.stderr)
        return 2
    findings = scan(files)
    result = score(labels, findings, files)
    print(f"{result['labels']} labels in {result['files']} files; {result['notes']} note findings not scored")
    print(table(result))
    if args.details:
        text = {(f, ln, cat): f"{sev} {rule} {msg}" for f, ln, cat, sev, rule, msg in findings}
        print("\nmissed:")
        for f, ln, cat in result["misses"]:
            print(f"  {f}:{ln} {cat}")
        print("\nfalse positives:")
        for key in result["false_positives"]:
            print(f"  {key[0]}:{key[1]} {key[2]}  {text.get(key, '')}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
