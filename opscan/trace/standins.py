"""Stand-ins for data-dependent results that fake tensors cannot know (`.item()`, `nonzero`, ...).

NOTE [stand-ins]
A fake tensor has no values, so `.item()` (aten::_local_scalar_dense) and ops whose output shape
depends on values (nonzero, masked_select, unique, ...) cannot be computed. Instead of ending the
trace, opscan invents a value: False for a bool (so `if torch.isnan(x).any(): raise` does not
raise) except True for the result of an `all` (`if not torch.isfinite(x).all(): ...`,
torch.distributions' argument validation: the value a healthy run sees), 1 for an integer, 1.0
for a float, and the largest possible shape for dynamic outputs, boolean-mask indexing included
(so every MoE expert and every selected element is exercised). Each stand-in is counted and reported
with its source line: a branch taken on a stand-in may differ from the real run.
"""

from __future__ import annotations

import torch

from opscan.errors import TraceError

aten = torch.ops.aten
# The ops stand_in() knows (used on the meta device, which raises plain errors for them).
STAND_IN_OPS = (aten._local_scalar_dense, aten.nonzero, aten.argwhere, aten.masked_select,
                aten._unique2, aten.unique_consecutive, aten.unique_dim, aten._unique,
                aten.repeat_interleave, aten._pack_padded_sequence)


def _upper_bound_rows(x: torch.Tensor) -> int:
    return int(x.numel())


def covers(func, args) -> bool:
    """Whether stand_in() knows this call (the meta device raises plain errors for these)."""
    packet = func.overloadpacket
    if packet is aten.index:
        return len(args) > 1 and any(_is_mask(i) for i in args[1])
    return packet in STAND_IN_OPS


def _is_mask(index) -> bool:
    return isinstance(index, torch.Tensor) and index.dtype in (torch.bool, torch.uint8)


# Ops whose boolean result a healthy run sees True (see NOTE [stand-ins]).
ALL_OPS = (aten.all, aten._is_all_true)


def stand_in(func, args, kwargs, from_all: bool = False):
    """Return (output, kind, value) for a data-dependent op; raise TraceError if unknown.

    `from_all`: the tensor whose `.item()` is asked for is the output of one of ALL_OPS.
    """
    packet = func.overloadpacket
    if packet is aten._local_scalar_dense:
        dtype = args[0].dtype
        if dtype == torch.bool:
            return (True, "item", "True (all)") if from_all else (False, "item", "False")
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
    if packet is aten.index and any(_is_mask(i) for i in args[1]):
        # x[mask]: each boolean mask becomes the long indices of its every element (all selected)
        x, indices = args[0], args[1]
        rows = max(i.numel() for i in indices if _is_mask(i))
        longs = []
        for index in indices:
            if _is_mask(index):
                longs.extend(torch.empty((index.numel(),), dtype=torch.long, device=index.device)
                             for _ in range(index.dim()))
            else:
                longs.append(index)
        return func(x, longs), "dynamic-shape", f"upper bound {rows} rows (boolean mask)"
    if packet is aten.repeat_interleave and isinstance(args[0], torch.Tensor):
        repeats = args[0]
        size = kwargs.get("output_size") or repeats.numel()
        return torch.empty((size,), dtype=repeats.dtype, device=repeats.device), \
            "dynamic-shape", f"{size} elements"
    if packet is aten._pack_padded_sequence:   # NOTE [packed sequences of unknown lengths]
        x, lengths = args[0], args[1]
        batch_first = args[2] if len(args) > 2 else kwargs.get("batch_first", False)
        steps, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
        known = _real_values(lengths)
        counts = [steps] * batch if known is None else sorted((min(int(n), steps) for n in known), reverse=True)
        sizes = [sum(1 for n in counts if n > t) for t in range(max(counts, default=0))]
        data = torch.empty((sum(counts), *x.shape[2:]), dtype=x.dtype, device=x.device)
        said = f"every length {steps}: {steps * batch} rows (upper bound)" if known is None else \
            f"{sum(counts)} rows from the lengths given"
        return (data, _host(sizes)), "dynamic-shape", said
    raise TraceError(f"{func.name()} has a data-dependent output opscan has no stand-in for")


# NOTE [packed sequences of unknown lengths]
# RNN code packs a padded batch by its lengths (`pack_padded_sequence(emb, lengths)`, then the LSTM
# on the packed data and `pad_packed_sequence` back): the packed data's rows and the batch sizes per
# step are the lengths' values. Lengths held on the host with their values (a run keeps host tensors
# real) give the exact packing; lengths a fake tensor holds take every sequence at the padded length
# (the largest shape, as for the other dynamic outputs above). The batch sizes are a real host tensor,
# as torch keeps them (on the CPU): the RNN reads them (`batch_sizes[0]`, its per-step loop in C++),
# so its ops are those of the real step, only sized by the assumption. Unpacking
# (`_pad_packed_sequence`, composite: torch's C++ fills a host tensor of lengths that a fake mode
# cannot hold) is answered in Python by `pad_packed` below while a step is traced: the lengths from
# the batch sizes, the data padded to the steps (`total_length` when given), gradients kept.


def pad_packed(original):
    """`_VF._pad_packed_sequence` for fake data (NOTE [packed sequences of unknown lengths])."""
    from torch._subclasses.fake_tensor import FakeTensor

    def unpack(data, batch_sizes, batch_first, padding_value, total_length):
        if not isinstance(data, FakeTensor):
            return original(data, batch_sizes, batch_first, padding_value, total_length)
        steps_read = batch_sizes.shape[0]
        per_step = _real_values(batch_sizes) or [data.shape[0] // max(steps_read, 1)] * steps_read
        batch, steps = per_step[0] if per_step else 0, max(len(per_step), int(total_length or 0))
        lengths = _host([sum(1 for n in per_step if n > b) for b in range(batch)])
        rest = tuple(data.shape[1:])
        missing = steps * batch - data.shape[0]
        full = torch.cat([data, data.new_full((missing, *rest), padding_value)]) if missing > 0 else data
        out = full.reshape(steps, batch, *rest)
        return (out.transpose(0, 1) if batch_first else out), lengths
    return unpack


def _real_values(tensor) -> list[int] | None:
    """The values of a real (not fake, not meta) tensor, else None."""
    from torch._subclasses.fake_tensor import FakeTensor

    if not isinstance(tensor, torch.Tensor) or isinstance(tensor, FakeTensor) or tensor.is_meta:
        return None
    return [int(v) for v in tensor.tolist()]


def _host(values: list[int]) -> torch.Tensor:
    """A real int64 CPU tensor of `values`, made outside any fake mode."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        return torch.tensor(values, dtype=torch.long)


# NOTE [split sizes from stand-ins]
# Eager MoE code counts the tokens per expert and splits by the counts:
# `x.split(counts.tolist())`. The counts' `.item()`s are stand-ins (1 each), so the sizes no longer
# add up to the rows and split_with_sizes refuses. When a split's sizes do not add up after stand-in
# values were used, the split is traced with the sizes scaled to the rows (each part keeps its share,
# the last takes the remainder): every part, and so every expert, is exercised, as with the
# upper-bound shapes above. It is counted like any stand-in.
def resplit(func, args, kwargs):
    """(output, kind, value) of a split_with_sizes whose sizes (from stand-ins) do not add up, or None."""
    if func is not aten.split_with_sizes.default:
        return None
    x, sizes = args[0], list(args[1])
    dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
    rows, total = x.shape[dim], sum(sizes)
    if not sizes or total <= 0 or total == rows or any(s < 0 for s in sizes):
        return None
    scaled = [rows * s // total for s in sizes[:-1]]
    scaled.append(rows - sum(scaled))
    return func(x, scaled, dim), "split-sizes", f"scaled to {rows} rows"
