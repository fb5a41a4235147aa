"""`opscan zoo diff`: models that became ready or broke between two runs."""

from __future__ import annotations

import json

from opscan.zoo.diff import diff, op_changes


def _doc(backend: str, **verdicts) -> dict:
    models = []
    for name, (verdict, blockers) in verdicts.items():
        models.append({"name": name, "verdict": verdict, "blockers": list(blockers),
                       "error": "boom" if verdict == "failed" else ""})
    return {"schema": "opscan-zoo/1", "meta": {"backend": backend, "tools": {"torch": "2.13.0"}}, "models": models}


OLD = _doc("torchneuron==2.32.0", gpt2=("fallback", ["aten::sort"]), llama=("ready", []),
           t5=("blocked", ["aten::a", "aten::b"]), bert=("unknown", ["aten::x"]), gone=("ready", []),
           same=("ready", []))
NEW = _doc("torchneuron==2.33.0", gpt2=("ready", []), llama=("failed", []), t5=("blocked", ["aten::b"]),
           bert=("blocked", ["aten::x"]), fresh=("ready", []), same=("ready", []))


def test_diff_classifies_each_model():
    changes = {c.model: c for c in diff(OLD, NEW)}
    assert {m: c.kind for m, c in changes.items()} == {
        "gpt2": "became-ready", "llama": "broke", "t5": "ops-changed", "bert": "regressed",
        "fresh": "added", "gone": "removed"}
    assert changes["gpt2"].fixed == ("aten::sort",)
    assert changes["t5"].fixed == ("aten::a",)
    assert changes["llama"].error == "boom"


def test_diff_command_text_json_and_exit_codes(run_cli, tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(OLD))
    new.write_text(json.dumps(NEW))
    code, out, _err = run_cli("zoo", "diff", str(old), str(new))
    assert code == 1  # something broke
    assert "became-ready (1)" in out and "gpt2: fallback -> ready; fixed: aten::sort" in out
    assert "broke (1)" in out and "llama: ready -> failed; error: boom" in out
    code, out, _ = run_cli("zoo", "diff", str(old), str(new), "--format", "json")
    assert {c["model"] for c in json.loads(out)["changes"]} >= {"gpt2", "llama"}
    code, out, _ = run_cli("zoo", "diff", str(old), str(old))
    assert code == 0 and "no model changed" in out


def test_diff_rejects_a_file_that_is_not_zoo_json(run_cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "something-else"}')
    code, _out, err = run_cli("zoo", "diff", str(bad), str(bad))
    assert code == 2 and "bad.json" in err
    code, _out, err = run_cli("zoo", "diff", str(bad))
    assert code == 2 and "OLD.json NEW.json" in err


def _model(name, status="ok", **cells):
    return {"name": name, "status": status, "verdict": "ready",
            "op_cells": {op.replace("__", "::"): cell for op, cell in cells.items()}}


def test_op_changes_compare_the_op_sets_of_models_complete_in_both_runs():
    old = {"models": [_model("a", aten__mm="FBO", aten__add="F"), _model("b", aten__mm="F"),
                      _model("c", aten__mm="F"), _model("d", "partial", aten__mm="F")]}
    new = {"models": [_model("a", aten__mm="FBO", aten__add="F"), _model("b", aten__mm="FB", aten__sub="F"),
                      _model("c", "timeout"), _model("d", aten__mm="F"), _model("e", aten__mm="F")]}
    compared, changes = op_changes(old, new)
    assert compared == 2                       # a and b: c and d are not complete in both, e is new
    (only,) = changes
    assert only.model == "b" and only.added == ("aten::sub",) and only.gone == ()
    assert only.cells == (("aten::mm", "F", "FB"),)


def test_diff_output_goes_through_the_one_writer(run_cli, tmp_path):
    """--output of `zoo diff` is written as every command's report is (commands/flags.py
    write_output): missing parent folders are made; an unwritable target is one line, exit 2."""
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(OLD))
    new.write_text(json.dumps(NEW))
    target = tmp_path / "out" / "diff.json"
    code, out, _ = run_cli("zoo", "diff", str(old), str(new), "--format", "json", "--output", str(target))
    assert code == 1 and out == ""
    assert {c["model"] for c in json.loads(target.read_text())["changes"]} >= {"gpt2", "llama"}
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    code, out, err = run_cli("zoo", "diff", str(old), str(new), "--output", str(blocked / "diff.txt"))
    assert code == 2 and out == "" and f"{blocked / 'diff.txt'}: cannot write the report" in err
