"""Host data the script builds and moves (opscan/trace/run/): tensors built from lists of host
tensors that hold values (NOTE [tensors built from host tensors] in host_sequences.py) and a sparse
adjacency moved to the imitated device and multiplied there (NOTE [sparse tensors moved to the
device] in run_mode.py), a few values moved to the device (NOTE [a few values on the device]): the
data code runs as in a real run, and on the CPU the run lists a real run's ops."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "fixtures" / "host_sequences.py"
SPARSE = Path(__file__).resolve().parent / "fixtures" / "sparse_propagation.py"
GRID = Path(__file__).resolve().parent / "fixtures" / "device_time_grid.py"


def test_a_dataset_building_tensors_from_lists_of_host_tensors_reaches_its_steps(tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(SCRIPT), device="neuron", steps=2, project_root=str(SCRIPT.parent))
    assert trace.complete, trace.stopped_at   # torch.Tensor(list of 0-d host tensors) used to stop it
    assert "ended after 2 optimizer steps" in notes[0]
    assert "aten::mse_loss" in {u.op for u in trace.ops}


def test_a_sparse_adjacency_moved_to_the_device_is_multiplied_there_through_the_step(tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(SPARSE), device="neuron", steps=1, project_root=str(SPARSE.parent))
    assert trace.complete, trace.stopped_at   # the move and the sparse mm used to run real neuron kernels
    assert "ended after 1 optimizer step" in notes[0]
    device_ops = {u.op for u in trace.ops}
    assert "aten::_sparse_addmm" in device_ops and "aten::_to_copy" in device_ops
    assert "aten::_sparse_addmm" not in {u.op for u in trace.host_ops}


def test_a_few_values_moved_to_the_device_keep_them_for_the_code_that_checks_them(tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(GRID), device="neuron", steps=1, project_root=str(GRID.parent))
    assert trace.complete, trace.stopped_at   # the grid's assert used to read stand-ins (and fail)
    assert trace.steps == 1 and not [s for s in trace.stand_ins if s.kind == "item"]


@pytest.mark.slow
@pytest.mark.parametrize("script", [SCRIPT, SPARSE, GRID], ids=["lists", "sparse", "grid"])
def test_on_the_cpu_the_run_lists_a_real_runs_ops(script, tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    spec = importlib.util.spec_from_file_location("run_real_record",
                                                  ROOT / "benchmarks" / "accuracy" / "run_real_record.py")
    real_record = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(real_record)
    monkeypatch.chdir(tmp_path)
    real = real_record.record(str(script), [], steps=2)
    trace, _ = run_script(str(script), device="cpu", steps=2, project_root=str(script.parent))
    assert trace.complete, trace.stopped_at
    assert {u.op for u in trace.ops} | {u.op for u in trace.host_ops} == real
