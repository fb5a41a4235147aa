"""Sizes by role: which dims of a traced tensor are the sequence and which the width, never inferred
from values that coincide (NOTE [sizes by role]).

NOTE [sizes by role]
A shrunk trace's fallback cost grows per dim of each tensor by what the dim is (NOTE [fallback
scaling] in opscan/assess/assessment.py): the width, the sequence (twice for an [.., S, S] score),
or neither. A dim's value cannot say which when two sizes coincide: llama-tiny traced at sequence
128, equal to its intermediate size (2 x its width 64), makes silu's [2, 128, 128] look like an
S x S score, and the width factor is lost (64x low at --real-hidden 4096). So:
  - where opscan chooses the sizes (an hf: target's sequence length), it chooses one that no size
    of the model has (`distinct_length`: no dim of a parameter, no small multiple of the width);
  - where the sequence length is given (`--seq-len 128`) and coincides with a size of the model, and
    opscan builds the inputs (so it can build them at another length), the training step is traced a
    second time at a length no size of the model has, and the two traces are compared call by call:
    a dim that changed with the sequence is the sequence (its power from the ratio: S, or S x S
    flattened), a dim that stayed is judged by value (the width, or neither). The second trace
    counts nothing else (ops, counts, signatures are the first trace's);
  - where the sizes cannot be told apart (a factory's or a script's fixed inputs with a size equal
    to a width multiple, or two traces whose calls do not line up), the bytes are not scaled in
    width and the fallback's `scaled_by` says why.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Iterable

from opscan.records import OpUsage, Shrink
from opscan.trace.recorder import WIDTH_MULTIPLES, Call, canonical_name


def widths(hidden: int) -> frozenset[int]:
    """The sizes taken as the width: the traced hidden size and its small multiples."""
    return frozenset(hidden * k for k in WIDTH_MULTIPLES) if hidden else frozenset()


def model_sizes(model, hidden: int) -> frozenset[int]:
    """Every size a dim of the model's tensors can have besides the batch and the sequence: the dims
    of its parameters and buffers, and the width multiples."""
    tensors = (*model.parameters(), *model.buffers()) if hasattr(model, "parameters") else ()
    dims = {int(d) for t in tensors for d in t.shape}
    return frozenset(d for d in dims | widths(hidden) if d > 1)


def distinct_length(start: int, sizes: Iterable[int], low: int = 8) -> int:
    """`start` when no size of the model has it, else the largest length below it that none has,
    multiples of 16 first, then of 8, then any (at least `low`); `start` when none is free."""
    taken = set(sizes)
    if start not in taken:
        return start
    for step in (16, 8, 1):
        for length in range(start - start % step or start - step, low - 1, -step):
            if length < start and length not in taken:
                return length
    return start


def coincides(seq_len: int, sizes: Iterable[int]) -> bool:
    """Whether the sequence length equals a size of the model (dims of that value are ambiguous)."""
    return bool(seq_len) and seq_len in set(sizes)


def input_size_collision(inputs: Iterable[object], hidden: int) -> int:
    """A size of a fixed example input that equals a width multiple (its dims cannot be told from the
    width), or 0: every dim of an integer tensor (token ids, positions), the dims but the last of a
    floating tensor (the last is its features)."""
    import torch

    width = widths(hidden)
    for value in inputs:
        if not isinstance(value, torch.Tensor) or value.dim() == 0:
            continue
        dims = tuple(value.shape) if not value.is_floating_point() else tuple(value.shape)[:-1]
        hit = next((d for d in dims if d in width), 0)
        if hit:
            return int(hit)
    return 0


def _power(main: int, probe: int, ratio: float) -> int:
    """How many sequence factors a dim holds (1 for S or B x S, 2 for S x S flattened)."""
    if main == probe:
        return 0
    if main <= 0 or probe <= 0 or ratio == 1.0:
        return 1
    return max(1, round(math.log(probe / main) / math.log(ratio)))


def by_role(main: list[tuple[str, Call]], probe: list[tuple[str, Call]], seq_len: int, probe_len: int,
            hidden: int) -> dict[str, Counter] | None:
    """Each op's bytes per (class, width dims, extra sequence dims), the roles of the dims told apart by
    the second trace (NOTE [sizes by role]); None when the two traces' calls do not line up."""
    if len(main) != len(probe) or not seq_len or not probe_len:
        return None
    ratio = probe_len / seq_len
    width = widths(hidden)
    out: dict[str, Counter] = {}
    for (name, call), (other, again) in zip(main, probe):
        if name != other or len(call) != len(again):
            return None
        shaped = out.setdefault(name, Counter())
        for (kind, shape, size, activation), (_, shape2, _, _) in zip(call, again):
            if len(shape) != len(shape2):
                return None
            if not activation:   # a parameter-shaped tensor: its dims by value (no sequence in it)
                dims = min(2, sum(1 for d in shape if d in width)), 0
            else:
                power = sum(_power(d, e, ratio) for d, e in zip(shape, shape2))
                dims = min(2, sum(1 for d, e in zip(shape, shape2) if d == e and d in width)), 1 if power >= 2 else 0
            shaped[(kind, *dims)] += size
    return out


def plan(model, built, seq_len: int, hidden: int) -> tuple[int, str]:
    """(the sequence length of a second trace that tells sizes apart, or 0; Shrink.roles) for a model
    and its built inputs (`spec.Built`) whose sizes coincide (NOTE [sizes by role])."""
    if not hidden:
        return 0, ""
    sizes = model_sizes(model, hidden)
    if seq_len and coincides(seq_len, sizes):
        other = distinct_length(seq_len, sizes)
        if built.resized is not None and other != seq_len:
            return other, ""
        return 0, (f"not told apart: the sequence length {seq_len} is also a size of the model "
                   "(trace with another --seq-len)")
    if not seq_len:
        hit = input_size_collision((*built.args, *built.kwargs.values()), hidden)
        if hit:
            return 0, (f"not told apart: an input size, {hit}, is also a multiple of the width {hidden} "
                       "(make the example inputs' sizes differ from the model's)")
    return 0, ""


def told(ops: tuple[OpUsage, ...], main: list, probe: list, shrink: Shrink, probe_len: int
         ) -> tuple[tuple[OpUsage, ...], Shrink]:
    """The ops with their train-step bytes by role from two traces, and the shrink record saying how
    (NOTE [sizes by role]); the ops unchanged and the width said not told apart when the traces'
    calls do not line up."""
    shaped = by_role(main, probe, shrink.seq_len, probe_len, shrink.hidden)
    if shaped is None:
        return ops, dataclasses.replace(shrink, roles=(
            f"not told apart: the sequence length {shrink.seq_len} is also a size of the model, and a second "
            f"trace at {probe_len} did not line up call by call"))
    by_op = {canonical_name(name): counts for name, counts in shaped.items()}
    out = tuple(dataclasses.replace(u, step_shape_bytes=tuple((*key, n) for key, n in sorted(by_op[u.op].items()) if n))
                if u.step_calls and u.op in by_op else u for u in ops)
    return out, dataclasses.replace(shrink, roles=f"probe {probe_len}")
