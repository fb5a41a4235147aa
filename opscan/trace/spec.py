"""What the engine traces: a built model with its example inputs, and `--input NAME:DTYPE[SHAPE]` specs.

No torch is imported here: opscan/targets/ builds a `Built`, opscan/trace/tracer.py traces it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from opscan.errors import UsageError
from opscan.records import Shrink

if TYPE_CHECKING:
    from torch import nn

DTYPES = {
    "float32": "float32", "float": "float32", "fp32": "float32", "f32": "float32",
    "float16": "float16", "half": "float16", "fp16": "float16", "f16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float64": "float64", "double": "float64", "fp64": "float64",
    "int64": "int64", "long": "int64", "i64": "int64",
    "int32": "int32", "int": "int32", "i32": "int32",
    "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool",
}
_SPEC = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*|\d+):(?P<dtype>[A-Za-z0-9]+)\[(?P<shape>[0-9,\s]*)\]$")


@dataclass(frozen=True)
class InputSpec:
    """One example input: a keyword name (or a positional index) with dtype and shape."""

    name: str
    dtype: str            # a torch dtype name, e.g. "int64"
    shape: tuple[int, ...]

    @property
    def position(self) -> int | None:
        return int(self.name) if self.name.isdigit() else None


def parse_input(text: str) -> InputSpec:
    """Parse `input_ids:int64[2,128]` (a scalar is `NAME:DTYPE[]`). Raises UsageError."""
    match = _SPEC.match(text.strip())
    if not match:
        raise UsageError(f"bad --input {text!r}: expected NAME:DTYPE[SHAPE], e.g. input_ids:int64[2,128]")
    dtype = DTYPES.get(match["dtype"].lower())
    if dtype is None:
        raise UsageError(f"bad --input {text!r}: unknown dtype {match['dtype']!r} "
                         f"(known: {', '.join(sorted(set(DTYPES.values())))})")
    dims = [d.strip() for d in match["shape"].split(",") if d.strip()]
    shape = tuple(int(d) for d in dims)
    if any(d <= 0 for d in shape):
        raise UsageError(f"bad --input {text!r}: every dimension must be a positive integer")
    return InputSpec(match["name"], dtype, shape)


@dataclass
class Built:
    """A model with empty weights, its example inputs, and how to get a loss from its output."""

    model: nn.Module
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    labels: object = None          # for a cross-entropy loss on the output (timm targets)
    description: str = ""
    train_only: tuple[str, ...] = ()  # keyword inputs not passed in inference (generated labels)
    values: tuple[str, ...] = ()      # integer keyword inputs traced with their values (image grids)
    shrink: Shrink | None = None      # the traced batch and sequence length, the layer count before
                                      # `--layers` cut it, where the builder knows them (records.Shrink)
    note: str = ""                    # what the builder did beyond building (a setup call it made):
                                      # the trace's `retried` says it (opscan/targets/loader.py)
    resized: Callable[[int], dict] | None = None   # the keyword inputs at another sequence length, where
                                      # the builder makes them (NOTE [sizes by role] in opscan/trace/roles.py)


@dataclass(frozen=True)
class InputPlaceholder:
    """An input given by --input: created directly as a fake tensor by the runner."""

    spec: InputSpec


def placeholder_spec(value) -> InputSpec | None:
    """The InputSpec behind an --input placeholder, else None."""
    return value.spec if isinstance(value, InputPlaceholder) else None
