"""An RL environment's rendering in a child with no screen (NOTE [stand-ins for data and weights]).

NOTE [rendering with no screen]
Reinforcement-learning scripts draw their environment while they train: `env.render()` in the
episode loop, or `gym.make(name, render_mode="human")`, whose `reset` and `step` render. The
environments of gym and gymnasium draw with pygame, imported only then: where it is not installed
(gym's `classic_control` extra left out) the call raises `DependencyNotInstalled`, and where it is,
the contained child has no display to open ("No available video device"). Either stopped the run
before its first optimizer step, and drawing changes nothing the step computes. So, while a
command runs with stand-ins, the `render` of an environment class of the library (`type(env.
unwrapped)` of what `gym.make` / `gymnasium.make` returns, defined outside the project: never a
class the project defines)
answers None when it raises one of those (a missing drawing dependency: ImportError,
DependencyNotInstalled; an error of pygame, pyglet or glfw; a message about a display or video
device): nothing is drawn, the child has no screen. Training is unchanged (an environment's
`render` returns a frame or None, and nothing of the step depends on it); any other error of
`render` is raised as it is. The report names it ("stood in for rendering: ...").
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

from opscan.trace.run.stand_ins import Patches, StandIns

_DRAWING = ("pygame", "pyglet", "glfw", "OpenGL")
_SAID = ("display", "video device", "DISPLAY")


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """gym's and gymnasium's `make` patched when the script imports them."""
    return {name: functools.partial(_make, stand_ins=stand_ins, patches=patches, library=name)
            for name in ("gym", "gymnasium")}


def _make(module, stand_ins: StandIns, patches: Patches, library: str) -> None:
    original = getattr(module, "make", None)
    if not callable(original):
        return
    guarded: set[type] = set()

    @functools.wraps(original)
    def make(*args, **kwargs):
        env = original(*args, **kwargs)
        cls = type(getattr(env, "unwrapped", env))
        if cls not in guarded and _library_class(cls, stand_ins.root) and callable(vars(cls).get("render")):
            guarded.add(cls)
            patches.set(cls, "render", _render(vars(cls)["render"], f"{library}: {cls.__name__}.render", stand_ins))
        return env

    patches.set(module, "make", make)


def _library_class(cls: type, root: str) -> bool:
    """Whether `cls` is defined outside the project (a library's environment, as stand_in_hooks.is_library)."""
    import inspect

    try:
        filename = inspect.getsourcefile(cls) or ""
    except TypeError:
        return False
    full = os.path.realpath(filename) if filename else ""
    return bool(full) and bool(root) and not (full == root or full.startswith(root + os.sep))


def _render(original: Callable, subject: str, stand_ins: StandIns) -> Callable:
    @functools.wraps(original)
    def render(self, *args, **kwargs):
        try:
            return original(self, *args, **kwargs)
        except Exception as exc:
            if not headless(exc):
                raise
            stand_ins.record("rendering", subject, f"answered None, nothing drawn: the contained child has no "
                             f"screen ({type(exc).__name__}: {str(exc)[:80]}); training is unchanged "
                             "(NOTE [rendering with no screen])")
            return None
    return render


def headless(exc: BaseException) -> bool:
    """Whether a render's error is a missing drawing library or display (NOTE [rendering with no screen])."""
    if isinstance(exc, ImportError) or type(exc).__name__ == "DependencyNotInstalled":
        return True
    if (type(exc).__module__ or "").split(".")[0] in _DRAWING:
        return True
    return any(word in str(exc) for word in _SAID)
