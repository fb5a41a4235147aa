"""Stand-ins for data-dependent results that fake tensors cannot know (`.item()`, `nonzero`, ...).

NOTE [stand-ins]
A fake tensor has no values, so `.item()` (aten::_local_scalar_dense) and ops whose output shape
depends on values (nonzero, masked_select, unique, ...) cannot be computed. Instead of ending the
trace, opscan invents a value: False for a bool (so `if torch.isnan(x).any(): raise` does not
raise), 1 for an integer, 1.0 for a float, and the largest possible shape for dynamic outputs (so
every MoE expert and every selected element is exercised). Each stand-in is counted and reported
with its source line: a branch taken on a stand-in may differ from the real run.
"""

from __future__ import annotations

import torch

from opscan.errors import TraceError

aten = torch.ops.aten
# The ops stand_in() knows (used on the meta device, which raises plain errors for them).
STAND_IN_OPS = (aten._local_scalar_dense, aten.nonzero, aten.argwhere, aten.masked_select,
                aten._unique2, aten.unique_consecutive, aten.unique_dim, aten._unique,
                aten.repeat_interleave)


def _upper_bound_rows(x: torch.Tensor) -> int:
    return int(x.numel())


def stand_in(func, args, kwargs):
    """Return (output, kind, value) for a data-dependent op; raise TraceError if unknown."""
    packet = func.overloadpacket
    if packet is aten._local_scalar_dense:
        dtype = args[0].dtype
        if dtype == torch.bool:
            return False, "item", "False"
        if dtype.is_floating_point or dtype.is_complex:
            return 1.0, "item", "1.0"
        return 1, "item", "1"
    if packet in (aten.nonzero, aten.argwhere):
        x = args[0]
        rows = _upper_bound_rows(x)
        out = torch.empty((rows, x.dim()), dtype=torch.long, device=x.device)
        return out, "dynamic-shape", f"upper bound {rows} rows"
    if packet is aten.masked_select:
        x, mask = args[0], args[1]
        rows = max(x.numel(), mask.numel())
        return torch.empty((rows,), dtype=x.dtype, device=x.device), "dynamic-shape", \
            f"upper bound {rows} elements"
    if packet in (aten._unique2, aten.unique_consecutive, aten.unique_dim, aten._unique):
        x = args[0]
        n = x.numel()
        values = torch.empty((n,), dtype=x.dtype, device=x.device)
        idx = torch.empty(x.shape, dtype=torch.long, device=x.device)
        counts = torch.empty((n,), dtype=torch.long, device=x.device)
        if packet is aten._unique:
            return (values, idx), "dynamic-shape", f"upper bound {n} values"
        return (values, idx, counts), "dynamic-shape", f"upper bound {n} values"
    if packet is aten.repeat_interleave and isinstance(args[0], torch.Tensor):
        repeats = args[0]
        size = kwargs.get("output_size") or repeats.numel()
        return torch.empty((size,), dtype=repeats.dtype, device=repeats.device), \
            "dynamic-shape", f"{size} elements"
    raise TraceError(f"{func.name()} has a data-dependent output opscan has no stand-in for")
