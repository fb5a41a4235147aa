"""Sample arguments for an operator, built from its schema (meta tensors or real device tensors).

NOTE [sample variants]
One invented call judges an op by one branch of its kernel: `dropout` by its eval branch,
`transpose.int` by transpose(0, 0), `layer_norm` not at all (normalized_shape [1] does not fit).
So every op is tried with several variants and callers take what all of them show (the union of
the parts of a composite, the worst result of a probe):
  - shapes 2-D, 3-D, 4-D and 1-D, every dimension of size 2 (so a 1-D weight or bias of size 2
    fits any channel, feature or normalized dimension);
  - `plain`: optional arguments left out, flags False;
  - `flags`: every bool True (train=True, bias=True, ...);
  - `optional`: every optional tensor given (bias present, an attention mask) and optional numbers
    set, flags False;
  - `int-target`: `target` an int64 class-index tensor of shape (2,) (nll_loss, cross_entropy),
    where `plain` gives a float target of the input's shape (mse_loss, binary_cross_entropy).
Index arguments (`index`, `indices`, also as the `Tensor?[] indices` list of index/index_put) are
int64 tensors of zeros in every variant; a `value` tensor is 0-dim (masked_fill.Tensor), `vec`
1-D (mv), `pad` an even-length list, `sizes` fits one dim (unflatten); dim arguments count up
(0, 1, ...) so transpose(0, 1) is tried; strings come from a small table of the values aten's
schemas take (`reduce: "sum"`, an einsum contraction for `equation`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Shapes tried in turn: most ops accept one of these (mm needs 2-d, bmm 3-d, conv 4-d).
SHAPES: tuple[tuple[int, ...], ...] = ((2, 2), (2, 2, 2), (2, 2, 2, 2), (2,))
VARIANTS = ("plain", "flags", "optional", "int-target")
INDEX_NAMES = ("index", "indices", "offsets")
MASK_NAMES = ("mask", "condition")          # bool tensors
SCALAR_NAMES = ("value",)                   # 0-dim beside `self`: masked_fill.Tensor, fill.Tensor, index_fill
VECTOR_NAMES = ("vec",)                     # 1-D tensors: mv
# Optional per-channel tensors: given 1-D of size 2 (every dimension of a sample is 2).
CHANNEL_NAMES = ("bias", "weight", "running_mean", "running_var", "save_mean", "save_invstd",
                 "pos_weight", "mean", "invstd")
STRINGS = {"reduce": "sum", "approximate": "none", "padding": "valid", "padding_mode": "zeros",
           "rounding_mode": "floor", "interpolation": "linear", "side": "left", "indexing": "ij",
           "norm": "backward", "mode": "reduced", "reduction": "mean", "driver": "gelsd", "UPLO": "L"}

# A tensor factory: tensor(shape, role) with role "data" (the sample's dtype), "index" (int64 zeros)
# or "mask" (bool).
TensorFactory = Callable[[tuple[int, ...], str], object]


class NoSample(Exception):
    """The schema has an argument this module cannot invent a value for."""


@dataclass(frozen=True)
class Sample:
    """One way of filling an op's arguments."""

    shape: tuple[int, ...]
    variant: str                      # one of VARIANTS

    @property
    def flags(self) -> bool:
        return self.variant == "flags"

    @property
    def optionals(self) -> bool:
        return self.variant == "optional"


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


def _equation(shape: tuple[int, ...]) -> str:
    """An einsum contraction for two operands of `shape`: 'xy,yz->xz' with batch letters in front."""
    if len(shape) == 1:
        return "x,x->"
    batch = "abcdefgh"[: len(shape) - 2]
    return f"{batch}xy,{batch}yz->{batch}xz"


class _Filler:
    """Values for one op's arguments under one Sample."""

    def __init__(self, sample: Sample, tensor: TensorFactory, names: frozenset[str] = frozenset()) -> None:
        self.sample = sample
        self.tensor = tensor
        self.names = names               # the op's argument names
        self.dims = 0

    def tensor_for(self, name: str, optional: bool = False):
        shape = self.sample.shape
        if name in SCALAR_NAMES and "self" in self.names and not optional:   # not SDPA's query/key/value
            return self.tensor((), "data")
        if name in VECTOR_NAMES:
            return self.tensor(shape[-1:], "data")
        if name in INDEX_NAMES:
            return self.tensor(shape, "index")
        if name in MASK_NAMES:
            return self.tensor(shape, "mask")
        if name == "target" and self.sample.variant == "int-target":
            return self.tensor(shape[:1], "index")
        if optional and name in CHANNEL_NAMES:
            return self.tensor(shape[1:2] or shape, "data")
        return self.tensor(shape, "data")

    def dim(self) -> int:
        value = self.dims % len(self.sample.shape)
        self.dims += 1
        return value

    def value(self, arg):
        kind = str(arg.type)            # TorchScript spelling: Tensor, List[int], number, Optional[...]
        name = arg.name
        shape = self.sample.shape
        if kind.startswith("Optional["):
            if not self.sample.optionals:
                return None
            inner = kind[len("Optional["):-1]
            if inner == "Tensor":
                return self.tensor_for(name, optional=True)
            if inner in ("number", "int", "float", "bool"):
                return self._plain(inner, name, shape, arg.N or 1)
            return None
        return self._plain(kind, name, shape, arg.N or 1)

    def _plain(self, kind: str, name: str, shape: tuple[int, ...], n: int):
        if kind == "Tensor":
            return self.tensor_for(name)
        if kind == "List[Tensor]":
            return [self.tensor_for(name), self.tensor_for(name)]
        if kind == "List[Optional[Tensor]]":   # Tensor?[] indices of index / index_put: one index tensor
            return [self.tensor_for(name)]
        if kind == "number":
            return 1
        if kind == "List[number]":
            return [1, 1]
        if kind == "int":
            return self.dim() if "dim" in name else 1
        if kind == "List[int]":
            if "dim" in name:
                return [self.dim()]
            if name in ("size", "shape"):
                return list(shape)
            if name == "sizes":                 # unflatten: the sizes of one dim (every dim is 2)
                return [shape[0]]
            if name == "pad":                   # pad / constant_pad_nd: (left, right) of the last dim
                return [1, 1]                   # (not 0: a zero pad is a plain copy)
            if name == "normalized_shape":
                return list(shape[-1:])
            if "split_size" in name:
                return [1] * shape[0]
            if "padding" in name:
                return [0] * n
            return [1] * n   # int[2] kernel_size / stride / dilation: one per spatial dim
        if kind == "float":
            return 0.5
        if kind == "List[float]":
            return [0.5]
        if kind == "bool":
            return self.sample.flags
        if kind == "List[bool]":
            return [True] * n               # bool[3] output_mask: one per gradient
        if kind == "str":
            if name == "equation":
                return _equation(shape)
            if name in STRINGS:
                return STRINGS[name]
        raise NoSample(f"cannot invent a value for {name}: {kind}")


def _has(op, predicate) -> bool:
    return any(predicate(arg) for arg in op._schema.arguments)


def variants(op) -> tuple[str, ...]:
    """The variants that differ for `op`'s schema (no `flags` run for an op without a bool)."""
    out = ["plain"]
    if _has(op, lambda a: "bool" in str(a.type) and not a.has_default_value()):
        out.append("flags")
    if _has(op, lambda a: str(a.type).startswith("Optional[")):
        out.append("optional")
    if _has(op, lambda a: a.name == "target"):
        out.append("int-target")
    return tuple(out)


def build(op, sample: Sample, tensor: TensorFactory) -> tuple[list, dict]:
    """(args, kwargs) for `op` under `sample`; raises NoSample.

    Arguments with a default are left out (the op fills them in), except defaulted bools under
    `flags` and defaulted optional tensors under `optional`; out= arguments get empty tensors.
    """
    filler = _Filler(sample, tensor, frozenset(a.name for a in op._schema.arguments))
    args: list = []
    kwargs: dict = {}
    skipped = False
    for arg in op._schema.arguments:
        is_out = arg.alias_info is not None and arg.alias_info.is_write and arg.kwarg_only
        kind = str(arg.type)
        given_default = ((sample.flags and kind in ("bool", "Optional[bool]"))
                         or (sample.optionals and kind == "Optional[Tensor]"))
        if arg.has_default_value() and not is_out and not given_default:
            skipped = True
            continue
        if is_out:   # empty out=: resized silently
            value = [tensor((0,), "data")] * 2 if kind == "List[Tensor]" else tensor((0,), "data")
        else:
            value = filler.value(arg)
        if arg.kwarg_only or skipped:
            kwargs[arg.name] = value
        else:
            args.append(value)
    return args, kwargs


def candidates(op, tensor: TensorFactory, all_variants: bool = True) -> Iterator[tuple[Sample, list, dict]]:
    """Yield (sample, args, kwargs) to try for `op`: every shape in SHAPES under each variant.

    With all_variants False only `plain` (the cheapest first look).
    """
    names = variants(op) if all_variants else ("plain",)
    for variant in names:
        for shape in SHAPES:
            sample = Sample(shape, variant)
            try:
                args, kwargs = build(op, sample, tensor)
            except NoSample:
                break  # the same argument is missing for every shape of this variant
            yield sample, args, kwargs
