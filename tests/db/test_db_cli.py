"""`opscan db list|show|diff|validate` as a user runs them."""

from __future__ import annotations

import json

import pytest
from tests.support.db_files import doc, write

pytest.importorskip("torch")


def test_list(run_cli):
    code, out, err = run_cli("db", "list")
    assert code == 0, err
    specs = [line.split()[0] for line in out.splitlines() if not line.startswith(" ")]
    assert specs == ["torch-neuronx-xla==2.3.0", "torch-neuronx-xla==2.32.0", "torchneuron==2.33.0"]
    code, out, _ = run_cli("db", "list", "--format", "json")
    rows = json.loads(out)["releases"]
    assert rows[-1]["by_status"] == {"native": 356, "limited": 21, "unknown": 1} and rows[-1]["unlisted"] == "unknown"


@pytest.mark.slow
def test_show_terminal_and_json(run_cli):
    code, out, err = run_cli("db", "show", "aten::add.Tensor", "aten::_foreach_sqrt")
    assert code == 0, err
    assert "aten::add.Tensor: native (pre-release source, unverified for 2.33)  [confidence low]" in out
    assert "parmoham-aws/test-repo-parmoham@98154b867aa2" in out
    assert "aten::_foreach_sqrt: composite" in out and "parts: aten::sqrt" in out
    code, out, _ = run_cli("db", "show", "aten::sqrt.out", "--backend", "torch-neuronx-xla==2.32.0",
                           "--format", "json")
    data = json.loads(out)
    assert data["backend"] == "torch-neuronx-xla==2.32.0"
    (op,) = data["ops"]
    assert (op["op"], op["status"], op["via"]) == ("aten::sqrt.out", "limited",
                                                  "overload packet aten::sqrt listed: not with complex64 (C64) inputs")
    assert {e["kind"] for e in op["evidence"]} == {"documented"}


def test_show_with_a_db_file_and_a_pairing_warning(run_cli, tmp_path):
    path = write(tmp_path, doc(packages=[{"name": "old-backend", "version": "0.1", "torch": "1.11"}]))
    code, out, _ = run_cli("db", "show", "aten::mm", "--db", str(path))
    assert code == 0
    assert "native (probed on test-backend 1.0.0)" in out
    assert "does not pair with testline==1.0.0 (old-backend 0.1 with torch 1.11)" in out


def test_show_bad_op_and_bad_release_are_one_line_errors(run_cli):
    code, _, err = run_cli("db", "show", "add")
    assert code == 2 and "not an operator name" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("db", "show", "aten::mm", "--backend", "torchneuron==1.0")
    assert code == 2 and "available: torch-neuronx-xla==2.3.0" in err


def test_diff_between_two_shipped_releases_is_a_changelog(run_cli):
    code, out, err = run_cli("db", "diff", "torch-neuronx-xla==2.3.0", "torch-neuronx-xla==2.32.0")
    assert code == 0, err
    assert out.startswith("Changelog torch-neuronx-xla==2.3.0 -> torch-neuronx-xla==2.32.0\n")
    release, evidence = out.split("The evidence changed")
    # release notes date glu, scatter_reduce, count_nonzero after 2.3.0: the release changed
    assert "The release changed (3)\n  Ops added (3)" in release
    assert "    aten::glu: native (" in release and "[since 2023-03-28]" in release
    # the partitioner note (sort) and sqrt's complex64 condition are later knowledge, not a release change
    assert "aten::sort" not in release and "aten::sqrt" not in release
    assert "  Ops added (1)\n    aten::sort: unsupported (" in evidence
    assert "  Status changed (1)\n    aten::sqrt: native -> limited" in evidence
    assert "Unchanged: 40 ops" in out
    code, out, _ = run_cli("db", "diff", "torch-neuronx-xla==2.3.0", "torch-neuronx-xla==2.32.0",
                           "--format", "json")
    data = json.loads(out)
    assert [a["op"] for a in data["release_changed"]["added"]] == ["aten::count_nonzero", "aten::glu",
                                                                   "aten::scatter_reduce"]
    assert [a["op"] for a in data["evidence_changed"]["added"]] == ["aten::sort"]
    changed = data["evidence_changed"]["status_changed"][0]
    assert changed["op"] == "aten::sqrt" and (changed["old"]["status"], changed["new"]["status"]) == \
        ("native", "limited")
    assert data["release_changed"]["status_changed"] == [] and data["unchanged"] == 40


def test_diff_of_two_probes_is_all_release_change(run_cli, tmp_path):
    # complete kernel lists on both sides: each file measured its own install
    old = write(tmp_path, name="old.yaml")
    new_doc = doc(release="1.1.0")
    new_doc["ops"] = [e for e in new_doc["ops"] if e["op"] != "aten::mm"]
    new = write(tmp_path, new_doc, name="new.yaml")
    code, out, _ = run_cli("db", "diff", str(old), str(new), "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert [r["op"] for r in data["release_changed"]["removed"]] == ["aten::mm"]
    assert data["evidence_changed"]["removed"] == []


def test_diff_accepts_files(run_cli, tmp_path):
    old = write(tmp_path, name="old.yaml")
    new_doc = doc(release="1.1.0")
    new_doc["ops"] = [e for e in new_doc["ops"] if e["op"] != "aten::mm"]
    new_doc["ops"][-1] = dict(new_doc["ops"][-1], status="native", note="")
    del new_doc["ops"][-1]["note"]
    new = write(tmp_path, new_doc, name="new.yaml")
    code, out, _ = run_cli("db", "diff", str(old), str(new))
    assert code == 0
    assert "Ops removed (1)\n    aten::mm: native" in out
    assert "Status changed (1)\n    aten::relu: limited -> native" in out


def test_validate_ok_bad_and_strict(run_cli, tmp_path):
    code, out, _ = run_cli("db", "validate")
    assert code == 0 and out.count("ok ") == 3
    good = write(tmp_path, name="good.yaml")
    broken = write(tmp_path, doc(ops=list(reversed(doc()["ops"]))), name="broken.yaml")
    code, out, err = run_cli("db", "validate", str(broken), str(good))
    assert code == 1
    assert f"{broken}:" in err and "must be sorted" in err
    assert f"ok {good}" in out  # one bad file does not stop the rest
    # paired with a torch opscan has no operator list for: the installed torch only warns
    strange = doc(packages=[{"name": "test-backend", "version": "1.0.0", "torch": "2.99"}])
    strange["ops"].append({"op": "aten::zz_not_an_op", "status": "native", "evidence": ["probe"],
                           "confidence": "high"})
    path = write(tmp_path, strange, name="strange.yaml")
    assert run_cli("db", "validate", str(path))[0] == 0
    code, _, err = run_cli("db", "validate", "--strict", str(path))
    assert code == 1 and "aten::zz_not_an_op: no such operator" in err
    # paired with torch 2.13, whose operators opscan ships: refused with its line
    path = write(tmp_path, dict(strange, packages=doc()["packages"]), name="refused.yaml")
    code, _, err = run_cli("db", "validate", str(path))
    assert code == 1 and f"{path}:" in err and "aten::zz_not_an_op: no such operator in torch 2.13" in err


def test_db_without_action_is_a_usage_error(run_cli):
    assert run_cli("db")[0] == 2
