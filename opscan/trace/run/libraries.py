"""What libraries ask of an `opscan run` about its tensors and its device, answered as in a real run
(NOTE [fake tensors asked], NOTE [Lightning on the imitated device])."""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
from collections.abc import Callable

# NOTE [fake tensors asked]
# Libraries skip value-dependent code while a graph is traced, and count a FakeTensor as tracing:
# transformers' `is_tracing(tensor)` is true for one (`is_fake_tensor`), so its attention masks take
# the traced path (an explicit causal mask: new_ones, le, bitwise_and, index) where a real run reads
# the padding mask, finds no padding and lets SDPA apply `is_causal` (ones, tril in its math kernel).
# In a real run no tensor is fake: inside the run the question answers False, and the value-dependent
# code then runs as for real (host values, else counted stand-ins). The answer is given where the
# library asks it: its module is patched when it is imported during the run (or at the start, when
# it already was) and restored after.

# NOTE [Lightning on the imitated device]
# A script written for a GPU asks Lightning for one: `Trainer(accelerator="gpu" | "cuda" | "auto",
# devices=1)`. Lightning picks its CUDA accelerator from torch.cuda's answers (available, one device:
# redirect.py), gets `torch.device("cuda", 0)` for its strategy (the imitated device, as every CUDA
# device is) and then checks, in `CUDAAccelerator.setup_device`, that the device's type is "cuda":
# "Device should be GPU, got neuron:0 instead", before a step. On TorchNeuron the script would ask for
# Lightning's Neuron accelerator instead; the ops of its step are the same, so the check accepts the
# imitated device (both `pytorch_lightning` and `lightning.pytorch`, and the Fabric accelerator of
# `lightning_fabric` / `lightning.fabric`) and sets it as torch.cuda.set_device would. Lightning also
# asks the GPU's compute capability (`_is_ampere_or_later`, to advise on TF32 matmul precision, in
# setup and in its throughput monitor), which torch.cuda has no answer for on the imitated device: it
# is answered False (the device is no NVIDIA Ampere GPU; the advice is for TF32 tensor cores).
# Mixed precision ("16-mixed", "bf16-mixed") needs nothing more: Lightning enters torch.autocast
# ("cuda") and builds a GradScaler("cuda"), which redirect.py already answers. `devices=2` or more
# (DDP) stops at Lightning's own device check ("You requested gpu: [0, 1] But your machine only has:
# [0]"): the imitated machine has one device, and Lightning's launcher would start the other ranks as
# new processes, which a run does not imitate; the stop hint says to run one device. On `--device cpu`
# nothing is answered: the machine has no GPU, and Lightning says so as it does on one.


def _not_fake(original: Callable, device: str, note: Callable[[str], None]) -> Callable | None:
    return lambda x: False


def _not_ampere(original: Callable, device: str, note: Callable[[str], None]) -> Callable | None:
    if device == "cpu":
        return None

    def is_ampere_or_later(device=None) -> bool:
        note("Lightning's GPU generation check answered as on the imitated device (not an NVIDIA GPU)")
        return False

    return is_ampere_or_later


def _setup_device(original: Callable, device: str, note: Callable[[str], None]) -> Callable | None:
    if device == "cpu":
        return None

    def setup_device(self, root_device) -> None:
        import torch

        if getattr(root_device, "type", None) != device:
            return original(self, root_device)
        note("Lightning's CUDA accelerator runs on the imitated device")
        torch.cuda.set_device(root_device)   # answered (redirect.py), as Lightning's own setup calls it
        return None

    return setup_device


# (module, attribute or Class.attribute) -> the answer's maker: (original, device, note) -> the answer,
# or None where the run's device needs none
_ANSWERS: dict[tuple[str, str], Callable] = {("transformers.utils.import_utils", "is_fake_tensor"): _not_fake}
for _fabric in ("lightning_fabric", "lightning.fabric"):
    _ANSWERS[(f"{_fabric}.accelerators.cuda", "_is_ampere_or_later")] = _not_ampere
    _ANSWERS[(f"{_fabric}.accelerators.cuda", "CUDAAccelerator.setup_device")] = _setup_device
for _trainer in ("pytorch_lightning", "lightning.pytorch"):
    _ANSWERS[(f"{_trainer}.accelerators.cuda", "CUDAAccelerator.setup_device")] = _setup_device
# Lightning 1.x checks the device in `setup_environment` (1.7-1.9: accelerators/cuda.py; before 1.7:
# GPUAccelerator in accelerators/gpu.py); its base class's does nothing the imitated device needs
_ANSWERS[("pytorch_lightning.accelerators.cuda", "CUDAAccelerator.setup_environment")] = _setup_device
_ANSWERS[("pytorch_lightning.accelerators.gpu", "GPUAccelerator.setup_environment")] = _setup_device
_MODULES = frozenset(module for module, _ in _ANSWERS)


class _Patcher(importlib.abc.MetaPathFinder):
    """Patches a module of _ANSWERS right after it is executed."""

    def __init__(self, patch) -> None:
        self.patch = patch

    def find_spec(self, fullname, path, target=None):
        if fullname not in _MODULES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _Loader(spec.loader, self.patch)
                return spec
        return None


class _Loader(importlib.abc.Loader):
    def __init__(self, loader, patch) -> None:
        self.loader, self.patch = loader, patch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        self.patch(module)


def _owner(module, attribute: str):
    """(the object that holds `attribute` -- the module, or its class for "Class.name" --, the name), or None."""
    *path, name = attribute.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    return (owner, name) if name in vars(owner) else None


@contextlib.contextmanager
def real_answers(device: str = "cpu", note: Callable[[str], None] = lambda what: None):
    """Inside: the library questions of _ANSWERS answer as in a real run on `device`."""
    saved: list[tuple] = []

    def patch(module) -> None:
        for (name, attribute), make in _ANSWERS.items():
            found = _owner(module, attribute) if module.__name__ == name else None
            if found is None:
                continue
            owner, short = found
            original = vars(owner)[short]
            answer = make(original, device, note)
            if answer is not None:
                saved.append((owner, short, original))
                setattr(owner, short, answer)

    for name in _MODULES:
        if name in sys.modules:
            patch(sys.modules[name])
    finder = _Patcher(patch)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for owner, attribute, original in reversed(saved):
            setattr(owner, attribute, original)


__all__ = ["real_answers"]
