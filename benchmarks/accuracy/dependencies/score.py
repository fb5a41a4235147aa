"""Scores opscan's dependency findings against labelled manifest lines (docs/dependencies.md, "Accuracy").

A label row is a manifest line a port must change (file,line,reason), written by reading the
manifest before opscan was run on it (LABELLING.md). A labelled line is found when opscan reports
any finding of category `dependency` (or a CUDA-only-library finding) at that line. Every
finding in a listed file on a line without a label is listed as extra; an error on a torch or
companion specifier that admits a paired torch would be one of them (the goal: none).

    python benchmarks/accuracy/dependencies/score.py fixtures     # tests/scan/manifests, labels_fixtures.csv
    python benchmarks/accuracy/dependencies/score.py dev          # corpus/ (fetch.py), labels_dev.csv, files_dev.txt
    python benchmarks/accuracy/dependencies/score.py heldout      # corpus/, labels_heldout.csv, files_heldout.txt
    python benchmarks/accuracy/dependencies/score.py heldout2     # corpus/heldout2/ (fetch_heldout2.py), HELDOUT2.md
    python benchmarks/accuracy/dependencies/score.py heldout3     # corpus/heldout3/ (fetch_heldout3.py), HELDOUT3.md
    python benchmarks/accuracy/dependencies/score.py heldout4     # corpus/heldout4/ (fetch_heldout4.py), HELDOUT4.md
    python benchmarks/accuracy/dependencies/score.py heldout5     # corpus/heldout5/ (fetch_heldout5.py), HELDOUT5.md
    python benchmarks/accuracy/dependencies/score.py heldout6     # corpus/heldout6/ (fetch_heldout6.py), HELDOUT6.md
    python benchmarks/accuracy/dependencies/score.py heldout7     # corpus/heldout7/ (fetch_heldout7.py), HELDOUT7.md
    python benchmarks/accuracy/dependencies/score.py heldout8     # corpus/heldout8/ (fetch_heldout8.py), HELDOUT8.md
    python benchmarks/accuracy/dependencies/score.py heldout9     # corpus/heldout9/ (fetch_heldout9.py), HELDOUT9.md
    python benchmarks/accuracy/dependencies/score.py heldout10    # corpus/heldout10/ (fetch_heldout10.py), HELDOUT10.md
    python benchmarks/accuracy/dependencies/score.py heldout11    # corpus/heldout11/ (fetch_heldout11.py), HELDOUT11.md

Each file holding labels gets its own found/labelled count below the total, so a part whose labels
crowd into one file (HELDOUT6.md: 30 of 53 in one export; HELDOUT7.md: 24 of 38; HELDOUT9.md: 21 of 28;
HELDOUT10.md: 34 of 77 in two exports) can be read with and without it.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from opscan.config import Config  # noqa: E402
from opscan.pipeline.phases import dependency_context  # noqa: E402
from opscan.scan.tree import scan_paths  # noqa: E402

SETS = {
    "fixtures": (ROOT / "tests" / "scan" / "manifests", HERE / "labels_fixtures.csv", None),
    "dev": (HERE / "corpus", HERE / "labels_dev.csv", HERE / "files_dev.txt"),
    "heldout": (HERE / "corpus", HERE / "labels_heldout.csv", HERE / "files_heldout.txt"),
    # the second held-out part (issue #43, HELDOUT2.md): fetch_heldout2.py copies its files
    "heldout2": (HERE / "corpus" / "heldout2", HERE / "labels_heldout2.csv", HERE / "files_heldout2.txt"),
    # the third held-out part (issue #43, HELDOUT3.md): fetch_heldout3.py copies its files; scored once, by the lead
    "heldout3": (HERE / "corpus" / "heldout3", HERE / "labels_heldout3.csv", HERE / "files_heldout3.txt"),
    # the fourth held-out part (issue #43, HELDOUT4.md): fetch_heldout4.py copies its files; scored once, by the lead
    "heldout4": (HERE / "corpus" / "heldout4", HERE / "labels_heldout4.csv", HERE / "files_heldout4.txt"),
    # the fifth held-out part (issue #43, HELDOUT5.md): fetch_heldout5.py copies its files; scored once, by the lead
    "heldout5": (HERE / "corpus" / "heldout5", HERE / "labels_heldout5.csv", HERE / "files_heldout5.txt"),
    # the sixth held-out part (issue #43, HELDOUT6.md): fetch_heldout6.py copies its files; scored once, by the lead
    "heldout6": (HERE / "corpus" / "heldout6", HERE / "labels_heldout6.csv", HERE / "files_heldout6.txt"),
    # the seventh held-out part (issue #43, HELDOUT7.md): fetch_heldout7.py copies its files; scored once, by the lead
    "heldout7": (HERE / "corpus" / "heldout7", HERE / "labels_heldout7.csv", HERE / "files_heldout7.txt"),
    # the eighth held-out part (issue #43, HELDOUT8.md): fetch_heldout8.py copies its files; scored once, by the lead
    "heldout8": (HERE / "corpus" / "heldout8", HERE / "labels_heldout8.csv", HERE / "files_heldout8.txt"),
    # the ninth held-out part (issue #43, HELDOUT9.md): fetch_heldout9.py copies its files; scored once, by the lead
    "heldout9": (HERE / "corpus" / "heldout9", HERE / "labels_heldout9.csv", HERE / "files_heldout9.txt"),
    # the tenth held-out part (issue #43, HELDOUT10.md): fetch_heldout10.py copies its files; scored once, by the lead
    "heldout10": (HERE / "corpus" / "heldout10", HERE / "labels_heldout10.csv", HERE / "files_heldout10.txt"),
    # the eleventh held-out part (issue #43, HELDOUT11.md): fetch_heldout11.py copies its files; scored once by the lead
    "heldout11": (HERE / "corpus" / "heldout11", HERE / "labels_heldout11.csv", HERE / "files_heldout11.txt"),
}
FETCH = {"heldout2": "fetch_heldout2.py", "heldout3": "fetch_heldout3.py", "heldout4": "fetch_heldout4.py",
         "heldout5": "fetch_heldout5.py", "heldout6": "fetch_heldout6.py", "heldout7": "fetch_heldout7.py",
         "heldout8": "fetch_heldout8.py", "heldout9": "fetch_heldout9.py", "heldout10": "fetch_heldout10.py",
         "heldout11": "fetch_heldout11.py"}


def _labels(path: Path) -> dict[tuple[str, int], str]:
    with path.open(encoding="utf-8") as handle:
        return {(row["file"], int(row["line"])): row["reason"] for row in csv.DictReader(handle)}


def _files(path: Path | None, root: Path, labels) -> list[str]:
    if path is None:
        return sorted({p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()})
    listed = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
              if line.strip() and not line.startswith("#")]
    return sorted(set(listed) | {f for f, _ in labels})


def _by_file(labels, hit) -> dict[str, tuple[int, int]]:
    """(found, labelled) per file holding labels, in file order."""
    counts: dict[str, list[int]] = {}
    for key in labels:
        counts.setdefault(key[0], [0, 0])[1] += 1
    for key in hit:
        counts[key[0]][0] += 1
    return {f: (found, labelled) for f, (found, labelled) in sorted(counts.items())}


def score(name: str) -> dict:
    root, labels_path, files_path = SETS[name]
    labels = _labels(labels_path)
    files = _files(files_path, root, labels)
    missing = [f for f in files if not (root / f).is_file()]
    if missing:
        raise SystemExit(f"{len(missing)} listed file(s) are missing under {root} "
                         f"(run {FETCH.get(name, 'fetch.py')}): {missing[:3]}")
    deps = dependency_context(Config(root))
    result = scan_paths(root, [root / f for f in files], jobs=1, check_fixes=False, deps=deps)
    found: dict[tuple[str, int], list[str]] = {}
    for finding in result.findings:
        if finding.category == "dependency" or finding.rule in ("OPS000", "OPS001"):
            found.setdefault((finding.location.path, finding.location.line), []).append(
                f"{finding.rule} {finding.severity}")
    hit = sorted(k for k in labels if k in found)
    miss = sorted(k for k in labels if k not in found)
    extra = sorted((k, v) for k, v in found.items() if k not in labels and k[0] in files)
    wrong_errors = [(k, v) for k, v in extra if any(r.startswith(("OPS501 error", "OPS502 error")) for r in v)]
    # every error on an unlabelled line, for the hand classification (HELDOUT2.md, "Scoring")
    unlabelled_errors = [(k, v) for k, v in extra if any(" error" in r for r in v)]
    return {"set": name, "files": len(files), "labels": len(labels), "found": len(hit),
            "recall": len(hit) / len(labels) if labels else 1.0, "missed": miss, "extra": extra,
            "errors_on_admitting_specifiers": wrong_errors, "unlabelled_errors": unlabelled_errors,
            "labels_by_key": labels, "by_file": _by_file(labels, hit)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("set", choices=sorted(SETS))
    args = parser.parse_args()
    out = score(args.set)
    print(f"{out['set']}: {out['files']} files, {out['labels']} labelled lines, found {out['found']} "
          f"(recall {out['recall']:.0%}); {len(out['extra'])} finding line(s) without a label; "
          f"{len(out['errors_on_admitting_specifiers'])} OPS501/OPS502 error(s) on unlabelled lines; "
          f"{len(out['unlabelled_errors'])} unlabelled line(s) with an error")
    for path, (found, labelled) in out["by_file"].items():
        print(f"  file   {path}: found {found} of {labelled}")
    for key in out["missed"]:
        print(f"  missed {key[0]}:{key[1]}  ({out['labels_by_key'][key]})")
    for key, rules in out["extra"]:
        print(f"  extra  {key[0]}:{key[1]}  {', '.join(rules)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
