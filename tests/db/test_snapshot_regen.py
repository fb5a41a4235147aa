"""Issue 25.3: the shipped TorchNeuron file is exactly what tools/regen_torchneuron.py builds from the snapshot."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from opscan.db import load_release

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built() -> str:
    pytest.importorskip("torch")
    regen = _tool("regen_torchneuron")
    return regen.build(*regen.load_inputs())


@pytest.mark.slow
def test_the_shipped_file_equals_the_generated_output(built):
    regen = _tool("regen_torchneuron")
    assert regen.TARGET.read_text(encoding="utf-8") == built, (
        "coverage_db/torchneuron-2.33.0.yaml differs from its sources: run python tools/regen_torchneuron.py")


def test_check_mode_fails_on_a_hand_edit(tmp_path, monkeypatch, built):
    regen = _tool("regen_torchneuron")
    monkeypatch.setattr(regen, "build", lambda *inputs: built)
    edited = tmp_path / "torchneuron-2.33.0.yaml"
    edited.write_text(regen.TARGET.read_text(encoding="utf-8").replace(
        '{op: "aten::min", status: native', '{op: "aten::min", status: limited'), encoding="utf-8")
    monkeypatch.setattr(regen, "TARGET", edited)
    monkeypatch.setattr(regen, "ROOT", tmp_path)
    assert regen.main(["--check"]) == 1
    assert edited.read_text(encoding="utf-8").count('"aten::min", status: limited') == 1   # --check writes nothing


def _snapshot_git() -> Path | None:
    """The source snapshot: $OPSCAN_TORCHNEURON_SNAPSHOT (a clone of parmoham-aws/test-repo-parmoham)."""
    path = os.environ.get("OPSCAN_TORCHNEURON_SNAPSHOT")
    return Path(path) if path and Path(path).exists() else None


@pytest.mark.skipif(_snapshot_git() is None, reason="the source snapshot is not on this machine: set "
                    "OPSCAN_TORCHNEURON_SNAPSHOT to a clone of parmoham-aws/test-repo-parmoham to re-read it")
def test_the_extract_is_what_the_source_snapshot_says():
    extract = _tool("snapshot_extract")
    shipped = (ROOT / "coverage_db/sources/torchneuron-snapshot-98154b8.json").read_text(encoding="utf-8")
    assert extract.dumps(extract.extract(extract.Source(_snapshot_git(), extract.COMMIT))) == shipped


def test_the_extract_corrects_the_fact_notes_audit():
    data = json.loads((ROOT / "coverage_db/sources/torchneuron-snapshot-98154b8.json").read_text(encoding="utf-8"))
    ops = {r["op"] for r in data["registrations"]}
    # commented-out registrations are not registrations
    assert not {"aten::vstack", "aten::vstack.out", "aten::atleast_2d.Sequence"} & ops
    # the typed @neuron_*_op decorators register too
    assert {"aten::min", "aten::min.unary_out", "aten::neg_", "aten::silu_", "aten::pow.Scalar_out"} <= ops
    assert sum(len(v) for v in data["failing_tests"].values()) == 708
    reasons = {(x["test"], x["reason"]) for x in data["spec_xfails"]}
    assert ("test_lerp_neuron_float64", "Float64 data type is not supported on Neuron") in reasons


def test_what_a_user_sees_after_the_audit():
    pytest.importorskip("torch")
    release = load_release("torchneuron==2.33.0")
    assert release.lookup("aten::min").status == "native"
    assert release.lookup("aten::pow.Scalar").status == "composite"     # through pow.Scalar_out
    vstack = release.lookup("aten::vstack")
    assert vstack.status != "native" and not vstack.via.startswith("listed")
    # BatchNorm in eval: no registration covers it or its decomposition (NOTE in coverage_db/README.md);
    # not listed, so it runs on the device or, without a kernel, on the CPU (documented eager fallback)
    assert release.lookup("aten::_native_batch_norm_legit_no_training").status == "device-or-cpu"


@pytest.mark.slow
def test_the_script_runs_as_a_command():
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, str(TOOLS / "regen_torchneuron.py"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "up to date" in done.stdout
