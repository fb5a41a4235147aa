"""The imitated device's package (NOTE [the imitated package] in opscan/trace/run/neuron_package.py):
libraries that look for `torch_neuronx` before they use `torch.neuron` (accelerate) find it on
`--device neuron`, and the script's step runs on the imitated device."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _run(device: str, tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    return run_script(str(FIXTURES / "package_device.py"), device=device, steps=1, project_root=str(FIXTURES))


def test_the_step_runs_on_the_imitated_device_when_the_script_looks_for_its_package(tmp_path, monkeypatch):
    if importlib.util.find_spec("torch_neuronx") is not None:
        pytest.skip("a real TorchNeuron is installed")
    trace, notes = _run("neuron", tmp_path, monkeypatch)
    assert trace.complete, trace.stopped_at
    assert "ended after 1 optimizer step" in notes[0]
    device_ops = {u.op for u in trace.ops}
    assert {"aten::addmm", "aten::gelu", "aten::_foreach_mul_.Scalar"} <= device_ops   # AdamW's foreach on the device
    assert "aten::addmm" not in {u.op for u in trace.host_ops}
    said = "\n".join(notes)
    assert "torch_neuronx found: the imitated TorchNeuron package" in said
    assert "package_device.py:19" in said   # the script's find_spec line
    # the imitated package is gone once the run ends
    assert "torch_neuronx" not in sys.modules and importlib.util.find_spec("torch_neuronx") is None


def test_a_cpu_run_finds_no_device_package(tmp_path, monkeypatch):
    trace, notes = _run("cpu", tmp_path, monkeypatch)
    assert trace.complete, trace.stopped_at
    assert not any("torch_neuronx" in n for n in notes)
    assert "aten::addmm" in {u.op for u in trace.ops} and not trace.host_ops
