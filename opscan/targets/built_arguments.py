"""The arguments a run of the project's training command built its model with, given to the model
path's construction of that class (NOTE [the model the command built] in
opscan/trace/run/built_models.py): set around a trace by the loader (`given_arguments`), read by
opscan/targets/construct.py (`built_arguments`). Child side.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
from pathlib import Path

import torch

from opscan.targets.script_calls import WORDS

_BUILT: dict[tuple[str, str], str] = {}   # (file, class) -> the arguments the training command built it with


@contextlib.contextmanager
def given_arguments(built_with: tuple[str, ...]):
    """Inside: the class `built_with` names ((file, class, arguments JSON), the run's record) is built
    with those arguments (NOTE [the model the command built] in opscan/trace/run/built_models.py)."""
    if len(built_with) != 3:
        yield
        return
    _BUILT[(built_with[0], built_with[1])] = built_with[2]
    try:
        yield
    finally:
        _BUILT.pop((built_with[0], built_with[1]), None)


def built_arguments(fn, root: Path | None, accepted: list) -> tuple[dict, str] | None:
    """(kwargs, words) of the class `fn` as the training command built it (given_arguments), else None."""
    if not _BUILT or not inspect.isclass(fn) or root is None:
        return None
    try:
        rel = Path(inspect.getsourcefile(fn) or "").resolve().relative_to(Path(root).resolve()).as_posix()
    except (TypeError, ValueError, OSError):
        return None
    text = _BUILT.get((rel, fn.__name__))
    if text is None:
        return None
    accepts = dict(accepted)
    anything = any(p.kind == p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
    kwargs = {k: v for k, v in decode(text).items() if k in accepts or anything}
    shown = ", ".join(sorted(kwargs)) or "no arguments"
    return kwargs, f"{fn.__name__}({shown}): arguments {WORDS}, read from the run of its training command"


class AttrDict(dict):
    """A dict whose keys are also attributes: an options object as the model path rebuilds it."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value) -> None:
        self[name] = value


def decode(text: str) -> dict:
    """The arguments of opscan/trace/run/built_models.py's JSON, rebuilt (options objects as Namespace
    or AttrDict, devices the host)."""
    if not text:
        return {}
    return {k: _decode(v) for k, v in json.loads(text).items()}


def _decode(value):
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    kind, inner = value.get("~"), value.get("v")
    if kind == "tuple":
        return tuple(_decode(v) for v in inner)
    if kind == "dict":
        return {k: _decode(v) for k, v in inner.items()}
    if kind == "attrs":
        return AttrDict({k: _decode(v) for k, v in inner.items()})
    if kind == "namespace":
        return argparse.Namespace(**{k: _decode(v) for k, v in inner.items()})
    if kind == "device":
        return torch.device("cpu")
    if kind == "dtype":
        return getattr(torch, inner, torch.float32)
    if kind == "float":
        return float(inner)
    return value
