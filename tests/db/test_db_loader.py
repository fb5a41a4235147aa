"""Strict loading: every problem is a DatabaseError naming the file and the line; shipped files are clean."""

from __future__ import annotations

import re

import pytest
from tests.support.db_files import BASE, doc, write

from opscan.db import load_file
from opscan.db.shipped import release_files
from opscan.errors import DatabaseError
from opscan.records import EVIDENCE_KINDS, STATUSES, OpName


def _error(path) -> DatabaseError:
    with pytest.raises(DatabaseError) as info:
        load_file(path)
    assert info.value.path == str(path)
    return info.value


def _line_of(path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(needle)


def test_a_valid_file_loads(tmp_path):
    release = load_file(write(tmp_path))
    assert release.spec == "testline==1.0.0"
    assert sorted(release.entries) == [e["op"] for e in BASE["ops"]]
    assert release.entries["aten::relu"].status == "limited"
    assert release.sources["probe"].install == "test-backend 1.0.0 / torch 2.13.0"


def test_duplicate_mapping_key_is_an_error_with_its_line(tmp_path):
    path = write(tmp_path)
    text = path.read_text().replace("device: neuron\n", "device: neuron\ndevice: cpu\n")
    path.write_text(text)
    err = _error(path)
    assert "duplicate key 'device'" in err.message
    assert err.line == _line_of(path, "device: cpu")


def test_duplicate_op_entry_is_an_error(tmp_path):
    ops = BASE["ops"] + [dict(BASE["ops"][-1])]
    path = write(tmp_path, doc(ops=ops))
    err = _error(path)
    assert "duplicate entry for aten::relu" in err.message
    assert err.line == len(path.read_text().splitlines())


@pytest.mark.parametrize("mutate,needle,message", [
    (lambda d: d["ops"][0].update(colour="red"), "colour", "unknown key 'colour'"),
    (lambda d: d["ops"][2].update(status="supported"), "aten::mm", "status 'supported' is not one of"),
    (lambda d: d["ops"][2].update(confidence="certain"), "aten::mm", "confidence 'certain'"),
    (lambda d: d["ops"][2].update(evidence=["nowhere"]), "aten::mm", "unknown source id 'nowhere'"),
    (lambda d: d["ops"][2].update(evidence=["guess"]), "aten::mm", "native needs a documented"),
    (lambda d: d["ops"][2].update(op="aten::mm.default"), "aten::mm.default", "not canonical"),
    (lambda d: d["ops"][2].update(op="mm"), "op: mm,", "not an operator name"),
    (lambda d: d["ops"].reverse(), "aten::mm", "must be sorted"),
    (lambda d: d["ops"][3].pop("note"), "aten::relu", "limited needs a note"),
    (lambda d: d["sources"][0].update(kind="rumour"), "rumour", "kind 'rumour' is not one of"),
    (lambda d: d["sources"][0].pop("install"), "id: probe", "probed evidence needs 'install'"),
    (lambda d: d["statuses"].pop("limited"), "statuses:", "missing a description for limited"),
    (lambda d: d["statuses"].update(maybe="perhaps"), "maybe", "'maybe' is not in opscan's closed vocabulary"),
    (lambda d: d["evidence_kinds"].update(rumour="heard it"), "rumour", "not in opscan's closed vocabulary"),
    (lambda d: d.update(kernel_list="partial"), "status: cpu-fallback", "must be unknown"),
    (lambda d: d.update(schema_version=2), "schema_version", "not supported"),
    (lambda d: d.update(op_names="packet"), "aten::add.out", "op_names: packet"),
])
def test_each_problem_names_file_and_line(tmp_path, mutate, needle, message):
    document = doc()
    mutate(document)
    path = write(tmp_path, document)
    err = _error(path)
    assert message in err.message
    assert err.line == _line_of(path, needle), (err, path.read_text())


def test_yaml_syntax_error_and_unsafe_tags_are_database_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nops: [\n")
    assert "not valid YAML" in _error(bad).message
    unsafe = tmp_path / "unsafe.yaml"
    unsafe.write_text("schema_version: !!python/object/apply:os.system ['true']\n")
    assert "not valid YAML" in _error(unsafe).message


def test_missing_file_is_a_database_error(tmp_path):
    assert "cannot read" in _error(tmp_path / "absent.yaml").message


def test_ops_unknown_to_a_torch_without_a_shipped_list_are_warnings_not_errors(tmp_path):
    pytest.importorskip("torch")
    ops = BASE["ops"] + [{"op": "aten::zz_not_an_op", "status": "native", "evidence": ["probe"],
                          "confidence": "high"}]
    unlisted = [{"name": "test-backend", "version": "1.0.0", "torch": "2.99"}]
    release = load_file(write(tmp_path, doc(ops=ops, packages=unlisted)))
    assert any("aten::zz_not_an_op: no such operator" in w for w in release.warnings)
    assert "aten::zz_not_an_op" in release.entries


@pytest.mark.parametrize("where, row", [
    ("ops", {"op": "aten::zz_not_an_op", "status": "native", "evidence": ["probe"], "confidence": "high"}),
    ("ops", {"op": "aten::div", "status": "native", "evidence": ["probe"], "confidence": "high"}),
    ("ops", {"op": "aten::topk.out", "status": "native", "evidence": ["probe"], "confidence": "high"}),
    ("known_failures", {"packet": "aten::relu", "dtype": "float64", "ops": ["aten::relu.bogus"],
                        "evidence": ["probe"], "tests": ["t"]}),
    ("known_failures", {"packet": "aten::nothing_like_it", "evidence": ["probe"], "tests": ["t"]}),
])
def test_every_op_name_is_an_operator_of_the_paired_torch_or_refused_with_its_line(tmp_path, where, row):
    """NOTE [op names resolve]: checked against the shipped operator list of the paired torch (2.13
    here), with no torch needed: a packet name with no default overload is refused, naming its overloads."""
    from opscan.db import operators

    assert operators.names("2.13") is not None and "aten::div.Tensor" in operators.names("2.13")
    document = doc()
    if where == "ops":
        document["ops"] = sorted(document["ops"] + [row], key=lambda e: e["op"])
    else:
        document[where] = [row]
    path = write(tmp_path, document)
    with pytest.raises(DatabaseError) as error:
        load_file(path, check_registry=False)
    text = str(error.value)
    assert text.startswith(f"{path}:") and text.split(":")[1].isdigit()
    name = row.get("op") or row.get("ops", [row.get("packet")])[0]
    assert name in text and "torch 2.13" in text
    if name == "aten::div":
        assert "overload packet" in text and "Tensor" in text


# ---- meta-tests over every shipped file --------------------------------------------------------

SHIPPED = release_files()


def test_the_expected_releases_ship():
    assert {p.name for p in SHIPPED} >= {"torchneuron-2.33.0.yaml", "torch-neuronx-xla-2.32.0.yaml",
                                         "torch-neuronx-xla-2.3.0.yaml"}


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_file_is_clean(path):
    release = load_file(path)  # strict: sorted, no duplicates, closed vocabularies
    assert path.name == f"{release.backend}-{release.release}.yaml"
    text = path.read_text()
    assert re.search(r"^statuses:", text, re.M) and re.search(r"^evidence_kinds:", text, re.M)
    for entry in release.entries.values():
        assert entry.status in STATUSES
        assert entry.sources, entry.op
        kinds = {release.sources[s].kind for s in entry.sources}
        assert kinds <= set(EVIDENCE_KINDS)
        if entry.status in ("native", "limited"):
            assert kinds - {"inferred"}, f"{entry.op}: native without a source"
        assert str(OpName.parse(entry.op)) == entry.op
    for evidence in release.sources.values():
        if evidence.kind == "documented":
            assert evidence.url and evidence.date
        if evidence.kind == "source-snapshot":
            assert evidence.repo and re.fullmatch(r"[0-9a-f]{40}", evidence.commit or "")
    assert list(release.entries) == sorted(release.entries)


@pytest.mark.slow
def test_torchneuron_233_never_claims_more_than_its_evidence():
    release = load_file(next(p for p in SHIPPED if p.name == "torchneuron-2.33.0.yaml"))
    assert release.kernel_list == "partial" and release.unlisted.status == "unknown"
    for entry in release.entries.values():
        if entry.status == "native":
            assert "snapshot" in entry.sources and entry.confidence == "low"
    assert release.sources["snapshot"].text == "pre-release source, unverified for 2.33"
    # 377 snapshot registrations that name an operator of torch 2.13 or 2.14 (of 403: NOTE [registrations
    # that name no operator] in tools/regen_torchneuron.py) + _scaled_grouped_mm (unknown); limited
    # exactly where a failing test or an xfail names one dtype (no special case)
    assert len(release.entries) == 378
    assert "aten::div" not in release.entries and "aten::div.out" in release.entries
    by_status = {}
    for entry in release.entries.values():
        by_status.setdefault(entry.status, set()).add(entry.op)
    plain = {op for f in release.known_failures if f.dtype and not f.case for op in f.ops}
    assert by_status["limited"] == plain & set(release.entries)
    assert {"aten::gather", "aten::scatter_add_", "aten::scatter.src_out", "aten::lerp_.Scalar"} <= by_status["limited"]
    assert by_status["unknown"] == {"aten::_scaled_grouped_mm"}
    for op in by_status["limited"]:
        assert release.entries[op].sources[0] == "snapshot" and len(release.entries[op].sources) == 2
    # every source-snapshot source says it is pre-release source, never a release fact
    for evidence in release.sources.values():
        if evidence.kind == "source-snapshot":
            assert "pre-release source" in evidence.text


def test_xla_line_keeps_the_frozen_41_op_list():
    old = load_file(next(p for p in SHIPPED if p.name == "torch-neuronx-xla-2.3.0.yaml"))
    new = load_file(next(p for p in SHIPPED if p.name == "torch-neuronx-xla-2.32.0.yaml"))
    page = lambda r: {op for op, e in r.entries.items() if "ops-page" in e.sources}  # noqa: E731
    assert len(page(old)) == 41 and page(old) == page(new)
    assert old.op_names == new.op_names == "packet"
