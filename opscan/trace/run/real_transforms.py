"""torchvision's transforms run on real values where their input has values (NOTE [the data side on
real values] in loaders.py): an augmentation applied in the training loop to host images (SimCLR's
`data_augment(x)` for each image of the batch) draws and checks its parameters as on real data."""

from __future__ import annotations

from collections.abc import Callable

from opscan.trace.run.stand_ins import Patches, StandIns


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """torchvision's transforms wrapped when the script imports them."""
    return {"torchvision.transforms": lambda module: _transforms(patches)}


def _transforms(patches: Patches) -> None:
    try:
        from torchvision.transforms import transforms
    except ImportError:
        return
    for value in list(vars(transforms).values()):
        if not isinstance(value, type) or value.__module__ != transforms.__name__:
            continue
        for name in ("__call__", "forward"):
            method = value.__dict__.get(name)
            if callable(method):
                patches.set(value, name, _on_real_values(method))


def _on_real_values(method: Callable) -> Callable:
    def run(self, *args, **kwargs):
        real = _real_inputs((args, kwargs))
        if real is None:
            return method(self, *args, **kwargs)
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        with unset_fake_temporarily():
            return method(self, *real[0], **real[1])
    return run


def _real_inputs(inputs):
    """`inputs` with every host tensor as a real one (a fake one's kept values), or None when a tensor
    has no values (a fake of the device or without values: the transform runs under the fake mode)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.utils._pytree import tree_flatten, tree_map_only

    leaves, _ = tree_flatten(inputs)
    tensors = [t for t in leaves if isinstance(t, torch.Tensor)]
    for t in tensors:
        if t.device.type != "cpu" or isinstance(t, FakeTensor) and t.constant is None:
            return None
    return tree_map_only(FakeTensor, lambda t: t.constant, inputs)
