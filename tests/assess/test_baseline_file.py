"""Baseline files: fingerprints that survive moved lines, stale entries, atomic writes, versions."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from opscan.assess import baseline
from opscan.errors import InputError
from opscan.records import Finding, Location


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


@pytest.mark.parametrize("snippet", [
    'x = x.to("cuda")  # TODO: port',             # a trailing comment
    '        x = x.to("cuda")',                     # reindented
    'x = x.to( "cuda" )',                           # spacing between tokens
    'x = x.to("cuda")  # opscan: see "x.to(cpu)"',
])
def test_comments_and_whitespace_do_not_make_a_finding_new(tmp_path, snippet):
    path = tmp_path / "base.json"
    baseline.write(path, BEFORE, "0.1.0")
    changed = (replace(BEFORE[0], snippet=snippet),) + BEFORE[1:]
    applied = baseline.apply(changed, baseline.load(path))
    assert applied.new == () and applied.known == 3 and applied.stale == ()


@pytest.mark.parametrize("snippet", [
    'x = x.to("cuda:1")',                            # the code changed
    'x = x.to("cuda # not a comment")',              # a `#` inside a string is not a comment
    'x = y.to("cuda")',
])
def test_changing_the_code_makes_it_new(tmp_path, snippet):
    path = tmp_path / "base.json"
    baseline.write(path, BEFORE, "0.1.0")
    changed = (replace(BEFORE[0], snippet=snippet),) + BEFORE[1:]
    applied = baseline.apply(changed, baseline.load(path))
    assert [f.snippet for f in applied.new] == [snippet] and len(applied.stale) == 1


def test_code_of_uses_the_tokenizer_to_find_comments():
    assert baseline.code_of('    y = f("a # b", c)  # TODO') == 'y=f("a#b",c)'     # `#` in a string is code
    assert baseline.code_of("y = f('#', c)") == "y=f('#',c)"
    assert baseline.code_of('model.to("cuda",  # first line of a call') == 'model.to("cuda",'
    assert baseline.code_of('x = """cuda  # docs') == 'x="""cuda#docs'         # inside an unclosed string
    assert baseline.code_of('x = f"{a}#{b}"  # c') == 'x=f"{a}#{b}"'


def test_non_python_lines_compare_without_whitespace(tmp_path):
    cu = _f("k.cu", 1, "#include <cuda.h>", rule="OPS308")
    path = tmp_path / "base.json"
    baseline.write(path, (cu,), "0.1.0")
    assert baseline.apply((replace(cu, snippet="#include  <cuda.h>"),), baseline.load(path)).known == 1
    assert len(baseline.apply((replace(cu, snippet="#include <cuda_runtime.h>"),), baseline.load(path)).new) == 1


def test_a_format_1_baseline_is_still_read_and_matched(tmp_path):
    path = tmp_path / "old.json"
    entries = [{"fingerprint": fp, "rule": f.rule, "path": f.location.path, "line": f.location.line,
                "message": f.message} for f, fp in baseline.fingerprints(BEFORE, version=1)]
    path.write_text(json.dumps({"opscan_baseline": 1, "tool_version": "0.1.0", "entries": entries}))
    loaded = baseline.load(path)
    assert {e.version for e in loaded} == {1}
    applied = baseline.apply(BEFORE, loaded)
    assert applied.new == () and applied.known == 3
    baseline.write(path, BEFORE, "0.2.0")            # `opscan baseline` rewrites it in the new format
    assert json.loads(path.read_text())["opscan_baseline"] == baseline.BASELINE_VERSION == 2


def test_formats_differ_only_on_lines_with_comments():
    commented = (replace(BEFORE[0], snippet='x = x.to("cuda")  # TODO: port'),) + BEFORE[1:]
    v1 = [fp for _, fp in baseline.fingerprints(commented, version=1)]
    v2 = [fp for _, fp in baseline.fingerprints(commented)]
    assert v1[0] != v2[0] and v1[2] == v2[2]      # b.py's line has no comment: same fingerprint


def test_a_todo_comment_on_a_baselined_line_passes_the_gate(tmp_path, run_cli):
    source = 'import torch\n\n\ndef train(model):\n    model = model.to("cuda")\n    return model\n'
    (tmp_path / "train.py").write_text(source)
    base = tmp_path / "baseline.json"
    assert run_cli("baseline", str(tmp_path), "--output", str(base))[0] == 0
    (tmp_path / "train.py").write_text('import torch\n\n\ndef train(model):\n  # reindented by two\n'
                                       '  model = model.to( "cuda" )  # TODO: port\n  return model\n')
    assert run_cli(str(tmp_path), "--no-trace", "--baseline", str(base))[0] == 0
    (tmp_path / "train.py").write_text(source.replace('to("cuda")', 'to("cuda:1")'))
    assert run_cli(str(tmp_path), "--no-trace", "--baseline", str(base))[0] == 1
