"""The model the project's training command built, kept as data for the model path when the command
stops before its first optimizer step (NOTE [the model the command built]
A training command that stops before its step (its data's content, a format no stand-in reads, a
library of another year) has often built its model already: the script parsed its options, read its
config and called `Model(opts)` or `Net(num_classes=10, depth=18)`, then stopped in its data loader.
The model path that follows used to search the repository for a model and fill the constructor's
arguments by guessing, and on research code it often built a part (an encoder) or nothing (a class
that needs the script's options object). So while the command runs with stand-ins (`opscan PATH`;
`opscan run` records nothing), the first `nn.Module` of each class of the project's own files is
noted with the arguments its `__init__` was called with (read from that frame at its
`super().__init__()`), as data: None, booleans, numbers and strings; lists, tuples and dicts of
them; an options object (`argparse.Namespace`, a `SimpleNamespace`, a plain object holding such
values: rebuilt as a Namespace; a dict with attribute access such as EasyDict or a yacs CfgNode:
rebuilt as a dict with attribute access) as its values; a device (read back as the host: the model
path places the model itself) and a dtype. An argument of any other kind (a module built before, a
tensor, a function) is left out, and the model path fills it as it fills any. When the run ends,
the model is the instance, among those noted, that no other noted instance holds as a submodule and
that has the most parameters (the first built, on a tie). Only its file, its class name and the
arguments as JSON text cross back to the parent: no object of the run does, and the parent takes
them only as a file of the project, a class name and text of bounded size (entry_step.py
`_well_formed`: the child ran the project's code). The model path then
tries that class first, built with those arguments (opscan/targets/built_arguments.py,
`given_arguments`), and its note says so.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import math
import os
import sys
import types

import torch
from torch import nn

DEPTH = 4          # nesting of containers and options objects kept
ITEMS = 256        # elements of one container kept (a longer one is left out)
TEXT = 65_536      # characters of the arguments' JSON kept (longer: no arguments, the class only)
_PRIMITIVES = (bool, int, float, str, type(None))


class BuiltModels:
    """Notes the project's module classes as they are constructed (see the NOTE above)."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root) + os.sep if root else ""
        self._own: dict[type, str] = {}        # class -> its file relative to the root ("" when not the project's)
        # (file, class, arguments JSON, instance): held until the run ends (the script's globals are gone by then)
        self._noted: list[tuple[str, str, str, nn.Module]] = []
        self._seen: set[type] = set()
        self._given: dict[int, list[int]] = {}   # instance -> the modules it was given (a trainer's wrapper)

    def _file_of(self, cls: type) -> str:
        if cls not in self._own:
            module = sys.modules.get(cls.__module__)
            where = getattr(module, "__file__", None) or ""
            full = os.path.realpath(where) if where else ""
            own = bool(self.root) and full.startswith(self.root) and "site-packages" not in full \
                and cls.__qualname__ == cls.__name__
            self._own[cls] = full[len(self.root):].replace(os.sep, "/") if own else ""
        return self._own[cls]

    def note(self, cls: type, instance: nn.Module, arguments: dict | None) -> None:
        if cls in self._seen:
            return
        self._seen.add(cls)
        rel = self._file_of(cls)
        if not rel:
            return
        text = _arguments(arguments) if arguments is not None else ""
        self._noted.append((rel, cls.__name__, text, instance))
        given = [id(v) for v in (arguments or {}).values() if isinstance(v, nn.Module)]
        if given:
            self._given[id(instance)] = given

    def model(self) -> tuple[str, str, str]:
        """(file, class, arguments JSON) of the model the command built, or () when none was noted."""
        noted, self._noted = self._noted, []
        held = {id(sub) for _, _, _, module in noted for sub in _submodules(module)}
        roots = [(rel, name, text, module) for rel, name, text, module in noted if id(module) not in held]
        if not roots:
            return ()
        best = _largest(roots)
        own = {id(module) for _, _, _, module in noted}
        if best is not None and own.intersection(self._given.get(id(best[3]), ())):   # NOTE [a wrapper given the model]
            inner = {id(sub) for sub in _submodules(best[3])}
            best = _largest([entry for entry in noted if id(entry[3]) in inner]) or best
        if best is None or _parameters(best[3]) == 0:
            return ()
        return best[0], best[1], best[2]

    @contextlib.contextmanager
    def watching(self):
        """nn.Module construction noted inside: `nn.Module.__init__` wrapped, the arguments read from
        the frame of the outermost `__init__` of the instance being built (the class's own)."""
        notes = self
        original = nn.Module.__init__

        def init(module, *args, **kwargs):
            original(module, *args, **kwargs)
            if type(module) in notes._seen:
                return
            try:
                notes.note(type(module), module, _constructor_arguments(module, sys._getframe(1)))
            except Exception:  # noqa: BLE001 - noting is an enrichment: never the run's failure
                notes._seen.add(type(module))

        from opscan.trace.fakes import patched

        with patched(nn.Module, "__init__", init):
            yield self


def _constructor_arguments(module: nn.Module, frame) -> dict | None:
    """The arguments the outermost `__init__` running for `module` was called with (its frame's
    parameters as they are at its `super().__init__()`), or None when no such frame is found."""
    outer = None
    while frame is not None and frame.f_code.co_name == "__init__" and frame.f_locals.get(
            frame.f_code.co_varnames[0] if frame.f_code.co_argcount else "") is module:
        outer = frame
        frame = frame.f_back
    if outer is None:
        return None
    code, local = outer.f_code, outer.f_locals
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[1:count])
    out = {name: local[name] for name in names if name in local}
    flags = code.co_flags
    extra = count + (1 if flags & inspect.CO_VARARGS else 0)
    if flags & inspect.CO_VARKEYWORDS and code.co_varnames[extra] in local:
        out.update(dict(local[code.co_varnames[extra]]))
    return out


# NOTE [a wrapper given the model]
# A trainer's module is often a wrapper the script hands the model it built: Lightning's
# `Experiment(model, params)` holding `VanillaVAE(in_channels=3, latent_dim=128)`. The wrapper is the
# outermost module, but the model path cannot build it (its `model` argument is a module, not data)
# nor feed it (its forward is the model's, its step a trainer's). When the outermost noted module
# was given a module of the project noted before it (not a library's layer such as `act=nn.ReLU()`),
# the largest noted module inside it is the model instead, with its own arguments.


def _largest(entries: list) -> tuple | None:
    """The entry whose module has the most parameters (the first, on a tie), or None."""
    if not entries:
        return None
    return max(enumerate(entries), key=lambda pair: (_parameters(pair[1][3]), -pair[0]))[1]


def _submodules(module: nn.Module):
    try:
        return [m for m in module.modules() if m is not module]
    except Exception:  # noqa: BLE001 - a half-built module
        return []


def _parameters(module: nn.Module) -> int:
    try:
        return sum(p.numel() for p in module.parameters())
    except Exception:  # noqa: BLE001 - a half-built module
        return 0


def _arguments(arguments: dict) -> str:
    """The constructor's arguments by name, as tagged JSON; an argument that is not data is left out."""
    out: dict[str, object] = {}
    for name, value in arguments.items():
        encoded = _encode(value, 0)
        if encoded is not _NOT_DATA:
            out[name] = encoded
    try:
        text = json.dumps(out, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return ""
    return text if len(text) <= TEXT else ""


_NOT_DATA = object()


def _encode(value, depth: int):
    if isinstance(value, _PRIMITIVES):
        if isinstance(value, float) and not math.isfinite(value):
            return {"~": "float", "v": repr(value)}
        return value
    if depth >= DEPTH:
        return _NOT_DATA
    if isinstance(value, torch.device):
        return {"~": "device"}
    if isinstance(value, torch.dtype):
        return {"~": "dtype", "v": str(value).removeprefix("torch.")}
    if isinstance(value, (list, tuple)):
        if len(value) > ITEMS:
            return _NOT_DATA
        items = [_encode(v, depth + 1) for v in value]
        if any(i is _NOT_DATA for i in items):
            return _NOT_DATA
        return {"~": "tuple", "v": items} if isinstance(value, tuple) else items
    if isinstance(value, dict):
        mapped = _mapping(value.items(), depth)
        if mapped is _NOT_DATA:
            return _NOT_DATA
        plain = type(value) is dict
        return {"~": "dict", "v": mapped} if plain else {"~": "attrs", "v": mapped}
    if isinstance(value, (argparse.Namespace, types.SimpleNamespace)) or _plain_object(value):
        mapped = _mapping(vars(value).items(), depth)
        return {"~": "namespace", "v": mapped} if mapped is not _NOT_DATA else _NOT_DATA
    return _NOT_DATA


def _plain_object(value) -> bool:
    """An instance of a plain class of the project (a config holder), not a module, tensor or function."""
    return hasattr(value, "__dict__") and not isinstance(value, (nn.Module, torch.Tensor, type)) \
        and not callable(value) and type(value).__module__ not in ("builtins",)


def _mapping(items, depth: int):
    out: dict[str, object] = {}
    for count, (key, item) in enumerate(items):
        if count >= ITEMS or not isinstance(key, str):
            return _NOT_DATA
        if key.startswith("__"):
            continue
        encoded = _encode(item, depth + 1)
        if encoded is not _NOT_DATA:   # an attribute that is not data is left out, the rest kept
            out[key] = encoded
    return out
