"""Baseline files: fingerprints that survive moved lines, stale entries, atomic writes, versions."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from opscan import baseline
from opscan.errors import InputError
from opscan.model import Finding, Location


def _f(path, line, snippet, rule="OPS101"):
    return Finding(rule, "hardcoded-cuda-device", "device-string", "error", "pinned", Location(path, line),
                   snippet=snippet)


BEFORE = (_f("a.py", 3, 'x = x.to("cuda")'), _f("a.py", 9, 'x = x.to("cuda")'), _f("b.py", 1, "y.cuda()"))


def test_unchanged_and_moved_findings_match(tmp_path):
    path = tmp_path / "base.json"
    assert baseline.write(path, BEFORE, "0.1.0") == 3
    moved = tuple(replace(f, location=replace(f.location, line=f.location.line + 4),
                          snippet="    " + f.snippet) for f in BEFORE)
    applied = baseline.apply(moved, baseline.load(path))
    assert applied.new == () and applied.known == 3 and applied.stale == ()


def test_new_identical_line_is_the_only_new_finding(tmp_path):
    path = tmp_path / "base.json"
    baseline.write(path, BEFORE, "0.1.0")
    after = BEFORE + (_f("a.py", 20, 'x = x.to("cuda")'),)
    applied = baseline.apply(after, baseline.load(path))
    assert [f.location.line for f in applied.new] == [20]
    assert applied.known == 3


def test_fixed_findings_are_stale(tmp_path):
    path = tmp_path / "base.json"
    baseline.write(path, BEFORE, "0.1.0")
    applied = baseline.apply(BEFORE[:1], baseline.load(path))
    assert applied.new == ()
    assert [(e.path, e.line) for e in applied.stale] == [("a.py", 9), ("b.py", 1)]


def test_editing_the_flagged_line_makes_it_new(tmp_path):
    path = tmp_path / "base.json"
    baseline.write(path, BEFORE, "0.1.0")
    edited = (replace(BEFORE[2], snippet="z.cuda()"),) + BEFORE[:2]
    applied = baseline.apply(edited, baseline.load(path))
    assert [f.snippet for f in applied.new] == ["z.cuda()"] and len(applied.stale) == 1


def test_file_is_deterministic_and_written_atomically(tmp_path, monkeypatch):
    path = tmp_path / "base.json"
    baseline.write(path, BEFORE, "0.1.0")
    first = path.read_bytes()
    baseline.write(path, tuple(reversed(BEFORE)), "0.1.0")
    assert path.read_bytes() == first
    calls = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append((a, b)), real(a, b)))
    baseline.write(path, BEFORE[:1], "0.1.0")
    assert calls and calls[0][1] == path and str(calls[0][0]).startswith(str(tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == ["base.json"]   # no temp file left behind

    def boom(a, b):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(InputError, match="cannot write the baseline"):
        baseline.write(path, BEFORE, "0.1.0")
    assert len(json.loads(path.read_text())["entries"]) == 1        # old file intact
    assert [p.name for p in tmp_path.iterdir()] == ["base.json"]


def test_newer_format_and_bad_files_are_clear_errors(tmp_path):
    path = tmp_path / "base.json"
    path.write_text(json.dumps({"opscan_baseline": 99, "tool_version": "9.0", "entries": []}))
    with pytest.raises(InputError, match="newer opscan"):
        baseline.load(path)
    path.write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        baseline.load(path)
    path.write_text("{}")
    with pytest.raises(InputError, match="not an opscan baseline"):
        baseline.load(path)
    with pytest.raises(InputError, match="not found"):
        baseline.load(tmp_path / "missing.json")
