"""Writes of a run under absolute folders outside the project, redirected into the run's scratch
folder, and the later reads of what was written read back from there.

NOTE [writes outside the project]
Research scripts write their checkpoints, figures and intermediate arrays to an absolute folder of
the author's machine (`os.makedirs('/workspace/weights')`, `torch.save(sd, '/data/ckpt/x.pth')`,
`plt.savefig('/home/USER/out.png')`) and read them back later in the same run. In the contained
child every folder but its scratch is read-only (opscan/containment/), so the run stopped at the
first such write (`OSError: [Errno 30] Read-only file system: '/workspace'`) before its step.
While a command runs with stand-ins (`opscan PATH`; `opscan run` runs where the data is and keeps
them off), a write to an absolute path that lies outside the project, outside the temporary folder
and home (both in the scratch folder), and whose nearest existing folder cannot be written here,
goes to the same path under `<TMPDIR>/opscan-outside/` instead, and a later read, listing or
existence check of that path (or of a folder it made) answers from there. Nothing else changes:
a write that would succeed is made where the script asks, and a read of an absolute path the run
never wrote is left to the data stand-ins (absent data). The child's allow-list is unchanged: the
redirected writes land in its scratch folder, which it could already write. The report names each
redirected folder or file once, with the script line that wrote it (kind `output`).
"""

from __future__ import annotations

import builtins
import os
import tempfile
from collections.abc import Callable

from opscan.trace.run.stand_ins import Patches, StandIns, really_exists

FOLDER = "opscan-outside"   # under the run's temporary folder (the scratch folder in the contained child)


class Outside:
    """Where writes outside the project go, and which of them this run made (NOTE [writes outside the project])."""

    def __init__(self, stand_ins: StandIns, base: str | None = None) -> None:
        self.stand_ins = stand_ins
        self.base = os.path.realpath(base or os.path.join(tempfile.gettempdir(), FOLDER))
        self.kept = tuple(os.path.realpath(p) for p in (tempfile.gettempdir(), os.path.expanduser("~")) if p)
        self.written = False   # nothing is read back from the scratch copy before a first redirect
        stand_ins.kept = (*stand_ins.kept, self.base)   # what was written there is read as it is
        stand_ins.written = self.for_read

    def _absolute(self, path) -> str:
        """`path` as an absolute, normalised str when it is an absolute path outside the project, else ""."""
        try:
            text = os.fspath(path)
        except TypeError:
            return ""
        if not isinstance(text, str) or not os.path.isabs(text) or "\0" in text:
            return ""
        full = os.path.normpath(text)
        root = self.stand_ins.root
        if root and (full == root or full.startswith(root + os.sep)):
            return ""
        if _under(full, (self.base, *self.kept)):
            return ""
        return full

    def mapped(self, full: str) -> str:
        return os.path.join(self.base, full.lstrip(os.sep))

    def for_read(self, path) -> str | None:
        """The scratch copy of `path` when this run wrote it (or a folder holding it), else None."""
        if not self.written:
            return None
        full = self._absolute(path)
        if not full:
            return None
        mapped = self.mapped(full)
        return mapped if really_exists(mapped) else None

    def for_write(self, path) -> str | None:
        """Where a write of `path` goes: its scratch copy when the path is outside the project and
        cannot be written here (or was redirected before), else None (written where asked)."""
        full = self._absolute(path)
        if not full:
            return None
        mapped = self.mapped(full)
        if self.written and (really_exists(mapped) or os.path.dirname(mapped) != self.base
                             and really_exists(os.path.dirname(mapped))):
            return mapped
        if _writable(full):
            return None
        _makedirs(os.path.dirname(mapped))
        self.written = True
        shown = os.path.relpath(mapped, tempfile.gettempdir())
        self.stand_ins.record("output", _top(full), f"written to the run's scratch folder instead "
                              f"(<TMPDIR>/{os.path.dirname(shown)}): the folder is outside the project and "
                              "not writable here; later reads of it read the copy")
        return mapped


def install(stand_ins: StandIns, patches: Patches, base: str | None = None) -> dict[str, Callable]:
    """open, os's folder calls and stat patched now; torch.save/torch.load and numpy's save/load too."""
    outside = Outside(stand_ins, base)
    _patch_open(outside, patches)
    _patch_os(outside, patches)
    _patch_torch(outside, patches)
    return {}


def _patch_open(outside: Outside, patches: Patches) -> None:
    original = builtins.open

    def open_(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, os.PathLike)):
            writing = any(c in str(mode) for c in "wax+")
            moved = outside.for_write(file) if writing else outside.for_read(file)
            if moved is not None:
                return original(moved, mode, *args, **kwargs)
        return original(file, mode, *args, **kwargs)

    patches.set(builtins, "open", open_)


def _patch_os(outside: Outside, patches: Patches) -> None:
    def writer(original: Callable) -> Callable:
        def call(path, *args, **kwargs):
            moved = outside.for_write(path)
            return original(path if moved is None else moved, *args, **kwargs)
        return call

    def reader(original: Callable) -> Callable:
        def call(path=".", *args, **kwargs):
            moved = outside.for_read(path)
            return original(path if moved is None else moved, *args, **kwargs)
        return call

    for name in ("mkdir", "makedirs"):
        patches.set(os, name, writer(getattr(os, name)))
    for name in ("stat", "lstat", "listdir", "scandir", "access"):
        patches.set(os, name, reader(getattr(os, name)))
    for name in ("remove", "unlink", "rmdir"):
        patches.set(os, name, reader(getattr(os, name)))


def _patch_torch(outside: Outside, patches: Patches) -> None:
    import torch

    save, load = torch.save, torch.load

    def save_(obj, f, *args, **kwargs):
        moved = outside.for_write(f) if isinstance(f, (str, os.PathLike)) else None
        return save(obj, f if moved is None else moved, *args, **kwargs)

    def load_(f, *args, **kwargs):
        moved = outside.for_read(f) if isinstance(f, (str, os.PathLike)) else None
        return load(f if moved is None else moved, *args, **kwargs)

    patches.set(torch, "save", save_)
    patches.set(torch, "load", load_)


# --- helpers (the real os calls, never the patched ones) -----------------------------------------

_ACCESS, _MAKEDIRS = os.access, os.makedirs


def _writable(full: str) -> bool:
    """Whether the nearest existing folder of `full` (itself when it exists) can be written here."""
    probe = full
    while not really_exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return _ACCESS(probe, os.W_OK)


def _makedirs(folder: str) -> None:
    _MAKEDIRS(folder, exist_ok=True)


def _top(full: str) -> str:
    """The first folder of an absolute path ("/workspace"), as the report names what was redirected."""
    parts = full.strip(os.sep).split(os.sep)
    return os.sep + parts[0] if parts and parts[0] else full


def _under(path: str, roots) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots if r)
