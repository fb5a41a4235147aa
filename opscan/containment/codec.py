"""Data, never objects, between opscan and its contained child: a typed JSON codec.

What the child sends back is decoded by the type the parent declares for it, and by nothing the
data says about itself (NOTE [data only on the way back]): `loads(data, ModelTrace)` builds a
ModelTrace, its OpUsages, OpSources, ... from the declared field types of those frozen dataclasses,
and anything else (an unknown key, a wrong type, a missing field, a value a record's vocabulary
refuses, nesting deeper than MAX_DEPTH, text that is not JSON) is an `InvalidData` naming the place.
`Any` in a declared type takes plain JSON data only (dicts with string keys, lists, strings,
numbers, booleans, null).

The other way (the parent's request to the child) the parent is trusted and the values are its own,
so they carry their types: `encode_tagged` / `decode_tagged` keep tuples, paths, dicts with other
keys, enums and the dataclasses of opscan's own modules (nothing outside `opscan.` is ever rebuilt).

Stdlib only.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import json
import pathlib
import types
import typing
from typing import Any

# NOTE [data only on the way back]
# The child runs a hostile repository's code, which can write anything to the pipe it answers on
# (it can find the pipe in /proc/self/fd). Pickle (what multiprocessing's Connection.recv uses)
# lets the bytes name any callable to call while loading: `__reduce__` returning `(exec, (...,))`
# ran code in opscan itself. JSON names no callable, and decoding by the parent's declared type
# builds only the records that type reaches: there is nothing for the data to choose.

MAX_DEPTH = 48        # nesting of a decoded value (a ModelTrace is about 8 deep)


class InvalidData(ValueError):
    """Data that does not decode as its declared type; the message names the place and the cause."""


# --- encoding (both ways) -----------------------------------------------------------------------------

def encode(value: Any) -> Any:
    """`value` as plain JSON data: a dataclass as the dict of its fields, tuples and lists as lists,
    enums as their values, paths as strings. TypeError for anything else (a torch object, a class)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, enum.Enum):
        return encode(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, pathlib.PurePath):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: encode(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError(f"a dict whose keys are not all strings cannot be sent: {_kind(value)}")
        return {str(key): encode(item) for key, item in value.items()}
    raise TypeError(f"{_kind(value)} cannot be sent as data")


def dumps(value: Any) -> bytes:
    """`encode(value)` as JSON bytes (ASCII: file names with undecodable bytes survive as escapes)."""
    return json.dumps(encode(value), separators=(",", ":")).encode("ascii")


# --- decoding by declared type (the child's answers) ------------------------------------------------------

def loads(data: bytes, kind: Any) -> Any:
    """Decode JSON `data` as `kind` (InvalidData for anything else)."""
    try:
        raw = json.loads(data)
    except RecursionError:
        raise InvalidData("nested too deeply to read") from None
    except MemoryError:
        raise InvalidData("too large to read into memory") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidData(f"not JSON: {str(exc)[:200]}") from None
    return decode(raw, kind)


def decode(raw: Any, kind: Any, where: str = "value", depth: int = 0) -> Any:
    """`raw` (parsed JSON) as the declared type `kind`; InvalidData names `where` it did not fit."""
    if depth > MAX_DEPTH:
        raise InvalidData(f"{where}: nested more than {MAX_DEPTH} deep")
    if kind is Any or kind is object:
        _plain(raw, where, depth)
        return raw
    if kind is None or kind is type(None):
        return _expect(raw is None, raw, where, "null")
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Union or origin is types.UnionType:
        return _union(raw, args, where, depth)
    if origin is typing.Literal:
        return _expect(any(raw == a and type(raw) is type(a) for a in args), raw, where, f"one of {list(args)}")
    if kind in (tuple, list, dict, set, frozenset):
        origin, args = kind, ()
    if origin in (tuple, list, set, frozenset):
        if not isinstance(raw, list):
            raise InvalidData(f"{where}: expected a list, got {_kind(raw)}")
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(raw) != len(args):
                raise InvalidData(f"{where}: expected {len(args)} items, got {len(raw)}")
            return tuple(decode(item, a, f"{where}[{i}]", depth + 1) for i, (item, a) in enumerate(zip(raw, args)))
        item_kind = args[0] if args else Any
        return origin(decode(item, item_kind, f"{where}[{i}]", depth + 1) for i, item in enumerate(raw))
    if origin is dict:
        if not isinstance(raw, dict):
            raise InvalidData(f"{where}: expected an object, got {_kind(raw)}")
        key_kind, value_kind = args if args else (str, Any)
        if key_kind is not str:
            raise TypeError(f"{where}: only string keys can be declared, not {key_kind}")
        return {key: decode(value, value_kind, f"{where}[{key!r}]", depth + 1) for key, value in raw.items()}
    if isinstance(kind, type):
        return _scalar_or_record(raw, kind, where, depth)
    raise TypeError(f"{where}: cannot decode the declared type {kind!r}")


def _scalar_or_record(raw: Any, kind: type, where: str, depth: int) -> Any:
    if issubclass(kind, enum.Enum):
        if not isinstance(raw, (str, int)) or isinstance(raw, bool):
            raise InvalidData(f"{where}: expected a {kind.__name__}, got {_kind(raw)}")
        try:
            return kind(raw)
        except ValueError:
            raise InvalidData(f"{where}: {str(raw)[:80]!r} is not a {kind.__name__}") from None
    if kind is bool:
        return _expect(isinstance(raw, bool), raw, where, "a boolean")
    if kind is int:
        return _expect(isinstance(raw, int) and not isinstance(raw, bool), raw, where, "an integer")
    if kind is float:
        _expect(isinstance(raw, (int, float)) and not isinstance(raw, bool), raw, where, "a number")
        return float(raw)
    if kind is str:
        return _expect(isinstance(raw, str), raw, where, "a string")
    if issubclass(kind, pathlib.PurePath):
        return kind(_expect(isinstance(raw, str), raw, where, "a path"))
    if dataclasses.is_dataclass(kind):
        return _record(raw, kind, where, depth)
    raise TypeError(f"{where}: cannot decode the declared type {kind.__name__}")


def _record(raw: Any, kind: type, where: str, depth: int) -> Any:
    if not isinstance(raw, dict):
        raise InvalidData(f"{where}: expected a {kind.__name__} (an object), got {_kind(raw)}")
    hints, required = _fields(kind)
    unknown = sorted(set(raw) - set(hints))
    if unknown:
        raise InvalidData(f"{where}: {kind.__name__} has no field {str(unknown[0])[:80]!r}")
    missing = [name for name in required if name not in raw]
    if missing:
        raise InvalidData(f"{where}: {kind.__name__} lacks its field {missing[0]!r}")
    values = {name: decode(value, hints[name], f"{where}.{name}", depth + 1) for name, value in raw.items()}
    try:
        return kind(**values)
    except (TypeError, ValueError) as exc:   # a record's own checks (__post_init__: its vocabularies)
        raise InvalidData(f"{where}: not a valid {kind.__name__}: {str(exc)[:200]}") from None


@functools.lru_cache(maxsize=None)
def _fields(kind: type) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(the declared type of each field set at construction, the fields without a default)."""
    hints = typing.get_type_hints(kind)
    fields = [f for f in dataclasses.fields(kind) if f.init]
    required = tuple(f.name for f in fields
                     if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
    return {f.name: hints[f.name] for f in fields}, required


def _union(raw: Any, args: tuple, where: str, depth: int) -> Any:
    if raw is None and type(None) in args:
        return None
    problems = []
    for option in args:
        if option is type(None):
            continue
        try:
            return decode(raw, option, where, depth)
        except InvalidData as exc:
            problems.append(str(exc))
    raise InvalidData(problems[0] if len(problems) == 1 else f"{where}: fits none of its types ({_kind(raw)})")


def _plain(raw: Any, where: str, depth: int) -> None:
    """Plain JSON data no deeper than MAX_DEPTH (what `Any` takes)."""
    stack = [(raw, depth)]
    while stack:
        value, level = stack.pop()
        if level > MAX_DEPTH:
            raise InvalidData(f"{where}: nested more than {MAX_DEPTH} deep")
        if isinstance(value, dict):
            stack.extend((item, level + 1) for item in value.values())
        elif isinstance(value, list):
            stack.extend((item, level + 1) for item in value)
        elif not (value is None or isinstance(value, (str, int, float, bool))):
            raise InvalidData(f"{where}: not JSON data: {_kind(value)}")


def _expect(ok: bool, raw: Any, where: str, what: str) -> Any:
    if not ok:
        raise InvalidData(f"{where}: expected {what}, got {_kind(raw)}")
    return raw


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return f"a string ({value[:40]!r})" if len(value) <= 40 else "a string"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return f"a number ({value!r})" if len(repr(value)) <= 40 else "a number"
    return {dict: "an object", list: "a list"}.get(type(value), type(value).__name__)


# --- the parent's request: values that carry their types --------------------------------------------------

def encode_tagged(value: Any) -> Any:
    """`value` as JSON in which every object is a tag naming its kind (`$`): tuple, list, dict,
    path, enum or record (a dataclass of an opscan module)."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, enum.Enum):
        return {"$": "enum", "type": _name(type(value)), "v": encode_tagged(value.value)}
    if isinstance(value, pathlib.PurePath):
        return {"$": "path", "v": str(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"$": "record", "type": _name(type(value)),
                "v": {f.name: encode_tagged(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}}
    if isinstance(value, (tuple, list, set, frozenset)):
        kind = "tuple" if isinstance(value, tuple) else "list" if isinstance(value, list) else "set"
        return {"$": kind, "v": [encode_tagged(item) for item in value]}
    if isinstance(value, dict):
        return {"$": "dict", "v": [[encode_tagged(k), encode_tagged(v)] for k, v in value.items()]}
    if isinstance(value, (bool, int, float, str)):   # subclasses (not enums): their plain value
        return encode(value)
    raise TypeError(f"{_kind(value)} cannot be sent to the child")


def decode_tagged(raw: Any) -> Any:
    """The value `encode_tagged` gave (records and enums only of opscan's own modules)."""
    if not isinstance(raw, dict):
        if isinstance(raw, list):
            raise InvalidData("an untagged list in a request")
        return raw
    tag, value = raw.get("$"), raw.get("v")
    if tag in ("tuple", "list", "set"):
        items = [decode_tagged(item) for item in value]
        return tuple(items) if tag == "tuple" else items if tag == "list" else set(items)
    if tag == "dict":
        return {decode_tagged(k): decode_tagged(v) for k, v in value}
    if tag == "path":
        return pathlib.Path(value)
    if tag == "enum":
        return _own_class(raw.get("type"), enum.Enum)(decode_tagged(value))
    if tag == "record":
        return _own_class(raw.get("type"))(**{name: decode_tagged(v) for name, v in value.items()})
    raise InvalidData(f"unknown tag {tag!r} in a request")


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _own_class(name: Any, base: type | None = None) -> Any:
    module, _, qualname = str(name).partition(":")
    if not module.startswith("opscan."):
        raise InvalidData(f"{name!r}: only opscan's own records are sent")
    cls: Any = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    if not (isinstance(cls, type) and (issubclass(cls, base) if base else dataclasses.is_dataclass(cls))):
        raise InvalidData(f"{name!r} is not a record")
    return cls
