"""The TorchNeuron package as an `opscan run --device neuron` script finds it (NOTE [the imitated package]).

NOTE [the imitated package]
On a Trainium machine TorchNeuron is installed as the `torch_neuronx` package, and libraries that
support the device look for it before they use `torch.neuron`: accelerate's device detection asks
`importlib.util.find_spec("torch_neuronx")` and, without it, puts the model on the CPU (diffusers'
and transformers' training examples then ran their whole step on host tensors: 1 device op, 73 host
ops). So while the script runs on the imitated device, a `torch_neuronx` that no installed package
provides is found and imports as an empty package: the device registration it would do is already
done (opscan's `torch.neuron`, PrivateUse1 named `neuron`), and it has no submodules. A real
TorchNeuron install is left as it is. Each lookup is a note at the line that led to it.
"""

from __future__ import annotations

# NOTE [imitated registrations]
# What TorchNeuron registers for its device when it is imported, as the facts file records it
# (shared/neuron-facts/torchneuron-devsnapshot-2026-04-21.yaml, `device_registration` and
# `distributed`), and how the run mode imitates each; tests/run/test_run_registrations.py checks
# every entry against its fact:
# - device_registration: PrivateUse1 renamed `neuron`, `torch.neuron` a device module,
#   `tensor.neuron()` / `module.neuron()` (device.ensure_neuron, through PyTorch's own
#   `_setup_privateuseone_for_python_backend`);
# - distributed: `dist.Backend.register_backend('neuron', ..., devices=['neuron'])`, so
#   `torch.distributed.get_default_backend_for_device("neuron")` answers "neuron" and
#   `init_process_group(backend="neuron")` names a known backend (register_distributed below; the
#   group itself is the run's fake process group, NOTE [running a script] in script.py).
REGISTRATIONS = {
    "device_registration": "PrivateUse1 named `neuron`; torch.neuron; tensor.neuron(), module.neuron()",
    "distributed": "the `neuron` process-group backend, default for the `neuron` device",
}

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

PACKAGE = "torch_neuronx"


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `torch_neuronx` (only it) and makes it an empty package."""

    def __init__(self, note) -> None:
        self.note = note

    def find_spec(self, name, path=None, target=None):
        if name != PACKAGE:
            return None
        self.note(f"{PACKAGE} found: the imitated TorchNeuron package (torch.neuron is opscan's)")
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        module = types.ModuleType(spec.name, "TorchNeuron as imitated by opscan: torch.neuron is registered.")
        module.__path__ = []
        return module

    def exec_module(self, module) -> None:
        return None


@contextlib.contextmanager
def findable(note):
    """Inside: `torch_neuronx` is found and imports, unless a real one is installed."""
    if PACKAGE in sys.modules or importlib.util.find_spec(PACKAGE) is not None:
        yield
        return
    finder = _Finder(note)
    sys.meta_path.append(finder)   # after the real finders: an install made meanwhile still wins
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        module = sys.modules.get(PACKAGE)
        if module is not None and getattr(module, "__spec__", None) is not None \
                and module.__spec__.loader is finder:
            del sys.modules[PACKAGE]


def register_distributed() -> bool:
    """Register the `neuron` process-group backend for the `neuron` device, as TorchNeuron's import
    does (NOTE [imitated registrations]); a no-op when one is registered already (a real install).
    Its groups are PyTorch's fake process group: no collective communicates. True when registered."""
    import torch.distributed as dist

    if not dist.is_available():
        return False
    if "neuron" in dist.Backend.backend_list:
        return True
    from torch.testing._internal.distributed.fake_pg import _create_fake_pg

    dist.Backend.register_backend("neuron", _create_fake_pg, extended_api=True, devices=["neuron"])
    return True


__all__ = ["PACKAGE", "REGISTRATIONS", "findable", "register_distributed"]
