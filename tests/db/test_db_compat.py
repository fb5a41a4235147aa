"""Issue 25.6: `opscan db import-compat` turns a torch-neuronx compatibility table into documented evidence."""

from __future__ import annotations

from pathlib import Path

from opscan.db import load_file
from opscan.db.compat import read_table

SAMPLE = Path(__file__).parent / "data" / "compat-sample.md"   # written from the supported-operators page


def test_every_unreadable_row_is_reported_with_its_line_and_cause():
    rows, skipped = read_table(SAMPLE)
    assert [(s.line, s.cause) for s in skipped] == [
        (16, "torch.histc: CPU_FALLBACK names no aten:: operator"),
        (17, "torch.bucketize: value 'Maybe' is not one of Y, CPU_FALLBACK, N"),
        (18, "torch.mul: Y without Native, Host-only or Needs a process group"),
        (25, "torch.distributed.barrier: 4 cells, the header has 3"),
        (32, "aten::_foo.bar.baz: not an aten op name"),
    ]
    assert [(r.namespace, r.api, r.value, r.how) for r in rows if r.value == "Y"] == [
        ("torch", "torch.add", "Y", "Native"), ("torch", "torch.manual_seed", "Y", "Host-only"),
        ("torch.distributed", "torch.distributed.all_reduce", "Y", "Needs a process group"),
        ("torch.ops.aten", "aten::add.Tensor", "Y", "Native")]
    fallback = {r.op: r.dtypes for r in rows if r.value == "CPU_FALLBACK"}
    assert fallback == {"aten::sort.values_stable": (), "aten::_linalg_svd": ("float64",),
                        "aten::cumsum": ("int32", "int64")}


def test_import_writes_documented_evidence_and_exits_1_when_rows_were_skipped(run_cli, tmp_path):
    out = tmp_path / "torchneuron-9.9.0.yaml"
    code, stdout, stderr = run_cli("db", "import-compat", str(SAMPLE), "--release", "9.9.0", "--out", str(out),
                                   "--date", "2026-11-06")
    assert code == 1
    assert stderr.splitlines() == [f"{SAMPLE}:{n}: {cause}" for n, cause in (
        (16, "torch.histc: CPU_FALLBACK names no aten:: operator"),
        (17, "torch.bucketize: value 'Maybe' is not one of Y, CPU_FALLBACK, N"),
        (18, "torch.mul: Y without Native, Host-only or Needs a process group"),
        (25, "torch.distributed.barrier: 4 cells, the header has 3"),
        (32, "aten::_foo.bar.baz: not an aten op name"))]
    assert "8 rows read" in stdout and "5 skipped" in stdout
    release = load_file(out)
    assert release.spec == "torchneuron==9.9.0" and release.kernel_list == "partial"
    status = {op: (e.status, e.sources) for op, e in release.entries.items()}
    assert status == {"aten::sort.values_stable": ("cpu-fallback", ("compat",)),
                      "aten::_linalg_svd": ("limited", ("compat",)),       # falls back for float64 only
                      "aten::cumsum": ("limited", ("compat",)),
                      "aten::add.Tensor": ("native", ("compat",))}        # an aten API cell marked Y Native
    compat = release.sources["compat"]
    assert compat.kind == "documented" and compat.date == "2026-11-06" and compat.url.endswith("torch_api_compatibility.md")
    assert "float64" in release.entries["aten::_linalg_svd"].note
    assert release.lookup("aten::sort.values_stable").status == "cpu-fallback"
    # public APIs that are not aten ops stay release notes: counts per namespace, N by name
    assert "not supported (N) in the compatibility table: torch.quantize_per_tensor" in release.notes
    assert any(n.startswith("compatibility table, torch.distributed: 1 Y Needs a process group") for n in release.notes)


def test_a_clean_table_exits_0(run_cli, tmp_path):
    table = tmp_path / "table.md"
    table.write_text("## torch.Tensor\n\n| API | Status | Limitations |\n|---|---|---|\n"
                     "| torch.Tensor.sort | CPU_FALLBACK | aten::sort |\n| torch.Tensor.add | Y | Native |\n",
                     encoding="utf-8")
    out = tmp_path / "r.yaml"
    code, stdout, stderr = run_cli("db", "import-compat", str(table), "--release", "2.34.0", "--out", str(out))
    assert (code, stderr) == (0, "")
    assert load_file(out).entries["aten::sort"].status == "cpu-fallback"


def test_a_table_with_no_readable_row_is_an_input_error(run_cli, tmp_path):
    table = tmp_path / "table.md"
    table.write_text("| API | Status |\n|---|---|\n| torch.add | Y |\n", encoding="utf-8")   # no namespace heading
    code, _, stderr = run_cli("db", "import-compat", str(table), "--release", "2.34.0", "--out", str(tmp_path / "r.yaml"))
    assert code == 2
    assert f"{table}:3: torch.add: no namespace heading above this row" in stderr
    assert not (tmp_path / "r.yaml").exists()
