"""Small sample arguments for an operator, built from its schema (meta tensors or real device tensors)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

# Shapes tried in turn: most ops accept one of these (mm needs 2-d, bmm 3-d, conv 4-d).
SHAPES: tuple[tuple[int, ...], ...] = ((2, 2), (2, 2, 2), (2, 2, 2, 2), (2,))


class NoSample(Exception):
    """The schema has an argument this module cannot invent a value for."""


def resolve(op_name: str):
    """The torch OpOverload for a canonical name, or None when this torch has no such op."""
    import torch

    ns, _, rest = op_name.partition("::")
    packet_name, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, ns), packet_name)
        return getattr(packet, overload or "default")
    except (AttributeError, RuntimeError):
        return None


def _value(arg, shape: tuple[int, ...], tensor: Callable):
    kind = str(arg.type)            # TorchScript spelling: Tensor, List[int], number, Optional[...]
    name = arg.name
    if kind.startswith("Optional["):
        return None
    if kind == "Tensor":
        return tensor(shape)
    if kind == "List[Tensor]":
        return [tensor(shape), tensor(shape)]
    if kind == "number":
        return 1
    if kind == "List[number]":
        return [1, 1]
    if kind == "int":
        return 0 if "dim" in name else 1
    if kind == "List[int]":
        if "dim" in name:
            return [0]
        if name in ("size", "shape"):
            return list(shape)
        if "padding" in name:
            return [0] * (arg.N or 1)
        return [1] * (arg.N or 1)   # int[2] kernel_size / stride / dilation: one per spatial dim
    if kind == "float":
        return 0.5
    if kind == "List[float]":
        return [0.5]
    if kind == "bool":
        return False
    if kind == "List[bool]":
        return [True]
    raise NoSample(f"cannot invent a value for {name}: {kind}")


def candidates(op, tensor: Callable[[tuple[int, ...]], object]) -> Iterator[tuple[list, dict]]:
    """Yield (args, kwargs) to try for `op`, one per shape in SHAPES; `tensor(shape)` makes a tensor.

    Arguments with a default are left out (the op fills them in); out= arguments get tensors.
    """
    for shape in SHAPES:
        args: list = []
        kwargs: dict = {}
        skipped = False
        try:
            for arg in op._schema.arguments:
                is_out = arg.alias_info is not None and arg.alias_info.is_write and arg.kwarg_only
                if arg.has_default_value() and not is_out:
                    skipped = True
                    continue
                value = _value(arg, (0,) if is_out else shape, tensor)  # empty out=: resized silently
                if arg.kwarg_only or skipped:
                    kwargs[arg.name] = value
                else:
                    args.append(value)
        except NoSample:
            return
        yield args, kwargs
