"""Where an op came from: the first frame in the user's code, as a path relative to the project."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

import torch

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_OPSCAN_TRACE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# Frames never shown as a source: opscan's own and PyTorch's dispatch machinery.
_INTERNAL = (_OPSCAN_TRACE_DIR, "<") + tuple(
    os.path.join(_TORCH_DIR, part)
    for part in ("_ops.py", "_tensor.py", "_compile.py", "_dynamo", "_subclasses", "utils",
                 "_decomp", "_refs", "_prims", "_meta_registrations.py", "autograd", "overrides.py",
                 "amp", "_library", "library.py")
)
_STDLIB_DIRS = tuple(
    os.path.abspath(p) + os.sep
    for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
)


# NOTE [sites the user can change]
# An op's source is the first frame in "user" code, which includes the libraries a model runs on
# (transformers' modeling file, its tokenizer's pad): the line that dispatched it. A port task's site
# must be a line the user can change: so when that frame is a library's, the source also names the
# project's line that reached it (`OpSource.site_path/site_line`): the first frame inside the project
# (not a site-packages folder in it), or, for the ops a DataLoader's collate function dispatches while
# the loop fetches a batch, the call that configures it: the `collate_fn=` of the DataLoader call
# (or, when that is a name, the line that assigned it), found where the script built the loader
# (opscan/trace/run/configured.py). Tasks point at that line and give the library's as the cause
# (`Location.cause`); an op no frame of the project reached (an `hf:` model traced by opscan) keeps
# its library line.
class SourceFinder:
    """Finds the first user frame on the stack and names it relative to the project (cached)."""

    def __init__(self, project_root: str | os.PathLike | None) -> None:
        root = Path(project_root) if project_root is not None else Path.cwd()
        self.root = str(root.resolve()) + os.sep
        self._site = sorted(
            (os.path.abspath(p) + os.sep for p in sys.path if p and os.path.isdir(p)),
            key=len, reverse=True,
        )
        self._is_user: dict[str, bool] = {}
        self._is_project: dict[str, bool] = {}
        self.stop_code = None  # the code object of the frame that runs the step: callers are not the model
        self._names: dict[str, str] = {}
        self.configured: tuple[str, int] | None = None   # the call configuring the library running now
                                                         # (NOTE [sites the user can change]): (path, line)

    def is_user(self, filename: str) -> bool:
        """True for a frame in the user's (or the model library's) code."""
        known = self._is_user.get(filename)
        if known is None:
            path = os.path.abspath(filename)
            known = not (
                filename.startswith("<")
                or path.startswith(_TORCH_DIR)
                or path.startswith(_OPSCAN_TRACE_DIR)
                or (path.startswith(_STDLIB_DIRS) and "site-packages" not in path)
            )
            self._is_user[filename] = known
        return known

    def is_project(self, filename: str) -> bool:
        """True for a file of the project (under its root, not in a site-packages folder in it)."""
        known = self._is_project.get(filename)
        if known is None:
            path = os.path.abspath(filename)
            known = self.is_user(filename) and path.startswith(self.root) and not any(
                part in ("site-packages", "dist-packages") for part in Path(path[len(self.root):]).parts)
            self._is_project[filename] = known
        return known

    def site_frame(self, depth: int = 2) -> tuple[str, int] | None:
        """(name, line) of the line the user can change for the op being dispatched, when its first user
        frame is a library's (NOTE [sites the user can change]); None when that frame is the project's
        or no frame of the project is on the stack."""
        frame = sys._getframe(depth)
        stop = self.stop_code
        first = True
        while frame is not None and frame.f_code is not stop:
            filename = frame.f_code.co_filename
            if self.is_user(filename):
                if self.is_project(filename):
                    return None if first else (self.name(filename), frame.f_lineno)
                if first and self.configured is not None:
                    return self.configured
                first = False
            frame = frame.f_back
        return None

    def name(self, filename: str) -> str:
        """The path shown for `filename`: relative to the project, else to its sys.path entry."""
        known = self._names.get(filename)
        if known is None:
            path = os.path.abspath(filename)
            # An installed package is named from its site dir (`transformers/...`), even when the
            # environment lives inside the project (a `.venv` in the checkout, as in CI).
            site = next((p for p in self._site if path.startswith(p)
                         and p.rstrip(os.sep).endswith(("site-packages", "dist-packages"))), None)
            if site is not None and len(site) > len(self.root):
                known = path[len(site):]
            elif path.startswith(self.root):
                known = path[len(self.root):]
            else:
                known = path
                for prefix in self._site:
                    if path.startswith(prefix) and not self.root.startswith(prefix):
                        known = path[len(prefix):]
                        break
            known = known.replace(os.sep, "/")
            self._names[filename] = known
        return known

    def user_frame(self, depth: int = 2):
        """(filename, line) of the innermost user frame, else of the innermost non-opscan frame."""
        frame = sys._getframe(depth)
        fallback = None
        stop = self.stop_code
        while frame is not None and frame.f_code is not stop:
            filename = frame.f_code.co_filename
            if self.is_user(filename):
                return filename, frame.f_lineno
            if fallback is None and not filename.startswith(_INTERNAL):
                fallback = (filename, frame.f_lineno)
            frame = frame.f_back
        return fallback
