"""The public API other stages build on (config, baseline, cache, the main command)."""

from __future__ import annotations

import inspect

import opscan.scan as scan
from opscan.records import Finding


def test_public_names():
    assert set(scan.__all__) >= {"load_rules", "scan_paths", "scan_source", "scan_memory", "RuleSet",
                                 "ScanResult", "FileResult", "Suppression", "encode_result", "decode_result"}
    assert list(inspect.signature(scan.load_rules).parameters)[:3] == ["extra_dirs", "select", "ignore"]
    assert list(inspect.signature(scan.scan_paths).parameters)[:5] == ["root", "paths", "rules", "exclude", "jobs"]
    assert list(inspect.signature(scan.scan_source).parameters)[:3] == ["relpath", "data", "rules"]


def test_scan_source_is_pure_and_results_round_trip():
    rules = scan.load_rules()
    data = b"import torch\nx = torch.zeros(1).to('cuda')  # opscan: ignore[OPS105]\n"
    first = scan.scan_source("a/b.py", data, rules)
    assert first == scan.scan_source("a/b.py", data, rules)
    assert isinstance(first.findings[0], Finding) and first.findings[0].location.path == "a/b.py"
    assert scan.decode_result(scan.encode_result(first)) == first
    assert first.suppressions[0].codes == ("OPS105",) and first.suppressions[0].used == ()
