"""OPS003 as a job of the scan (opscan/scan/suppressions.py, `scan_paths(..., unused_suppressions=True)`):
its snippet is the line the scan read, kept in the Suppression record and its cache entry."""

from __future__ import annotations

from opscan.scan import decode_result, encode_result, load_rules, scan_paths, scan_source
from opscan.scan.cache import ResultCache

RULES = load_rules()
# a form feed and a U+2028 are no line ends for Python: the snippet is still the line's own text
TEXT = "import torch\x0c\ns = 'a\u2028b'\ny = torch.ones(2)  # opscan: ignore[OPS101]\nz = 1  # opscan: ignore\n"


def _unused(result):
    return [(f.location.path, f.location.line, f.snippet) for f in result.findings if f.rule == "OPS003"]


def test_unused_suppressions_are_reported_from_the_lines_the_scan_read(tmp_path):
    (tmp_path / "a.py").write_text(TEXT, encoding="utf-8", newline="")
    (tmp_path / "b.py").write_bytes(b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'  # opscan: ignore\n")
    found = _unused(scan_paths(tmp_path, rules=RULES, check_fixes=False, unused_suppressions=True))
    assert found == [("a.py", 3, "y = torch.ones(2)  # opscan: ignore[OPS101]"),
                     ("a.py", 4, "z = 1  # opscan: ignore"),
                     ("b.py", 2, "name = '\u00e9t\u00e9'  # opscan: ignore")]   # decoded as Python decodes it
    assert _unused(scan_paths(tmp_path, rules=RULES, check_fixes=False)) == []   # not asked: not run


def test_a_cached_result_keeps_the_suppression_lines(tmp_path):
    (tmp_path / "a.py").write_text(TEXT, encoding="utf-8", newline="")
    cache = ResultCache(tmp_path.parent / f"{tmp_path.name}-cache", "salt")
    runs = [_unused(scan_paths(tmp_path, rules=RULES, check_fixes=False, cache=cache, unused_suppressions=True))
            for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0]) == 2
    result = scan_source("a.py", TEXT.encode(), RULES)
    assert [s.text for s in result.suppressions] == ["y = torch.ones(2)  # opscan: ignore[OPS101]",
                                                      "z = 1  # opscan: ignore"]
    assert decode_result(encode_result(result)) == result
