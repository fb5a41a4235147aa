"""The shrinking of a `repo:` build (child side): whether it may shrink the model it builds, how, and
what it shrank.

`shrink` cuts layer counts of the configs construct.py fills to 2 and `cut_repeats` the repeated
blocks of built models to 2 (the ops do not depend on depth); each cut is noted here. When the
shrunk model fails to build or its step stops, the loader builds and traces it once more with
shrinking off (NOTE [retry unshrunk] in opscan/targets/loader.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import nn

LAYER_NAMES = {"depth", "n_layer", "n_layers", "num_layers", "nlayers", "num_hidden_layers", "num_blocks",
               "n_blocks", "layers"}

_STATE: dict = {"on": True, "cut": []}


def enabled() -> bool:
    """True unless a build runs under `off()`."""
    return bool(_STATE["on"])


def noted(words: str) -> None:
    """Record one cut (`n_layer 12 -> 2`, `3 repeated blocks cut`)."""
    _STATE["cut"].append(words)


def cuts() -> tuple[str, ...]:
    """The cuts noted since the last `reset()`."""
    return tuple(_STATE["cut"])


def reset() -> None:
    _STATE["cut"] = []


@contextlib.contextmanager
def off():
    """Builds inside keep every size as given (nothing is cut)."""
    saved = _STATE["on"]
    _STATE["on"] = False
    try:
        yield
    finally:
        _STATE["on"] = saved


def set_field(config, key, value):
    if isinstance(config, dict):
        config[key] = value
    else:
        setattr(config, key, value)


def shrink(config):
    """`--layers`-style shrinking: layer counts above 2 become 2 (attributes or dict keys); each cut
    noted (opscan/targets/shrinking.py); nothing is cut under `shrinking.off()`."""
    if not enabled():
        return config
    items = list(config.items()) if isinstance(config, dict) else \
        [(f.name, getattr(config, f.name, None)) for f in dataclasses.fields(config)] \
        if dataclasses.is_dataclass(config) and not isinstance(config, type) \
        else list(getattr(config, "__dict__", {}).items())   # slots dataclasses have no __dict__
    for key, value in items:
        if key in LAYER_NAMES and isinstance(value, list) and len(value) > 2 and len({type(v) for v in value}) == 1:
            try:
                set_field(config, key, value[:2])   # a list of per-layer configs (torchtitan's `layers`)
                noted(f"{key}: {len(value)} -> 2")
            except Exception:  # noqa: BLE001, S110 - a frozen config stays as it is
                pass
        if key in LAYER_NAMES and isinstance(value, int) and not isinstance(value, bool) and value > 2:
            if isinstance(config, dict):
                config[key] = 2
                noted(f"{key} {value} -> 2")
            else:
                try:
                    object.__setattr__(config, key, 2)
                    noted(f"{key} {value} -> 2")
                except Exception:  # noqa: BLE001 - a frozen or validating config stays as it is
                    pass
    return config


def cut_repeats(model: nn.Module, keep: int = 2) -> int:
    """`--layers`-style shrinking of a built model: each ModuleList / ModuleDict of more than `keep`
    blocks of one type is cut to its first `keep` (NOTE [cutting repeated blocks]); how many were cut
    (none under `shrinking.off()`)."""
    from torch import nn

    cut = 0
    if not enabled():
        return cut
    for sub in list(model.modules()):
        for name, child in list(sub.named_children()):
            if isinstance(child, (nn.ModuleList, nn.ModuleDict)) and len(child) > keep \
                    and len({type(m) for m in child.values()} if isinstance(child, nn.ModuleDict)
                            else {type(m) for m in child}) == 1:
                items = list(child.items()) if isinstance(child, nn.ModuleDict) else list(enumerate(child))
                cut += len(items) - keep
                kept = nn.ModuleDict(dict(items[:keep])) if isinstance(child, nn.ModuleDict) \
                    else nn.ModuleList([m for _, m in items[:keep]])
                setattr(sub, name, kept)
                for attr in ("num_layers", "n_layers", "n_layer", "depth"):
                    if isinstance(getattr(sub, attr, None), int) and getattr(sub, attr) > keep:
                        setattr(sub, attr, keep)
    if cut:
        noted(f"{cut} repeated blocks cut")
    return cut


# NOTE [cutting repeated blocks]
# A builder with no arguments (torchtune's `llama3_2_1b()`) builds the full depth (on `meta`, so
# no memory). Its ops do not depend on how many identical blocks it repeats, so, as `--layers`
# does for configs, every ModuleList/ModuleDict holding more than two blocks of one class keeps
# its first two (and a `num_layers`-style count beside it follows). Only a model built with no
# argument filled by opscan is cut: one whose sizes opscan chose is already small, and cutting
# it could break what its constructor derived from the depth (x-transformers' layer order).
