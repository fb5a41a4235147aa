"""`opscan db probe` against a toy PrivateUse1 backend, in a subprocess (renaming PrivateUse1 is global)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from opscan.db import check, load_file
from opscan.reporters.texts import coverage_label

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent


def _toy_kernels() -> set[str]:
    """COMPUTE + PLUMBING from toy_backend.py, read without importing it (importing renames PrivateUse1)."""
    values = {}
    for node in ast.parse((HERE / "toy_backend.py").read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in ("COMPUTE", "PLUMBING"):
            values[node.targets[0].id] = ast.literal_eval(node.value)
    return set(values["COMPUTE"]) | set(values["PLUMBING"])


def _opscan(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "opscan", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("probe") / "toy.yaml"
    done = _opscan("db", "probe", "--import", "toy_backend", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}: toy-backend==0.1.0 on device 'toy', 10 ops with a kernel" in done.stdout
    # a kernel registered for an operator nobody defined is no kernel: dropped, with a warning
    assert "dropped aten::not_a_real_op.Tensor" in done.stderr
    return out


@pytest.fixture(scope="module")
def probed_samples(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("probe") / "toy-samples.yaml"
    done = _opscan("db", "probe", "--import", "toy_backend", "--out", str(out), "--samples",
                   "--dtypes", "float32,float64,int64")
    assert done.returncode == 0, done.stderr
    return out


def test_probe_writes_a_valid_complete_release(probed):
    release = load_file(probed)  # strict load: the probe's output is a valid release file
    assert release.warnings == ()
    assert release.kernel_list == "complete" and release.device == "toy"
    assert set(release.entries) == _toy_kernels()
    assert {e.status for e in release.entries.values()} == {"native"}
    # a registration alone is evidence of a kernel, not of what it computes: medium
    assert {e.confidence for e in release.entries.values()} == {"medium"}
    assert "aten::not_a_real_op.Tensor" not in release.entries
    env = release.environment
    assert env["torch-neuronx"] == "not installed" and env["instance_type"].startswith("unknown")
    assert env["backend"] == "toy_backend 0.1.0" and env["torch"].startswith("2.")
    assert set(env["env"]) >= {"TORCH_NEURONX_FALLBACK_ONLY_FOR_UNIMPLEMENTED_OPS",
                               "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"}
    probe = release.sources["probe"]
    assert probe.kind == "probed" and probe.text == "probed on toy_backend 0.1.0"
    assert probe.install.startswith("toy_backend 0.1.0 / torch 2.") and probe.date
    assert release.unlisted.status == "cpu-fallback"  # the toy registers a catch-all fallback
    assert not [p for p in probed.parent.iterdir() if p.name.endswith(".tmp")]  # atomic write


def test_round_trip_check_reports_exactly_the_toy_kernels_as_native(probed):
    release = load_file(probed)
    kernels = _toy_kernels()
    others = {"aten::sigmoid", "aten::sub.Tensor", "aten::tanh", "aten::div.Tensor", "aten::relu_",
              "aten::gelu", "aten::addmm", "aten::sum.dim_IntList", "aten::_softmax"}
    answers = {c.op: c for c in check(release, kernels | others)}
    assert {op for op, c in answers.items() if c.status == "native"} == kernels
    assert {op for op, c in answers.items() if c.status == "cpu-fallback"} == others
    for op in others:
        assert any(e.kind == "probed" for e in answers[op].evidence), op
    assert coverage_label(answers["aten::mm"]) == "native (probed on toy_backend 0.1.0)"
    # composites of toy kernels run on the toy device through their parts
    assert release.lookup("aten::_foreach_add.List").status == "composite"
    # linear is judged over its sample variants: with a bias it calls addmm, which the toy lacks
    linear = release.lookup("aten::linear")
    assert linear.status == "cpu-fallback" and {"aten::addmm", "aten::mm", "aten::t"} <= set(linear.parts)


def test_samples_catch_a_run_time_fallback(probed_samples):
    release = load_file(probed_samples)
    relu = release.entries["aten::relu"]
    assert relu.status == "limited"
    assert relu.note == "falls back to CPU at run time for float64 (ran on the device for float32, int64)"
    # per dtype (issue 44): a model calling relu on float64 runs it on the CPU, on float32 on the device
    assert [(f.op, f.dtypes) for f in release.dtype_fallbacks] == [("aten::relu", ("float64",))]
    assert release.lookup("aten::relu", "float64").status == "cpu-fallback"
    assert release.lookup("aten::relu", "float32").status == "native"
    # results that matched the CPU for every dtype: native at high confidence
    mm = release.entries["aten::mm"]
    assert (mm.status, mm.confidence, mm.sources) == ("native", "high", ("probe", "samples"))
    assert release.sources["samples"].kind == "probed"


def test_samples_catch_wrong_and_narrowed_results(probed_samples):
    release = load_file(probed_samples)
    neg = release.entries["aten::neg"]            # the toy forgets to negate
    assert neg.status == "limited" and neg.confidence == "high"
    assert "wrong results for float32 (max error" in neg.note and "wrong results for float64" in neg.note
    exp = release.entries["aten::exp"]            # the toy computes float64 as float32
    assert exp.status == "limited"
    assert exp.note.startswith("float64 computed at lower precision (max error ")
    error = float(exp.note.split("max error ")[1].split()[0])
    assert 1e-10 < error < 1e-5                   # float32 precision, measured against the CPU
    assert "float32" not in exp.note              # float32 itself is right
    assert release.entries["aten::add.Tensor"].status == "native"   # int64 beyond 2**31 adds correctly


def test_probe_without_a_backend_is_a_one_line_error(tmp_path):
    done = _opscan("db", "probe", "--out", str(tmp_path / "x.yaml"))
    assert done.returncode == 2
    assert "no PrivateUse1 backend is registered" in done.stderr
    assert not (tmp_path / "x.yaml").exists()


def test_probe_with_a_module_that_does_not_import(tmp_path):
    done = _opscan("db", "probe", "--import", "no_such_backend_module", "--out", str(tmp_path / "x.yaml"))
    assert done.returncode == 2 and "--import no_such_backend_module: cannot import it" in done.stderr
