"""`--input NAME:DTYPE[SHAPE]` specs: parsing and validation (no torch needed)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from opscan.errors import UsageError

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
