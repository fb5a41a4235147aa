"""Issue 15: known failures as data, release caveats on traced dtypes, composite judgement, evidence kinds."""

from __future__ import annotations

import json

import pytest
from tests.support.db_files import doc, write

from opscan.db import load_file, load_release
from opscan.db.caveats import usages_caveats
from opscan.db.failing_tests import map_lists, map_test
from opscan.errors import DatabaseError
from opscan.records import CAVEAT_KINDS, OpSource, OpUsage

PACKETS = frozenset({"gather", "scatter_", "scatter_add_", "scatter_reduce", "linspace", "pad", "nll_loss",
                     "cross", "upsample_bicubic2d", "_upsample_bilinear2d_aa", "one_hot"})
REDUCING = frozenset({"scatter_reduce"})
APIS = frozenset({"cross_entropy"})


# -- 2. known failures as data (NOTE [clear mapping] in opscan/db/failing_tests.py) -----------------

@pytest.mark.parametrize("name, expected", [
    ("test_scatter_add__neuron_complex64", ("aten::scatter_add_", "complex64", "")),
    ("test_scatter__neuron_float16", ("aten::scatter_", "float16", "")),
    ("test_scatter_reduce_mean_neuron_int64", ("aten::scatter_reduce", "int64", "")),   # packet + reduce value
    ("test_gather_neuron_complex64", ("aten::gather", "complex64", "")),
    ("test_gather_large_neuron_bfloat16", ("aten::gather", "bfloat16", "large")),      # op plus a variant
    ("test_nll_loss_all_ignored_neuron", ("aten::nll_loss", "", "all_ignored")),       # any dtype
    ("test_one_hot_neuron", ("aten::one_hot", "", "")),                                # one-op test
    ("test_upsamplingBiMode2d_antialias_False_align_corners_True_mode_bicubic_memory_format0_neuron",
     ("aten::upsample_bicubic2d", "", "upsamplingBiMode2d")),
    ("test_upsamplingBiMode2d_antialias_True_align_corners_True_mode_bilinear_memory_format0_neuron",
     ("aten::_upsample_bilinear2d_aa", "", "upsamplingBiMode2d")),
    ("test_cross_entropy_label_smoothing_neuron", None),    # continues into another API: not aten::cross
    ("test_set_real_imag_neuron_complex64_float32", None),  # two dtypes
    ("test_GroupNorm_empty_neuron", None),                   # a module test
    ("test_scatter_reduce_median_neuron_int64", ("aten::scatter_reduce", "int64", "median")),  # not a reduce value
])
def test_test_names_map_to_an_op_a_dtype_and_a_case(name, expected):
    assert map_test(name, PACKETS, REDUCING, APIS) == expected


def test_map_lists_counts_what_stays_unmapped():
    mapped, unmapped = map_lists({"TestScatterGather": ["test_gather_neuron_complex64", "test_GroupNorm_empty_neuron",
                                                        "test_scatter_reduce_sum_neuron_int8",
                                                        "test_scatter_reduce_prod_neuron_int8"]},
                                 PACKETS, REDUCING)
    assert mapped == {("aten::gather", "complex64"): ["TestScatterGather.test_gather_neuron_complex64"],
                      ("aten::scatter_reduce", "int8"): ["TestScatterGather.test_scatter_reduce_prod_neuron_int8",
                                                         "TestScatterGather.test_scatter_reduce_sum_neuron_int8"]}
    assert unmapped == {"TestScatterGather": 1}


def _rows(release):
    return {(f.packet, f.dtype, f.case): f for f in release.known_failures}


def test_shipped_release_records_the_snapshots_failing_tests():
    release = load_release("torchneuron==2.33.0")
    rows = _rows(release)
    from_lists = sum(f.count for f in rows.values() if f.sources == ("snapshot-tests",))
    # of 708 failing methods 615 name an op; 93 name none (the release note); the one on
    # aten::combinations is left out: it decomposes into generic ops, no trace records it (issue 36)
    assert from_lists == 614
    assert any("615 name an op" in note and "but for 1 on ops no trace records" in note for note in release.notes)
    assert rows[("aten::scatter_add_", "complex64",
                 "")].tests == ("TestScatterGather.test_scatter_add__neuron_complex64",)
    assert release.sources["snapshot-tests"].kind == "source-snapshot"
    assert release.sources["snapshot-tests"].commit == "98154b867aa24562a3213e520d9ad7fd41032291"
    gather = release.lookup("aten::gather")
    assert gather.status == "limited" and "complex64" in gather.via
    assert any("failing_test_methods" in (e.url or "") for e in gather.evidence)
    assert any("93 name no op" in note for note in release.notes)


def test_rows_list_the_ops_a_trace_sees():
    rows = _rows(load_release("torchneuron==2.33.0"))
    # decomposed before the tracer sees them: the parts carry the row
    assert rows[("aten::dstack", "float32", "")].parts == ("aten::cat", "aten::cat.out")
    assert "aten::constant_pad_nd" in rows[("aten::pad", "float64", "")].parts
    assert "aten::nll_loss_forward" in rows[("aten::nll_loss", "", "out_of_bounds_ignore_index")].parts
    # in-place and out variants
    assert "aten::normal_" in rows[("aten::normal", "float32", "")].ops
    assert "aten::scatter.src_out" in rows[("aten::scatter_", "float32", "")].ops
    # a variant named after an overload means that overload only
    assert rows[("aten::view", "float32", "dtype_new")].ops == ("aten::view.dtype",)


def test_xfail_reasons_are_conditions_on_their_ops():
    release = load_release("torchneuron==2.33.0")
    rows = _rows(release)
    lerp = rows[("aten::lerp", "float64", "")]
    assert lerp.reasons == ("Float64 data type is not supported on Neuron",) and lerp.sources == ("snapshot-xfail",)
    assert "aten::lerp_.Scalar" in lerp.ops and release.lookup("aten::lerp_.Scalar").status == "limited"
    conv = rows[("aten::conv2d", "float32", "same_padding")]
    assert conv.reasons == ("Neuron->Neuron copy with layout change is not supported yet.",)
    assert conv.parts == ("aten::convolution",)
    index = rows[("aten::index", "float64", "")]
    assert index.sources == ("snapshot-pytest",) and index.tests == ("tests/python_ops/test_index.py:179",)
    caveats = [c for c in usages_caveats(release, [_usage("aten::lerp_.Scalar", "float64", line=3),
                                                   _usage("aten::convolution", "float32", line=4)])
               if c.kind.startswith("known-failure")]
    assert [(c.kind, c.ops) for c in caveats] == [("known-failure", ("aten::lerp_.Scalar",)),
                                                  ("known-failure-case", ("aten::convolution",)),
                                                  ("known-failure-case", ("aten::lerp_.Scalar",))]  # promotion
    assert "Float64 data type is not supported on Neuron" in caveats[0].message
    assert "same padding" in caveats[1].message


def test_a_causal_lm_loss_gets_the_ignore_index_case_not_a_blocking_failure():
    release = load_release("torchneuron==2.33.0")
    caveats = usages_caveats(release, [_usage("aten::nll_loss_forward", "float32", "int64", line=9)])
    assert [c.kind for c in caveats] == ["known-failure-case"]
    assert "TestNNDeviceType.test_nll_loss_out_of_bounds_ignore_index_neuron" in caveats[0].tests
    assert "model.py:9" in caveats[0].message


def test_a_native_entry_with_known_failures_does_not_load(tmp_path):
    bad = doc(known_failures=[{"packet": "aten::mm", "dtype": "float16", "tests": ["T.test_mm_neuron_float16"],
                               "evidence": ["probe"]}])
    with pytest.raises(DatabaseError, match="aten::mm: known_failures record failing tests"):
        load_file(write(tmp_path, bad))


def test_only_plain_rows_make_their_ops_limited(tmp_path):
    row = {"packet": "aten::mm", "dtype": "float16", "ops": ["aten::mm"], "tests": ["T.test_mm_neuron_float16"],
           "evidence": ["probe"]}
    with pytest.raises(DatabaseError, match="aten::mm: known_failures record failing tests"):
        load_file(write(tmp_path, doc(known_failures=[row])))
    case = dict(row, case="large")                       # a variant: a caveat, not a status
    parts = dict(row, packet="aten::matmul", ops=[], parts=["aten::mm"])   # another op's decomposition
    anydtype = {k: v for k, v in row.items() if k != "dtype"}
    for good in (case, parts, anydtype):
        release = load_file(write(tmp_path, doc(known_failures=[{k: v for k, v in good.items() if v != []}])))
        assert release.entries["aten::mm"].status == "native"


def test_known_failure_rows_are_checked_strictly(tmp_path):
    row = {"packet": "aten::mm", "dtype": "float16", "case": "large", "tests": ["T.test_mm_large_neuron_float16"],
           "more_tests": -1, "evidence": ["probe"]}
    with pytest.raises(DatabaseError, match="more_tests must be a whole number"):
        load_file(write(tmp_path, doc(known_failures=[row])))
    with pytest.raises(DatabaseError, match="not canonical"):
        load_file(write(tmp_path, doc(known_failures=[dict(row, more_tests=2, ops=["aten::mm.default"])])))
    rows = [dict(row, more_tests=2), {k: v for k, v in row.items() if k not in ("case", "more_tests")}]
    with pytest.raises(DatabaseError, match="sorted by packet, dtype and case"):
        load_file(write(tmp_path, doc(known_failures=rows)))


def _usage(op, *dtypes, line=1):
    return OpUsage(op, 1, dtypes=tuple(f"torch.{d}" for d in dtypes), sources=(OpSource("model.py", line),))


def test_known_failure_caveat_when_the_trace_uses_the_failing_dtype():
    release = load_release("torchneuron==2.33.0")
    caveats = usages_caveats(release, [_usage("aten::scatter_add_", "complex64", "int64", line=7),
                                       _usage("aten::gather", "float32", "int64", line=8)])
    assert [c.kind for c in caveats] == ["known-failure"]
    hit = caveats[0]
    assert hit.ops == ("aten::scatter_add_",) and hit.dtypes == ("torch.complex64",)
    assert hit.tests == ("TestScatterGather.test_scatter_add__neuron_complex64",)
    assert hit.sources == (OpSource("model.py", 7),)   # its int64 index too: the line may be any call of it
    assert "test_scatter_add__neuron_complex64" in hit.message and hit.message.endswith("it (any dtype): model.py:7")


@pytest.mark.slow
def test_an_index_tensor_is_not_an_int64_dtype_of_the_op():
    release = load_release("torchneuron==2.33.0")
    # scatter_reduce fails for int64 data; here int64 is only the index: no caveat
    assert usages_caveats(release, [_usage("aten::scatter_reduce.two", "float16", "int64")])[0].dtypes == \
        ("torch.float16",)
    assert all(c.dtypes != ("torch.int64",)
               for c in usages_caveats(release, [_usage("aten::scatter_reduce.two", "float16", "int64")]))


# -- 3. release caveats the trace can check --------------------------------------------------------

def test_64_bit_default_is_recorded_and_checked():
    release = load_release("torchneuron==2.33.0")
    assert {(n.dtype, n.computed_as) for n in release.narrowing} == {("float64", "float32"), ("int64", "int32")}
    caveats = {c.kind: c for c in usages_caveats(release, [
        _usage("aten::mm", "float64", line=3),
        _usage("aten::cumsum", "int64", line=4),          # int64 arithmetic
        _usage("aten::embedding", "float32", "int64", line=5),   # int64 as an index: not arithmetic
        _usage("aten::add.Tensor", "float32", line=6),
    ])}
    assert set(caveats) == {"float64-narrowed", "int64-narrowed"} <= set(CAVEAT_KINDS)
    assert caveats["float64-narrowed"].ops == ("aten::mm",)
    assert caveats["float64-narrowed"].sources == (OpSource("model.py", 3),)
    assert "computes float64 as float32" in caveats["float64-narrowed"].message
    assert caveats["float64-narrowed"].message.endswith("; line calling it: model.py:3")   # seen in every format
    assert caveats["int64-narrowed"].ops == ("aten::cumsum",)
    assert caveats["int64-narrowed"].evidence[0].kind == "source-snapshot"


def test_no_caveat_for_a_model_in_float32():
    release = load_release("torchneuron==2.33.0")
    assert usages_caveats(release, [_usage("aten::mm", "float32"), _usage("aten::embedding", "float32", "int64")]) == ()


def test_sdpa_rule_and_scaled_grouped_mm_are_recorded():
    release = load_release("torchneuron==2.33.0")
    assert release.profile().sdpa_policy == "overrideable-4d"
    assert any("SdpBackendSelection.cpp" in release.sources[s].text for s in release.sdpa_sources)
    scaled = release.lookup("aten::_scaled_grouped_mm")
    assert scaled.status == "unknown" and "registers no kernel" in scaled.via
    assert [e.kind for e in scaled.evidence] == ["source-snapshot", "documented"]


# -- 5. evidence kinds ---------------------------------------------------------------------------

def test_our_reading_of_a_pages_history_is_inferred_not_documented():
    for spec in ("torch-neuronx-xla==2.3.0", "torch-neuronx-xla==2.32.0"):
        scope = load_release(spec).sources["page-scope"]
        assert scope.kind == "inferred" and "git history" in scope.text


def test_show_and_list_name_known_failures_and_the_64_bit_default(run_cli):
    code, out, _ = run_cli("db", "show", "aten::scatter_add_")
    assert code == 0
    assert "aten::scatter_add_: limited (pre-release source, unverified for 2.33)" in out
    assert "known failure with complex64: TestScatterGather.test_scatter_add__neuron_complex64" in out
    code, out, _ = run_cli("db", "list")
    assert "computes float64 as float32, int64 as int32 by default" in out
    rows = len(load_release("torchneuron==2.33.0").known_failures)
    assert f"known failures: {rows} (op, dtype) rows" in out
    # the failing tests that name no op are shown as the release's note, with their counts
    assert "  note: Known failures: the pre-release source records 708 upstream PyTorch test methods" in out
    assert "93 name no op" in out
    code, out, _ = run_cli("db", "list", "--format", "json")
    assert any("93 name no op" in n for n in json.loads(out)["releases"][-1]["notes"])


# -- 6. probe: comparing sample results with the CPU -------------------------------------------------

def test_probe_compare_tells_matched_narrowed_and_wrong():
    torch = pytest.importorskip("torch")
    from opscan.db.probe import INT64_OFFSET, compare

    x = torch.rand(3, dtype=torch.float64)
    assert compare("float64", x.exp(), x.exp())[0] == "matched"
    narrowed, error = compare("float64", x.float().exp().double(), x.exp())
    assert narrowed == "narrowed" and error.startswith("max error ")
    assert compare("float64", x + 1, x)[0] == "wrong"
    assert compare("float32", x.float(), x)[0] == "narrowed"          # float32 returned for float64
    big = torch.tensor([INT64_OFFSET + 1, INT64_OFFSET + 2])
    assert compare("int64", (big * 2).to(torch.int32).to(torch.int64), big * 2)[0] == "narrowed"
    assert compare("int64", big, -big)[0] == "wrong"
    assert compare("float32", torch.ones(2), torch.ones(3))[0] == "wrong"


# -- done when: coverage_db/README.md lists every evidence source with its counts ------------------

def _readme_sources() -> dict[tuple[str, str], dict[str, str]]:
    """The rows of the README's "Evidence sources, with counts" table: (file, source) -> columns."""
    from opscan.db.shipped import release_files

    text = release_files()[0].parent.joinpath("README.md").read_text(encoding="utf-8")
    table = text.split("## Evidence sources, with counts", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split("|") for line in table.splitlines() if line.startswith("| ")]
    head = [c.strip() for c in rows[0]]
    assert head == ["file", "source", "kind", "text", "op entries", "known failures", "narrowing", "also"]
    out = {}
    for cells in rows[1:]:
        row = dict(zip(head, (c.strip() for c in cells)))
        out[(row["file"], row["source"].strip("`"))] = row
    return out


def test_readme_counts_every_source_of_every_shipped_file():
    from opscan.db.shipped import release_files

    rows = _readme_sources()
    seen = set()
    for path in release_files():
        release = load_file(path)
        for sid, evidence in release.sources.items():
            key = (path.stem, sid)
            assert key in rows, f"coverage_db/README.md has no row for {key}"
            seen.add(key)
            row = rows[key]
            counts = {
                "op entries": sum(sid in e.sources for e in release.entries.values()),
                "known failures": sum(sid in f.sources for f in release.known_failures),
                "narrowing": sum(sid in n.sources for n in release.narrowing),
            }
            for column, count in counts.items():
                assert row[column] == (str(count) if count else ""), (key, column, row[column], count)
            also = {"unlisted"} if sid in release.unlisted.sources else set()
            also |= {"profile"} if sid in release.sdpa_sources else set()
            rule = release.no_kernel
            also |= {"no_kernel"} if rule is not None and sid in rule.sources + rule.not_supported_sources else set()
            assert set(filter(None, (a.strip() for a in row["also"].split(",")))) == also, key
            assert row["kind"] == evidence.kind, key
    assert set(rows) == seen, f"rows for sources no file has: {set(rows) - seen}"
