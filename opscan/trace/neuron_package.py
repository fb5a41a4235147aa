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


__all__ = ["PACKAGE", "findable"]
