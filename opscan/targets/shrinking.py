"""Whether a `repo:` build may shrink the model it builds, and what it shrank (child side).

construct.py cuts layer counts of configs to 2 and repeated blocks of built models to 2 (the ops do
not depend on depth); each cut is noted here. When the shrunk model fails to build or its step
stops, the loader builds and traces it once more with shrinking off (NOTE [retry unshrunk] in
opscan/targets/loader.py).
"""

from __future__ import annotations

import contextlib

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
