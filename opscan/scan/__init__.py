"""Source scan: rules over the files of a tree; never imports or runs the scanned code.

Public API (pinned by tests/scan/test_scan_api.py):
    load_rules(extra_dirs=(), select=(), ignore=()) -> RuleSet
    scan_paths(root, paths=None, rules=None, exclude=(), jobs=1, check_fixes=True, cache=None,
               probe=None) -> ScanResult
    scan_source(relpath, data, rules, project=EMPTY) -> FileResult      (pure, per file)
    scan_memory(files, rules=None) -> ScanResult                        (in-memory files)

The names are imported on first use (PEP 562): importing a module of this package does not load
the scanner itself (file_scan.py and its visitor), which a warm scan, answered from the cache's
tree index, never runs (docs/benchmarks.md, "Issue 40").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opscan.scan.file_scan import scan_source
    from opscan.scan.project import EMPTY, Project
    from opscan.scan.result_codec import decode_result, encode_result
    from opscan.scan.results import FileResult, ScanResult, Suppression
    from opscan.scan.rules import Rule, RuleSet, load_rule_file, load_rules
    from opscan.scan.tree import scan_memory, scan_paths

_WHERE = {
    "scan_source": "file_scan", "EMPTY": "project", "Project": "project", "decode_result": "result_codec",
    "encode_result": "result_codec", "FileResult": "results", "ScanResult": "results", "Suppression": "results",
    "Rule": "rules", "RuleSet": "rules", "load_rule_file": "rules", "load_rules": "rules",
    "scan_memory": "tree", "scan_paths": "tree",
}

__all__ = [
    "EMPTY", "FileResult", "Project", "Rule", "RuleSet", "ScanResult", "Suppression", "decode_result",
    "encode_result", "load_rule_file", "load_rules", "scan_memory", "scan_paths", "scan_source",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"opscan.scan.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
