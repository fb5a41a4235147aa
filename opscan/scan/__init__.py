"""Source scan: rules over the files of a tree; never imports or runs the scanned code.

Public API (pinned by tests/scan/test_scan_api.py):
    load_rules(extra_dirs=(), select=(), ignore=()) -> RuleSet
    scan_paths(root, paths=None, rules=None, exclude=(), jobs=1, check_fixes=True, cache=None,
               probe=None) -> ScanResult
    scan_source(relpath, data, rules, project=EMPTY) -> FileResult      (pure, per file)
    scan_memory(files, rules=None) -> ScanResult                        (in-memory files)
"""

from opscan.scan.file_scan import scan_source
from opscan.scan.project import EMPTY, Project
from opscan.scan.result_codec import decode_result, encode_result
from opscan.scan.results import FileResult, ScanResult, Suppression
from opscan.scan.rules import Rule, RuleSet, load_rule_file, load_rules
from opscan.scan.tree import scan_memory, scan_paths

__all__ = [
    "EMPTY", "FileResult", "Project", "Rule", "RuleSet", "ScanResult", "Suppression", "decode_result",
    "encode_result", "load_rule_file", "load_rules", "scan_memory", "scan_paths", "scan_source",
]
