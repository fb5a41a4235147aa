"""FSDP2 tracing: rank 0 of an N-way `fully_shard` job on a fake process group (no real processes)."""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from opscan.errors import TraceError, UsageError

# What FSDP2 asks of a device module beyond what the imitated backend has: streams and events.
# torch.cpu's no-op versions are used (the trace has no concurrency to model).
_STREAM_API = ("Stream", "Event", "current_stream", "stream", "StreamContext")


def check_world_size(fsdp) -> int | None:
    """None (no FSDP) or the world size, an int >= 2; else a UsageError."""
    if fsdp is None:
        return None
    if isinstance(fsdp, bool) or not isinstance(fsdp, int) or fsdp < 2:
        raise UsageError(f"--fsdp must be a world size of at least 2, got {fsdp!r}")
    return fsdp


def layer_blocks(model: nn.Module) -> list[nn.Module]:
    """The repeated blocks to shard one by one: the elements of the model's largest nn.ModuleList
    whose elements are all the same class (e.g. a decoder's layers); [] when there is none."""
    best: list[nn.Module] = []
    for _name, module in model.named_modules():
        if isinstance(module, nn.ModuleList) and len(module) > len(best):
            kinds = {type(child) for child in module}
            if len(kinds) == 1 and any(True for _ in module[0].parameters()):
                best = list(module)
    return best


@contextlib.contextmanager
def fake_process_group(world_size: int, device: str):
    """A `fake` process group (rank 0 of world_size) for the block, destroyed afterwards."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if not dist.is_available():
        raise TraceError("--fsdp needs a PyTorch build with torch.distributed")
    if dist.is_initialized():
        raise TraceError("--fsdp needs a process without a default process group; one is initialized")
    patched = patch_device_module(device)
    try:
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
        try:
            yield dist.device_mesh.init_device_mesh(device, (world_size,))
        finally:
            dist.destroy_process_group()
    finally:
        module = getattr(torch, device, None)
        for name in patched:
            delattr(module, name)


def shard(model: nn.Module, mesh) -> int:
    """fully_shard each repeated block, then the root; returns the number of blocks sharded."""
    from torch.distributed.fsdp import fully_shard

    blocks = layer_blocks(model)
    for block in blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return len(blocks)


def patch_device_module(device: str) -> list[str]:
    """Give torch.<device> the no-op stream API FSDP2 needs when it lacks it; names added."""
    module = getattr(torch, device, None)
    if module is None or device == "cpu":
        return []
    added = []
    for name in _STREAM_API:
        if not hasattr(module, name):
            setattr(module, name, getattr(torch.cpu, name))
            added.append(name)
    return added
