"""Findings are identical with and without every speed-up, on a real tree (part of transformers).

Speed-ups: the text pre-filter and the per-statement pruning (NOTE [pre-filter tokens]), worker
processes, the content cache (cold and warm) and the stat index. The reference run has them all
off: every file parsed, every statement visited, one process, no cache.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
from pathlib import Path

import pytest

from opscan.scan.cache import ResultCache, scan_salt
from opscan.scan.tree import scan_paths
from opscan.scan.rules import load_rules

SUBSET = ("models/llama", "models/mixtral", "models/bert", "utils", "integrations")


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("transformers is not installed")
    source = Path(list(spec.submodule_search_locations)[0])
    root = tmp_path_factory.mktemp("tf") / "transformers"
    past = time.time() - 3600
    for sub in SUBSET:
        shutil.copytree(source / sub, root / sub, ignore=shutil.ignore_patterns("__pycache__"))
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (past, past))  # not "racy": the stat index may trust them
    return root


@pytest.fixture(scope="module")
def reference(tree: Path):
    rules = load_rules()
    assert rules.compiled.always is False  # the switch exists and the speed-ups are on by default
    rules.compiled.always = True  # no pre-filter, no statement pruning: every node visited
    result = scan_paths(tree, rules=rules, jobs=1, check_fixes=False)
    assert result.files_scanned >= 100
    categories = {f.category for f in result.findings}
    assert len(result.findings) >= 30 and {"cuda-api", "cuda-only-lib"} <= categories
    return result


def _same(result, reference) -> None:
    assert result.findings == reference.findings
    assert result.suppressions == reference.suppressions
    assert result.files_scanned == reference.files_scanned


@pytest.mark.slow
def test_prefilter_and_pruning_change_nothing(tree: Path, reference) -> None:
    _same(scan_paths(tree, jobs=1, check_fixes=False), reference)


@pytest.mark.slow
def test_workers_change_nothing(tree: Path, reference) -> None:
    _same(scan_paths(tree, jobs=2, check_fixes=False), reference)


@pytest.mark.slow
def test_cache_cold_warm_and_rehashed_change_nothing(tree: Path, reference, tmp_path: Path) -> None:
    rules = load_rules()
    cache = ResultCache(tmp_path / "cache", scan_salt(rules.fingerprint()))
    _same(scan_paths(tree, rules=rules, jobs=2, cache=cache, check_fixes=False), reference)  # cold
    _same(scan_paths(tree, rules=rules, jobs=2, cache=cache, check_fixes=False), reference)  # warm
    _same(scan_paths(tree, rules=rules, jobs=1, cache=cache, check_fixes=False), reference)
    now = time.time() - 60
    for path in tree.rglob("*.py"):
        os.utime(path, (now, now))  # stat index misses: read + hash, results from the cache
    _same(scan_paths(tree, rules=rules, jobs=2, cache=cache, check_fixes=False), reference)
