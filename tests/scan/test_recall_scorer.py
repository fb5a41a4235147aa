"""benchmarks/accuracy/recall: the labels are well-formed and the scorer counts what docs/benchmarks.md says.

The corpus itself is fetched at run time (benchmarks/accuracy/recall/fetch.py), so these tests only read the
labels and run the scorer's matching on made-up findings."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECALL = ROOT / "benchmarks" / "accuracy" / "recall"


def _score_module():
    spec = importlib.util.spec_from_file_location("recall_score", RECALL / "score.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_labels_are_unique_known_categories_in_listed_files_and_pinned_packages():
    score = _score_module()
    labels = score.read_labels()
    files = score.read_files()
    assert len(labels) >= 300 and len(files) >= 20
    assert {f for f, _, _ in labels} <= set(files)
    assert {cat for _, _, cat in labels} == set(score.CATEGORIES)
    packages = {f.split("/", 1)[0] for f in files}
    fetch = (RECALL / "fetch.py").read_text(encoding="utf-8")
    assert len(packages) >= 8 and all(f'("{p}", ' in fetch for p in packages)
    assert "benchmarks/accuracy/recall/corpus/" in (ROOT / ".gitignore").read_text(encoding="utf-8")


def test_scorer_matches_file_line_and_category_and_skips_notes():
    score = _score_module()
    labels = {("a.py", 3, "cuda-api"), ("a.py", 5, "device-string"), ("b.py", 1, "custom-kernel")}
    findings = [
        ("a.py", 3, "cuda-api", "error", "OPS201", ""),          # true positive
        ("a.py", 5, "cuda-api", "warning", "OPS210", ""),        # right line, wrong category: false positive
        ("a.py", 9, "device-string", "note", "OPS104", ""),      # a note: not scored
        ("c.py", 1, "cuda-api", "error", "OPS201", ""),          # outside the labelled files: ignored
    ]
    result = score.score(labels, findings, ["a.py", "b.py"])
    overall = result["categories"]["overall"]
    assert (overall["tp"], overall["fn"], overall["fp"]) == (1, 2, 1)
    assert result["notes"] == 1
    assert result["categories"]["cuda-api"]["precision"] == 0.5
    assert result["misses"] == [("a.py", 5, "device-string"), ("b.py", 1, "custom-kernel")]


def test_heldout_parts_are_disjoint_from_dev_and_pinned_and_heldout_all_joins_them():
    score = _score_module()
    dev = set(score.read_files())
    fetch = (RECALL / "fetch.py").read_text(encoding="utf-8")
    parts = {}
    for name in ("heldout", "heldout2", "heldout3"):
        (suffix,) = score.SETS[name]
        files = score.read_files(RECALL / f"files{suffix}.txt")
        labels = score.read_labels(RECALL / f"labels{suffix}.csv")
        assert {f for f, _, _ in labels} <= set(files) and not set(files) & dev
        assert all(f'("{f.split("/", 1)[0]}", ' in fetch for f in files)
        parts[name] = set(files)
    assert not parts["heldout"] & parts["heldout2"]
    # held-out 2 and held-out 3 each come from packages no other part uses
    def packages(files):
        return {f.split("/", 1)[0] for f in files}

    for name in ("heldout2", "heldout3"):
        others = dev.union(*(files for other, files in parts.items() if other != name))
        assert not packages(parts[name]) & packages(others), name
        assert len(packages(parts[name])) >= 3
    assert score.SETS["heldout-all"] == score.SETS["heldout"] + score.SETS["heldout2"] + score.SETS["heldout3"]
