"""Lookup order, composite judgement, profile, pairing and release selection."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.db_files import BASE, doc, write

from opscan.db import check, load_file, load_release, registry
from opscan.errors import DatabaseError
from opscan.records import Coverage, Evidence
from opscan.reporters.texts import coverage_label

torch = pytest.importorskip("torch")


@pytest.fixture
def complete(tmp_path):
    """A complete (probed-style) release: add.out, empty.memory_format, mm native; relu limited."""
    return load_file(write(tmp_path))


def test_exact_overload_entry(complete):
    c = complete.lookup("aten::mm")
    assert (c.status, c.confidence, c.via) == ("native", "high", "listed as aten::mm")
    assert c.evidence[0].kind == "probed"
    assert coverage_label(c) == "native (probed on test-backend 1.0.0)"


def test_default_overload_is_normalised(complete):
    assert complete.lookup("aten::mm.default").op == "aten::mm"
    assert complete.lookup("aten::mm.default").status == "native"


def test_add_tensor_reaches_the_backend_as_add_out(complete):
    # CompositeExplicitAutogradNonFunctional (structured) kernel: judged by its parts.
    c = complete.lookup("aten::add.Tensor")
    assert c.status == "composite"
    assert c.parts == ("aten::add.out", "aten::empty.memory_format")
    assert c.via.startswith("CompositeExplicitAutogradNonFunctional kernel")
    assert c.evidence[0].kind == "inferred" and any(e.kind == "probed" for e in c.evidence)


def test_foreach_op_is_judged_by_the_per_tensor_op(complete):
    c = complete.lookup("aten::_foreach_add.List")
    assert c.parts == ("aten::add.Tensor",)
    assert c.status == "composite"


def test_worst_part_decides(complete):
    # sub.Tensor -> sub.out, which has no kernel in a complete list: the CPU fallback.
    c = complete.lookup("aten::sub.Tensor")
    assert c.status == "cpu-fallback"
    assert "aten::sub.out is cpu-fallback" in c.evidence[0].text
    # _foreach_mul.List -> mul.Tensor -> mul.out (no kernel) -> cpu-fallback, through two levels
    assert complete.lookup("aten::_foreach_mul.List").status == "cpu-fallback"


def test_implicit_composite_and_limited_part(complete):
    # linear is expanded over its sample variants: without bias mm/t (2-D), dot/mv (1-D), with bias addmm
    linear = complete.lookup("aten::linear")
    assert {"aten::mm", "aten::t", "aten::addmm"} <= set(linear.parts)
    assert linear.status == "cpu-fallback"      # addmm has no kernel in this complete list
    assert complete.lookup("aten::relu").status == "limited"
    assert "falls back for float64" in complete.lookup("aten::relu").via


def test_no_kernel_in_a_complete_list_is_the_documented_default(complete):
    c = complete.lookup("aten::sigmoid.out")
    assert (c.status, c.confidence) == ("cpu-fallback", "high")
    assert c.via.startswith("not listed")


def test_no_kernel_in_a_partial_list_is_unknown(tmp_path):
    partial = load_file(write(tmp_path, doc(kernel_list="partial", unlisted={
        "status": "unknown", "evidence": ["probe"], "confidence": "low"})))
    assert partial.lookup("aten::sigmoid.out").status == "unknown"
    assert partial.lookup("aten::sub.Tensor").status == "unknown"  # its part is unknown
    assert partial.lookup("aten::add.Tensor").status == "composite"


def test_not_an_operator(complete):
    assert complete.lookup("aten::zz_nothing").status == "unknown"
    assert complete.lookup("not an op").status == "unknown"


def test_without_torch_composites_are_skipped_and_say_so(complete, monkeypatch):
    monkeypatch.setattr(registry, "torch_version", lambda: None)
    c = complete.lookup("aten::sigmoid.out")
    assert c.status == "unknown"
    assert "torch is needed" in c.evidence[0].text
    assert complete.lookup("aten::mm").status == "native"


def test_database_loads_and_answers_in_a_process_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "from opscan.db import load_release\n"
            "r = load_release()\n"
            "print(r.lookup('aten::mm').status, r.lookup('aten::sub.Tensor').status,"
            " r.lookup('aten::zz_nothing').status, r.profile().native_ops[:1], len(r.warnings))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["native", "native", "unknown", "('aten::_copy_from_and_resize',)", "0"]


def test_check_is_sorted_and_unique(complete):
    result = check(complete, ["aten::mm", "aten::add.out", "aten::mm"])
    assert [c.op for c in result] == ["aten::add.out", "aten::mm"]
    assert all(isinstance(c, Coverage) and c.evidence for c in result)


def test_xla_line_answers_by_overload_packet():
    xla = load_release("torch-neuronx-xla==2.32.0")
    c = xla.lookup("aten::add.Tensor")
    assert (c.status, c.via) == ("native", "overload packet aten::add listed")
    assert xla.lookup("aten::sqrt.out").status == "limited"
    assert xla.lookup("aten::sort.stable").status == "unsupported"
    assert xla.lookup("aten::gelu").status == "unknown"


def test_torchneuron_233_answers_with_low_confidence_snapshot_evidence():
    tn = load_release("torchneuron==2.33.0")
    c = tn.lookup("aten::add.Tensor")
    assert coverage_label(c) == "native (pre-release source, unverified for 2.33)"
    assert c.confidence == "low" and c.evidence[0].kind == "source-snapshot"
    assert c.evidence[0].commit == "98154b867aa24562a3213e520d9ad7fd41032291"
    unlisted = tn.lookup("aten::mse_loss_backward")   # no kernel listed: documented eager CPU fallback
    assert unlisted.status == "device-or-cpu" and unlisted.confidence == "medium"
    assert "documented eager default" in unlisted.via
    assert {e.url for e in unlisted.evidence} >= {tn.sources["best-practices"].url}
    quantized = tn.lookup("aten::quantize_per_tensor")   # a class the docs call not supported (N)
    assert quantized.status == "unsupported" and quantized.evidence[0].kind == "documented"


def test_profile_for_the_tracer():
    tn = load_release()
    profile = tn.profile()
    assert profile.name == "torchneuron==2.33.0" and profile.device == "neuron"
    assert profile.sdpa_policy == "overrideable-4d"    # the snapshot's _fused_sdp_choice: 4-D inputs only
    assert "aten::mm" in profile.native_ops and "aten::linear" in profile.native_ops
    assert "aten::div" not in profile.native_ops  # not an overload of this torch
    assert list(profile.native_ops) == sorted(profile.native_ops)
    xla = load_release("torch-neuronx-xla==2.32.0").profile()
    assert "aten::add.Tensor" in xla.native_ops and "aten::add.out" in xla.native_ops


def test_torch_pairing():
    tn = load_release()
    assert tn.pairs_with_torch("2.13.0+cpu") and tn.pairs_with_torch("2.14.1")
    assert not tn.pairs_with_torch("2.12.1")
    warning = tn.pairing_warning("2.12.1")
    assert "torch-neuronx 2.13.3.0 with torch 2.13" in warning and "2.14.3.0 with torch 2.14" in warning
    assert tn.pairing_warning("2.14.0") is None


@pytest.mark.parametrize("spec,expected", [
    (None, "torchneuron==2.33.0"), ("torchneuron", "torchneuron==2.33.0"), ("2.33.0", "torchneuron==2.33.0"),
    ("torch-neuronx==2.14.3.0", "torchneuron==2.33.0"), ("torch-neuronx==2.13.3.0", "torchneuron==2.33.0"),
    ("torch-neuronx-xla==2.32.0", "torch-neuronx-xla==2.32.0"), ("torch-neuronx-xla", "torch-neuronx-xla==2.32.0"),
])
def test_release_specs(spec, expected):
    assert load_release(spec).spec == expected


def test_unknown_release_lists_the_available_ones():
    with pytest.raises(DatabaseError) as info:
        load_release("torchneuron==9.9.9")
    assert "torchneuron==2.33.0" in str(info.value) and "torch-neuronx-xla==2.3.0" in str(info.value)


def test_db_file_and_folder(tmp_path):
    path = write(tmp_path)
    assert load_release(db_file=path).spec == "testline==1.0.0"
    assert load_release("testline", db_file=tmp_path).spec == "testline==1.0.0"


def test_label_without_evidence():
    assert coverage_label(Coverage("aten::mm", "unknown")) == "unknown"
    assert coverage_label(Coverage("aten::mm", "native", (Evidence("probed", "probed on x 1"),))) == \
        "native (probed on x 1)"


def test_shipped_files_are_found_from_the_package():
    from opscan.resources import coverage_db_dir

    assert (Path(coverage_db_dir()) / "torchneuron-2.33.0.yaml").is_file()
    from opscan.db import shipped_releases

    assert BASE["backend"] not in {r.backend for r in shipped_releases()}
