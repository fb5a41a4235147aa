"""Lightning 1.x checks its device in `CUDAAccelerator.setup_environment` (1.7-1.9, accelerators/cuda.py)
or `GPUAccelerator.setup_environment` (before 1.7, accelerators/gpu.py), not 2.x's `setup_device`:
answered the same way (NOTE [Lightning on the imitated device] in opscan/trace/run/libraries.py).
Modules of that shape stand in for Lightning 1.x, which no test environment installs."""

from __future__ import annotations

import sys
import types

import pytest

torch = pytest.importorskip("torch")


def _lightning_1x(monkeypatch, module: str, cls: str):
    class MisconfigurationException(Exception):
        pass

    class Accelerator:
        def setup_environment(self, root_device):   # Lightning 1.7's, as its source has it
            if root_device.type != "cuda":
                raise MisconfigurationException(f"Device should be GPU, got {root_device} instead")
            torch.cuda.set_device(root_device)

    Accelerator.__name__ = Accelerator.__qualname__ = cls
    made = types.ModuleType(module)
    setattr(made, cls, Accelerator)
    monkeypatch.setitem(sys.modules, module, made)
    return Accelerator, MisconfigurationException


@pytest.mark.parametrize("module, cls", [("pytorch_lightning.accelerators.cuda", "CUDAAccelerator"),
                                         ("pytorch_lightning.accelerators.gpu", "GPUAccelerator")])
def test_lightning_1x_setup_environment_accepts_the_imitated_device_during_the_run_only(monkeypatch, module, cls):
    from opscan.trace.run.libraries import real_answers

    accelerator, refused = _lightning_1x(monkeypatch, module, cls)
    original = accelerator.setup_environment
    said: list[str] = []
    set_to: list[object] = []
    monkeypatch.setattr(torch.cuda, "set_device", set_to.append)   # answered by the run's redirect, here recorded
    imitated = types.SimpleNamespace(type="neuron", index=0)
    with real_answers("neuron", said.append):
        assert accelerator.setup_environment is not original
        accelerator().setup_environment(imitated)   # Lightning's check would raise here
        assert set_to == [imitated] and said == ["Lightning's CUDA accelerator runs on the imitated device"]
        with pytest.raises(refused):   # another device is Lightning's own check
            accelerator().setup_environment(torch.device("meta"))
    assert accelerator.setup_environment is original   # put back
    with real_answers("cpu"):   # a CPU-only run: Lightning answers for itself
        assert accelerator.setup_environment is original
