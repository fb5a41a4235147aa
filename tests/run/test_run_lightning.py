"""A Lightning Trainer asked for a GPU runs its fit on the imitated device (NOTE [Lightning on the
imitated device] in opscan/trace/run/libraries.py), for `lightning.pytorch` and `pytorch_lightning`,
each skipped where it is not installed: CI's second environment installs `lightning` (which
brings `pytorch_lightning`; the tests are marked extras), the dev extra neither."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.extras
SCRIPT = str(Path(__file__).resolve().parent / "fixtures" / "lightning_train.py")


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:   # lightning.pytorch without lightning
        return False


NAMESPACES = [pytest.param(name, marks=pytest.mark.skipif(not _installed(name), reason=f"{name} is not installed"))
              for name in ("lightning.pytorch", "pytorch_lightning")]


def _run(tmp_path, monkeypatch, namespace, *args, device="neuron"):
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    return run_script(SCRIPT, ["--namespace", namespace, *args], device=device, steps=1,
                      project_root=str(Path(SCRIPT).parent))


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_the_accelerators_device_check_is_answered_during_the_run_only(namespace):
    from opscan.trace.run.libraries import real_answers

    fabric = "lightning.fabric" if namespace.startswith("lightning.") else "lightning_fabric"
    trainer_cuda = importlib.import_module(f"{namespace}.accelerators.cuda")
    fabric_cuda = importlib.import_module(f"{fabric}.accelerators.cuda")
    originals = (trainer_cuda.CUDAAccelerator.setup_device, fabric_cuda.CUDAAccelerator.setup_device,
                 fabric_cuda._is_ampere_or_later)
    with real_answers("neuron"):
        inside = (trainer_cuda.CUDAAccelerator.setup_device, fabric_cuda.CUDAAccelerator.setup_device,
                  fabric_cuda._is_ampere_or_later)
        assert all(a is not b for a, b in zip(inside, originals))
        assert fabric_cuda._is_ampere_or_later() is False
    with real_answers("cpu"):   # a CPU-only machine: Lightning's own answers
        assert (trainer_cuda.CUDAAccelerator.setup_device, fabric_cuda.CUDAAccelerator.setup_device,
                fabric_cuda._is_ampere_or_later) == originals
    assert (trainer_cuda.CUDAAccelerator.setup_device, fabric_cuda.CUDAAccelerator.setup_device,
            fabric_cuda._is_ampere_or_later) == originals


@pytest.mark.slow   # runs a Lightning fit
@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize("accelerator", ["gpu", "cuda", "auto"])
def test_a_trainer_asked_for_a_gpu_takes_its_step_on_the_imitated_device(tmp_path, monkeypatch, namespace,
                                                                         accelerator):
    trace, notes = _run(tmp_path, monkeypatch, namespace, "--accelerator", accelerator)
    assert trace.complete, trace.stopped_at
    assert trace.steps == 1 and trace.device == "neuron"
    assert any("Lightning's CUDA accelerator runs on the imitated device" in n for n in notes)
    ops = {u.op: u for u in trace.ops}
    assert "forward" in ops["aten::nll_loss_forward"].phases
    assert "backward" in ops["aten::nll_loss_backward"].phases
    assert any("optimizer" in u.phases for u in trace.ops)   # AdamW's update


@pytest.mark.slow
@pytest.mark.parametrize("namespace", NAMESPACES)
def test_16_mixed_precision_autocasts_and_scales_on_the_imitated_device(tmp_path, monkeypatch, namespace):
    trace, _ = _run(tmp_path, monkeypatch, namespace, "--precision", "16-mixed")
    assert trace.complete, trace.stopped_at
    ops = {u.op: u for u in trace.ops}
    assert "torch.float16" in ops["aten::addmm"].dtypes   # Lightning's autocast
    assert {"aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_amp_update_scale_"} <= set(ops)   # its scaler


@pytest.mark.slow
@pytest.mark.parametrize("namespace", NAMESPACES)
def test_on_a_cpu_only_machine_lightning_answers_for_itself(tmp_path, monkeypatch, namespace):
    """Negatives: nothing is answered on --device cpu: "gpu" stops as Lightning stops on such a
    machine, "auto" trains on the CPU with no Lightning note."""
    trace, _ = _run(tmp_path, monkeypatch, namespace, "--accelerator", "gpu", device="cpu")
    assert not trace.complete and "MisconfigurationException" in trace.stopped_at
    trace, notes = _run(tmp_path, monkeypatch, namespace, "--accelerator", "auto", device="cpu")
    assert trace.complete, trace.stopped_at
    assert trace.steps == 1 and not any("Lightning" in n for n in notes)


@pytest.mark.slow
@pytest.mark.parametrize("namespace", NAMESPACES)
def test_two_devices_stop_at_lightnings_device_check_with_a_hint(tmp_path, monkeypatch, namespace):
    trace, _ = _run(tmp_path, monkeypatch, namespace, "--devices", "2")
    assert not trace.complete and trace.steps == 0
    assert "MisconfigurationException" in trace.stopped_at
    assert "devices=1" in trace.stop_hint
