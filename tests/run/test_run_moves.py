"""Module.to on the imitated device keeps the module's Parameter objects (NOTE [moved parameters
keep identity] in opscan/trace/run/redirect.py): an optimizer built before the move steps the moved
parameters, on the device, as in a real run; torch's own casts convert in place; a memory-format
conversion (channels_last) is made as torch makes it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCRIPT = FIXTURES / "optimizer_first.py"


def test_an_optimizer_built_before_the_move_steps_on_the_imitated_device(tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(SCRIPT), device="neuron", steps=2, project_root=str(SCRIPT.parent))
    assert trace.complete, trace.stopped_at   # the script's identity assert held; the scaler found its grads
    assert "ended after 2 optimizer steps" in notes[0]
    step = {u.op for u in trace.ops if "optimizer" in u.phases}
    # AdamW's foreach kernels and GradScaler's unscale run on the device's (moved) parameters
    assert {"aten::_foreach_lerp_.Scalar", "aten::_foreach_addcdiv_.ScalarList",
            "aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_amp_update_scale_"} <= step
    host = {u.op for u in trace.host_ops}
    assert "aten::_foreach_lerp_.Scalar" not in host and "aten::_foreach_add_.Tensor" in host   # only step counts


@pytest.mark.parametrize("name", ["optimizer_first.py", "module_casts.py", "channels_last.py"])
def test_the_same_script_on_the_cpu_lists_a_real_runs_ops(name, tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    spec = importlib.util.spec_from_file_location("run_real_record",
                                                  ROOT / "benchmarks" / "accuracy" / "run_real_record.py")
    real_record = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(real_record)
    monkeypatch.chdir(tmp_path)
    real = real_record.record(str(FIXTURES / name), [], steps=2)
    trace, _ = run_script(str(FIXTURES / name), device="cpu", steps=2, project_root=str(FIXTURES))
    assert trace.complete, trace.stopped_at
    assert {u.op for u in trace.ops} | {u.op for u in trace.host_ops} == real


def test_module_casts_swap_fake_parameters_in_place(tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(FIXTURES / "module_casts.py"), device="neuron", steps=2,
                              project_root=str(FIXTURES))
    assert trace.complete, trace.stopped_at   # no "_apply(): Couldn't swap Linear.weight"
    assert "ran to its end; 2 optimizer steps of 1 optimizer" in notes[0]
    linear = next(u for u in trace.ops if u.op == "aten::addmm")
    assert {"torch.bfloat16", "torch.float32"} <= set(linear.dtypes)
    assert "aten::_foreach_add_.List" in {u.op for u in trace.ops if "optimizer" in u.phases}   # SGD momentum


def test_torch_device_in_every_form_real_torch_accepts_runs_on_the_imitated_device(tmp_path, monkeypatch):
    """NOTE [torch.device under the imitation]: `torch.device("cuda", local_rank)` was refused
    ("argument 'type' (position 1) must be str, not torch.device")."""
    import torch

    from opscan.trace.run import run_script

    for args, kwargs in ((("cpu",), {}), (("cpu", 0), {}), ((), {"type": "cpu"}), ((torch.device("cpu"),), {}),
                         (("meta",), {})):   # the fixture's CPU forms, as real torch makes them
        assert str(torch.device(*args, **kwargs)) in ("cpu", "cpu:0", "meta")
    monkeypatch.chdir(tmp_path)
    script = FIXTURES / "device_forms.py"
    trace, _notes = run_script(str(script), device="neuron", steps=1, project_root=str(script.parent))
    assert trace.complete and trace.steps == 1, trace.stopped_at
    assert "aten::addmm" in {u.op for u in trace.ops} and "aten::addmm" not in {u.op for u in trace.host_ops}


@pytest.mark.slow
def test_an_answered_cuda_function_is_pickled_by_name_and_answers_in_a_forked_pool(tmp_path, monkeypatch):
    # Lightning 1.x asks `Pool(1).apply(torch.cuda.device_count)`: the answer went by a local function,
    # which pickle refused ("Can't pickle local object '_answered.<locals>.call'")
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    script = FIXTURES / "pooled_device_count.py"
    trace, _ = run_script(str(script), device="neuron", steps=1, project_root=str(script.parent))
    assert trace.complete, trace.stopped_at
    assert "aten::addmm" in {u.op for u in trace.ops}


@pytest.mark.slow
def test_legacy_cuda_tensor_types_make_and_convert_tensors_on_the_imitated_device(tmp_path, monkeypatch):
    # NOTE [legacy CUDA tensor types]: `Tensor = torch.cuda.FloatTensor`; `Tensor(3, 4)` stopped the run
    # with "type torch.cuda.FloatTensor not available"
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    script = FIXTURES / "legacy_cuda_types.py"
    trace, notes = run_script(str(script), device="neuron", steps=1, project_root=str(script.parent))
    assert trace.complete, trace.stopped_at
    assert {"aten::addmm", "aten::nll_loss_forward"} <= {u.op for u in trace.ops}
    said = " ".join(notes)
    assert "torch.cuda.FloatTensor runs on the imitated device" in said
    assert "Tensor.type(torch.cuda.FloatTensor) runs on the imitated device" in said
