"""`opscan db import-compat`: a torch-neuronx compatibility table merged into a new release file
(issues 25.6 and 36; NOTE [merging a compatibility table] in opscan/db/compat.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from tests.db.compat_table import DISTRIBUTED, HOST_ONLY, NN_FUNCTIONAL_NATIVE, TORCH_NATIVE, row_count, table

from opscan.db import load_file, load_release
from opscan.db.compat import read_table

SAMPLE = Path(__file__).parent / "data" / "compat-sample.md"   # written from the supported-operators page
SAMPLE_PROBLEMS = [(16, "torch.histc: CPU_FALLBACK names no aten:: operator"),
                   (17, "torch.bucketize: value 'Maybe' is not one of Y, CPU_FALLBACK, N"),
                   (18, "torch.mul: Y without Native, Host-only or Needs a process group"),
                   (25, "torch.distributed.barrier: 4 cells, the header has 3"),
                   (32, "aten::_foo.bar.baz: not an aten op name")]

pytest.importorskip("torch")   # op names are checked against the installed torch


def _import(run_cli, table_path, out, *extra):
    return run_cli("db", "import-compat", str(table_path), "--release", "2.34.0", "--out", str(out),
                   "--date", "2026-11-06", "--torch", "2.13", *extra)


def test_every_unreadable_row_is_reported_with_its_line_and_cause():
    rows, skipped = read_table(SAMPLE)
    assert [(s.line, s.cause) for s in skipped] == SAMPLE_PROBLEMS
    assert [(r.namespace, r.api, r.value, r.how) for r in rows if r.value == "Y"] == [
        ("torch", "torch.add", "Y", "Native"), ("torch", "torch.manual_seed", "Y", "Host-only"),
        ("torch.distributed", "torch.distributed.all_reduce", "Y", "Needs a process group"),
        ("torch.ops.aten", "aten::add.Tensor", "Y", "Native")]
    fallback = {r.op: r.dtypes for r in rows if r.value == "CPU_FALLBACK"}
    assert fallback == {"aten::sort.values_stable": (), "aten::_linalg_svd": ("float64",),
                        "aten::cumsum": ("int32", "int64")}


def test_a_table_with_unreadable_rows_writes_nothing_and_exits_2(run_cli, tmp_path):
    out = tmp_path / "torchneuron-2.34.0.yaml"
    code, stdout, stderr = _import(run_cli, SAMPLE, out)
    assert code == 2 and stdout == ""
    lines = stderr.splitlines()
    assert lines[:-1] == [f"{SAMPLE}:{n}: {cause}" for n, cause in SAMPLE_PROBLEMS]
    assert "nothing written" in lines[-1] and str(SAMPLE) in lines[-1]
    assert not out.exists() and list(tmp_path.iterdir()) == []          # no temporary file left either
    # all-or-nothing also with --replace: the file there stays as it was
    out.write_text("kept\n", encoding="utf-8")
    assert _import(run_cli, SAMPLE, out, "--replace")[0] == 2
    assert out.read_text(encoding="utf-8") == "kept\n"


@pytest.mark.slow
def test_out_onto_an_existing_file_is_refused_unless_replace(run_cli, tmp_path):
    good = tmp_path / "table.md"
    good.write_text("## torch\n\n| API | Status | Limitations |\n|---|---|---|\n"
                    "| torch.sort | CPU_FALLBACK | aten::sort |\n", encoding="utf-8")
    out = tmp_path / "release.yaml"
    out.write_text("an older release\n", encoding="utf-8")
    code, _, stderr = _import(run_cli, good, out)
    assert code == 2 and "exists" in stderr and "--replace" in stderr
    assert out.read_text(encoding="utf-8") == "an older release\n"
    code, _, stderr = _import(run_cli, good, out, "--replace")
    assert (code, stderr) == (0, "")
    assert load_file(out).entries["aten::sort"].status == "cpu-fallback"


@pytest.mark.slow
def test_unknown_op_names_are_refused_with_their_line_or_kept_as_a_note(run_cli, tmp_path):
    planted = tmp_path / "table.md"
    planted.write_text("## torch\n\n| API | Status | Limitations |\n|---|---|---|\n"
                       "| torch.sort | CPU_FALLBACK | aten::sortt.values |\n"             # line 5: a typo
                       "| torch.cumsum | CPU_FALLBACK | aten::cumsum for float32 |\n"
                       "\n## torch.ops.aten\n\n| Operator | Supported | Notes |\n|---|---|---|\n"
                       "| aten::not_an_op | Y | Native |\n", encoding="utf-8")            # line 12
    out = tmp_path / "r.yaml"
    code, stdout, stderr = _import(run_cli, planted, out)
    assert code == 2 and not out.exists()
    assert [line.split(": ")[0] for line in stderr.splitlines()[:2]] == [f"{planted}:5", f"{planted}:12"]
    assert "aten::sortt.values" in stderr and "aten::not_an_op" in stderr
    code, stdout, stderr = _import(run_cli, planted, out, "--allow-unknown")
    assert (code, stderr) == (0, "") and "2 unknown ops kept as a note" in stdout
    release = load_file(out)
    assert "aten::sortt.values" not in release.entries and "aten::not_an_op" not in release.entries
    assert any("aten::sortt.values CPU_FALLBACK (line 5)" in n and "aten::not_an_op Y (line 12)" in n
               for n in release.notes)
    assert release.entries["aten::cumsum"].status == "limited"


@pytest.mark.slow
def test_the_pairing_is_required_and_recorded(run_cli, tmp_path):
    good = tmp_path / "table.md"
    good.write_text("## torch\n\n| API | Status | Limitations |\n|---|---|---|\n"
                    "| torch.sort | CPU_FALLBACK | aten::sort |\n", encoding="utf-8")
    code, _, stderr = run_cli("db", "import-compat", str(good), "--release", "2.34.0",
                              "--out", str(tmp_path / "a.yaml"))
    assert code == 2 and "--torch" in stderr and not (tmp_path / "a.yaml").exists()   # a usage error
    assert _import(run_cli, good, tmp_path / "b.yaml", "--torch", "two")[0] == 2
    code, _, _ = run_cli("db", "import-compat", str(good), "--release", "2.34.0", "--out", str(tmp_path / "c.yaml"),
                         "--torch", "2.13", "--torch", "2.14", "--neuron-sdk", "2.34.1")
    release = load_file(tmp_path / "c.yaml")
    assert code == 0 and [(p.name, p.version, p.torch) for p in release.packages] == [
        ("neuron-sdk", "2.34.1", "2.13"), ("neuron-sdk", "2.34.1", "2.14")]
    assert release.pairs_with_torch("2.14.0") and not release.pairs_with_torch("2.12.1")


@pytest.mark.slow
def test_a_realistic_table_round_trips_into_a_release_that_keeps_what_it_extends(run_cli, tmp_path):
    text, expected = table()
    source = tmp_path / "torch_api_compatibility.md"
    source.write_text(text, encoding="utf-8")
    assert row_count() >= 300
    rows, skipped = read_table(source)
    assert skipped == [] and len(rows) == row_count()          # every row read, whatever its kind
    out = tmp_path / "torchneuron-2.34.0.yaml"
    code, stdout, stderr = _import(run_cli, source, out)
    assert (code, stderr) == (0, ""), stderr
    release = load_file(out)
    base = load_release("torchneuron==2.33.0")
    assert release.spec == "torchneuron==2.34.0" and release.released == "2026-11-06"
    # every op row of the table, as the table says it, on documented evidence at high confidence
    fallbacks = {f.op: f.dtypes for f in release.dtype_fallbacks}
    for op, (status, dtypes) in expected.items():
        entry = release.entries[op]
        assert (entry.status, entry.confidence, entry.sources) == (status, "high", ("compat-2.34.0",)), op
        assert set(fallbacks.get(op, ())) == set(dtypes), op
    assert set(fallbacks) == {op for op, (_, dtypes) in expected.items() if dtypes}
    assert release.sources["compat-2.34.0"].kind == "documented"
    # the public API rows: counted per namespace
    counts = {n.split(": ")[0]: n.split(": ")[1] for n in release.notes if n.startswith("compatibility table, ")}
    assert counts["compatibility table, torch.distributed"] == f"{len(DISTRIBUTED)} Y Needs a process group"
    assert counts["compatibility table, torch.nn.functional"] == f"{len(NN_FUNCTIONAL_NATIVE)} Y Native"
    assert counts["compatibility table, torch"].startswith("16 CPU_FALLBACK, 8 N, ")
    assert counts["compatibility table, torch"].endswith(f"{len(HOST_ONLY)} Y Host-only, {len(TORCH_NATIVE)} Y Native")
    # everything else is the extended release's: entries, no-kernel rule, known failures, profile
    for op, entry in base.entries.items():
        if op not in expected:
            assert replace(release.entries[op], line=0) == replace(entry, line=0), op
    assert len(release.entries) == len(set(base.entries) | set(expected))
    assert release.no_kernel == base.no_kernel and release.known_failures == base.known_failures
    assert release.sdpa_policy == base.sdpa_policy and release.narrowing == base.narrowing
    unlisted = next(op for op in ("aten::erfinv", "aten::_cdist_forward", "aten::polar")
                    if op not in base.entries)
    assert base.lookup(unlisted).status == release.lookup(unlisted).status == "device-or-cpu"
    assert release.lookup("aten::mul.Tensor").status == "native"       # not in the table: the base's entry
    # deterministic: the same table gives the same bytes; the written file loads and re-validates
    again = tmp_path / "again.yaml"
    assert _import(run_cli, source, again)[0] == 0
    assert again.read_bytes() == out.read_bytes()
    assert run_cli("db", "validate", str(out))[0] == 0
    data = json.loads(run_cli("db", "show", "aten::cumsum", "--db", str(out), "--format", "json")[1])
    assert json.dumps(data).count("float32") >= 1


def test_a_dtype_fallback_row_needs_a_limited_entry_and_known_dtypes(tmp_path):
    from tests.support.db_files import doc, write

    from opscan.errors import DatabaseError

    good = doc(dtype_fallbacks=[{"op": "aten::relu", "dtypes": ["float64"], "evidence": ["probe"]}])
    assert load_file(write(tmp_path, good), check_registry=False).dtype_fallbacks[0].dtypes == ("float64",)
    for bad, cause in ((doc(dtype_fallbacks=[{"op": "aten::mm", "dtypes": ["float32"], "evidence": ["probe"]}]),
                        "status limited"),
                       (doc(dtype_fallbacks=[{"op": "aten::relu", "dtypes": ["float99"], "evidence": ["probe"]}]),
                        "dtypes must be")):
        with pytest.raises(DatabaseError, match=cause):
            load_file(write(tmp_path, bad, name="bad.yaml"), check_registry=False)


# ---- issue 44: names resolve to real operators, duplicates agree, the file is written as the user expects ----

DIV = ("## torch\n\n| API | Status | Limitations |\n|---|---|---|\n"
       "| torch.div | CPU_FALLBACK | aten::div for float32 |\n"                 # line 5: a packet name
       "| torch.true_divide | CPU_FALLBACK | aten::div.Tensor for float32 |\n")  # line 6: agrees with it


@pytest.mark.slow
def test_a_packet_name_stands_for_every_overload_so_the_div_row_fires(run_cli, tmp_path):
    from opscan.db import operators
    from opscan.db.annotate import with_dtype_fallbacks
    from opscan.records import ModelTrace, OpUsage

    (tmp_path / "t.md").write_text(DIV, encoding="utf-8")
    code, _, err = _import(run_cli, tmp_path / "t.md", tmp_path / "r.yaml")
    assert (code, err) == (0, "")
    release = load_file(tmp_path / "r.yaml")
    overloads = operators.Operators(["2.13"]).overloads("aten::div")
    assert "aten::div" not in release.entries and "aten::div.Tensor" in overloads
    assert {f.op for f in release.dtype_fallbacks} >= set(overloads)
    assert all(release.entries[op].status == "limited" for op in overloads)
    usage = OpUsage("aten::div.Tensor", 1, ("forward",), ("torch.float32",))   # `x / 2` on float32
    (answer,) = with_dtype_fallbacks(release, (release.lookup("aten::div.Tensor"),),
                                     (ModelTrace("m", "train", "neuron", (usage,)),))
    assert answer.status == "cpu-fallback"


def test_disagreeing_rows_on_one_operator_are_an_error_naming_both_lines(run_cli, tmp_path):
    table = tmp_path / "t.md"
    table.write_text(DIV + "| torch.floor_divide | CPU_FALLBACK | aten::div.Tensor for int64 |\n"   # line 7
                     + "| torch.sort | CPU_FALLBACK | aten::sort |\n"
                     + "| torch.Tensor.sort | Y | Native |\n", encoding="utf-8")
    out = tmp_path / "r.yaml"
    code, _, err = _import(run_cli, table, out)
    assert code == 2 and not out.exists()
    (line,) = [x for x in err.splitlines() if x.startswith(f"{table}:7:")]
    assert "aten::div.Tensor" in line and "line 5" in line        # the row it contradicts, through the packet
    # the same operator twice with another value: Y Native for an aten cell after a CPU_FALLBACK
    table.write_text("## torch\n\n| API | Status | Limitations |\n|---|---|---|\n"
                     "| torch.sort | CPU_FALLBACK | aten::sort |\n"
                     "\n## torch.ops.aten\n\n| Operator | Supported | Notes |\n|---|---|---|\n"
                     "| aten::sort | Y | Native |\n", encoding="utf-8")
    code, _, err = _import(run_cli, table, out)
    assert code == 2 and err.startswith(f"{table}:11:") and "line 5" in err.splitlines()[0]


@pytest.mark.slow
def test_an_out_path_under_a_file_is_one_line_naming_it(run_cli, tmp_path):
    (tmp_path / "t.md").write_text(DIV, encoding="utf-8")
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    code, out, err = _import(run_cli, tmp_path / "t.md", tmp_path / "afile" / "r.yaml")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(tmp_path / "afile" / "r.yaml") in err and f"{tmp_path / 'afile'} is not a folder" in err


@pytest.mark.slow
@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664)])
def test_the_release_file_gets_the_mode_of_a_new_file(run_cli, tmp_path, umask, mode):
    import os
    import stat

    (tmp_path / "t.md").write_text(DIV, encoding="utf-8")
    old = os.umask(umask)
    try:
        assert _import(run_cli, tmp_path / "t.md", tmp_path / "r.yaml")[0] == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.yaml").stat().st_mode) == mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.yaml", "t.md"]     # no temporary file left


def test_extending_a_file_names_the_users_paths(run_cli, tmp_path, monkeypatch):
    """A base whose plain known-failure row covers a whole packet: the table's Y Native is `limited`
    (the merge follows the loader's rule); a merged file that still fails to load names the table
    and the extended file, never a deleted temporary file."""
    from tests.support.db_files import doc, write

    base = write(tmp_path, doc(known_failures=[{"packet": "aten::relu", "dtype": "float64", "evidence": ["probe"],
                                               "tests": ["t"]}]), name="base.yaml")
    table = tmp_path / "t.md"
    table.write_text("## torch.ops.aten\n\n| Operator | Supported | Notes |\n|---|---|---|\n"
                     "| aten::relu | Y | Native |\n", encoding="utf-8")
    code, _, err = _import(run_cli, table, tmp_path / "r.yaml", "--extends", str(base))
    assert (code, err) == (0, "")
    assert load_file(tmp_path / "r.yaml").entries["aten::relu"].status == "limited"

    import opscan.db.compat as compat

    real = compat.release_doc
    monkeypatch.setattr(compat, "release_doc", lambda *a, **k: dict(real(*a, **k), op_names="packet"))
    code, _, err = _import(run_cli, table, tmp_path / "s.yaml", "--extends", str(base))
    assert code == 2 and not (tmp_path / "s.yaml").exists()
    assert str(table) in err and str(base) in err and ".tmp" not in err and "merged file" in err
