"""`torch.Generator` of the imitated device in a run (NOTE [generators of the imitated device])."""

from __future__ import annotations

import contextlib

import torch

from opscan.trace import fakes

# NOTE [generators of the imitated device]
# Research code makes random generators on the model's device: a second-order optimizer's
# Hutchinson probes (`torch.Generator(p.device).manual_seed(seed)`, then `torch.randint(...,
# generator=g, device=p.device)`), a diffusion sampler's `torch.Generator("cuda")`. A generator of
# a device needs that backend's C++ hooks (`getNewGenerator`), which the imitated PrivateUse1
# device has not: the run would stop there. The ops of the step do not depend on which stream the
# probes draw from, so in a run `torch.Generator(device)` of the imitated device (or of cuda, which
# the run answers as that device) is a CPU generator that says it is of that device (`.device`),
# seeded and drawn as the script asks; the random ops that take it on the imitated device are fake
# ones (their values are not drawn). Every other generator is torch's own, and `isinstance(x,
# torch.Generator)` holds for both. Each one made is a counted note at its line.


class _GeneratorType(type(torch._C.Generator)):  # type: ignore[misc]
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, torch._C.Generator)

    def __subclasscheck__(cls, other) -> bool:
        return issubclass(other, torch._C.Generator)


@contextlib.contextmanager
def imitated(device: str, note):
    """Inside: `torch.Generator` of `device` (or of cuda) made as NOTE [generators of the imitated device] says."""
    if device == "cpu":
        yield
        return

    class Generator(torch._C.Generator, metaclass=_GeneratorType):
        def __new__(cls, device_asked="cpu", *args, **kwargs):
            asked = torch.device(device_asked) if device_asked is not None else torch.device("cpu")
            if asked.type not in (device, "cuda"):
                return torch._C.Generator(asked)
            made = super().__new__(cls, "cpu")
            made._opscan_device = torch.device(device, asked.index or 0)
            note(f"torch.Generator({asked.type!r}) made as a CPU generator of the imitated device")
            return made

        def __init__(self, *args, **kwargs) -> None:
            pass

        @property
        def device(self):
            return self._opscan_device

    with fakes.patched(torch, "Generator", Generator):
        yield
