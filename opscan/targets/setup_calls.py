"""The repository's setup calls, made before its model's forward (contained child side).

`prepare(model, args, kwargs, usage)` calls the setup methods the repository calls on an instance
before calling it (opscan/targets/call_sites.py: NOTE [setup calls]), their arguments filled by
name (batch sizes -> the inputs' batch, sequence lengths -> their length, `dtype` -> the model's,
other sizes as constructor arguments are), and adds the inputs the repository's own call passes
that the forward would otherwise miss (`model(x, input_pos)`: positions). Used by
opscan/targets/repository.py only when the forward fails without them.
"""

from __future__ import annotations

import inspect
import re

import torch
from torch import nn

from opscan.errors import TargetError
from opscan.targets.construct import parameters
from opscan.targets.empty import build_empty, first_line
from opscan.targets.recipes import named_value
from opscan.targets.repo_inputs import named_input

_BATCH = re.compile(r"^(max_)?(batch_size|batch|bsz|bs|max_batch|n_batch)$")
_LENGTH = re.compile(r"(seq|len|length|ctx|context|tokens)", re.IGNORECASE)


def prepare(model: nn.Module, args: tuple, kwargs: dict, usage) -> tuple[tuple, dict, str]:
    """(args, kwargs, words): the setups made on `model` and the call's extra inputs (module docstring)."""
    main = next((a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)
    if main is None:
        raise TargetError("the model's setup call needs a tensor input to size it from")
    b, t = main.shape[0], main.shape[1] if main.dim() >= 2 else main.shape[0]
    words = []
    before = _tensor_attributes(model)
    for setup in usage.setups:
        method = getattr(model, setup.method, None)
        if not callable(method):
            continue
        values = _setup_arguments(method, setup, b, t, model)
        try:
            build_empty(lambda method=method, values=values: method(**values))
        except Exception as exc:  # noqa: BLE001 - user code: one line
            raise TargetError(f"{setup.method}() as {setup.where} calls it failed: {type(exc).__name__}: "
                              f"{first_line(exc)}") from None
        shown = ", ".join(f"{k}={v}" for k, v in values.items() if not isinstance(v, torch.Tensor))
        words.append(f"setup call .{setup.method}({shown}) from {setup.where}")
    adopted = _adopt(model, before)
    extra = dict(kwargs)
    call = usage.call
    forward = parameters(model.forward)
    if call is not None:
        for index, (name, param) in enumerate(forward):
            if index < len(args) or name in extra:
                continue
            said = call.args[index] if index < len(call.args) else (name if name in call.keywords else "")
            if not said:
                continue
            value = named_input(name, main, model, None, None, dict(usage.kinds), param.annotation)
            if value is None and said != name:
                value = named_input(said, main, model, None, None, dict(usage.kinds), param.annotation)
            if value is not None:
                extra[name] = value
        added = [k for k in extra if k not in kwargs]
        if added:
            words.append(f"{', '.join(added)} passed as {call.where} passes {'them' if len(added) > 1 else 'it'}")
    if adopted:
        words.append(f"tensors it set kept as buffers ({', '.join(adopted[:3])}{', ...' if len(adopted) > 3 else ''})")
    return args, extra, "; ".join(words)


def _setup_arguments(method, setup, b: int, t: int, model: nn.Module) -> dict:
    """Values by name for the arguments the repository passes (by keyword, or the first N) and the
    required ones; TargetError naming one that cannot be chosen."""
    params = parameters(method)
    passed = set(setup.keywords) | {n for n, _ in params[:setup.positional]}
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    values = {}
    for name, param in params:
        if name not in passed and param.default is not inspect.Parameter.empty:
            continue
        if _BATCH.match(name):
            values[name] = b
        elif name == "dtype":
            values[name] = dtype
        elif name == "device":
            values[name] = torch.device("cpu")
        elif _LENGTH.search(name):
            values[name] = t
        elif named_value(name) is not None:
            values[name] = named_value(name)
        elif param.default is not inspect.Parameter.empty:
            continue
        else:
            raise TargetError(f"cannot choose a value for {setup.method}'s argument {name!r} ({setup.where})")
    return values


def _tensor_attributes(model: nn.Module) -> dict:
    return {(id(m), k): id(v) for m in model.modules() for k, v in vars(m).items() if isinstance(v, torch.Tensor)}


def _adopt(model: nn.Module, before: dict) -> list[str]:
    """Tensors the setup left on modules as plain attributes (`self.freqs_cis = ...`) become
    non-persistent buffers, so the trace moves them to the imitated device as it moves buffers
    (NOTE [setup tensors as buffers]); their names."""
    names = {id(m): n for n, m in model.named_modules()}
    out = []
    for module in model.modules():
        for key, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter) \
                    and before.get((id(module), key)) != id(value):
                delattr(module, key)
                module.register_buffer(key, value, persistent=False)
                out.append(f"{names[id(module)]}.{key}".lstrip("."))
    return out


# NOTE [setup tensors as buffers]
# A setup call builds its tensors on the CPU (`self.freqs_cis = precompute_freqs_cis(...)`,
# `self.causal_mask = torch.tril(...)`) and keeps some as plain attributes, not buffers. The trace
# moves parameters and buffers to the imitated device as fake tensors; a plain attribute would stay
# a CPU tensor, and the forward would mix devices (`neuron:0 and cpu`). So each tensor attribute
# the setup set is registered as a non-persistent buffer (no state_dict change; assigning the name
# later still works): the trace moves it like the model's own buffers.
