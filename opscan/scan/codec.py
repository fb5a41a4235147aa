"""JSON encoding of frozen dataclass results (per-file scan results) for the cache, checked on the way back.

The cache stores JSON, never pickle: a planted cache file can at worst be ignored, never run code.
`encode` turns a dataclass (fields of str/int/float/bool/None, nested dataclasses, tuples and
lists) into JSON values; `decode(cls, data)` rebuilds it from the field annotations and raises
ValueError on anything that does not fit (an entry from another version is then just a miss).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import lru_cache
from typing import Any


def encode(value: Any) -> Any:
    """A dataclass (or a tuple, list or scalar) as JSON values; field names as keys."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot cache a {type(value).__name__}")


@lru_cache(maxsize=None)
def _hints(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name], f.default is dataclasses.MISSING
                  and f.default_factory is dataclasses.MISSING) for f in dataclasses.fields(cls))


def decode(tp: Any, data: Any) -> Any:
    """Rebuild a value of type `tp` from `encode`'s output; ValueError when it does not fit."""
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise ValueError(f"expected an object for {tp.__name__}")
        kwargs = {}
        for name, hint, required in _hints(tp):
            if name in data:
                kwargs[name] = decode(hint, data[name])
            elif required:
                raise ValueError(f"{tp.__name__}.{name} missing")
        if set(data) - {name for name, _, _ in _hints(tp)}:
            raise ValueError(f"unknown fields for {tp.__name__}")
        return tp(**kwargs)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(tp):
            try:
                return decode(option, data)
            except ValueError:
                continue
        raise ValueError(f"{data!r} fits no option of {tp}")
    if origin in (tuple, list):
        if not isinstance(data, list):
            raise ValueError(f"expected a list for {tp}")
        args = typing.get_args(tp)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(data):
                raise ValueError(f"expected {len(args)} items for {tp}")
            return tuple(decode(a, v) for a, v in zip(args, data))
        inner = args[0] if args else Any
        items = [decode(inner, v) for v in data]
        return tuple(items) if origin is tuple else items
    if tp is Any:
        return data
    if tp is type(None):
        if data is not None:
            raise ValueError("expected null")
        return None
    if tp is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if tp in (str, int, float, bool):
        if type(data) is not tp:
            raise ValueError(f"expected {tp.__name__}, got {type(data).__name__}")
        return data
    raise ValueError(f"cannot decode type {tp!r}")
