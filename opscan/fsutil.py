"""File-system safety: atomic writes for every output opscan leaves behind, and guarded reads of scanned files.

An output (baseline, report given with `--output`, cache entry, probed db file) is written to a
temporary file in the same folder, flushed and fsync'ed, then moved over the target with
`os.replace`, so a reader sees the old file or the new one, never half of one; an interrupted
run (exception, Ctrl-C, full disk) removes its temporary file and leaves the old file untouched.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

# Scanned files larger than this are reported, not parsed (a generated data file, not code).
MAX_SOURCE_BYTES = 32 * 1024 * 1024


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", *, encoding: str = "utf-8",
                newline: str | None = "\n") -> Iterator[IO]:
    """Open a temporary file next to `path`; on a clean exit it replaces `path` atomically.

    `mode` is "w" (text) or "wb" (bytes). If the block raises (including KeyboardInterrupt), the
    temporary file is removed and `path` is left as it was. The new file gets the permissions a
    plain `open(path, "w")` would give it (or the old file's, when it exists).
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open: mode must be 'w' or 'wb', not {mode!r}")
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        if mode == "wb":
            handle = os.fdopen(fd, "wb")
        else:
            handle = os.fdopen(fd, "w", encoding=encoding, newline=newline)
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, _mode_for(target))
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(folder)


def atomic_write(path: str | os.PathLike[str], data: str | bytes, *, encoding: str = "utf-8") -> None:
    """Write `data` (text or bytes) to `path` atomically."""
    mode = "wb" if isinstance(data, bytes) else "w"
    with atomic_open(path, mode, encoding=encoding) as handle:
        handle.write(data)


def _mode_for(target: Path) -> int:
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (best effort; not every file system allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class UnreadableFile(OSError):
    """A scanned file that is not read; `strerror` (and `reason`) is one line for a finding."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.strerror = reason
        self.reason = reason


def read_source_bytes(path: Path, root: Path | None = None, limit: int = MAX_SOURCE_BYTES) -> bytes:
    """Read a file that is about to be scanned, refusing what must not be read.

    Refused (UnreadableFile, with a one-line reason): anything that is not a regular file (a
    FIFO would block forever, a device could stream without end), a symlink whose target is
    outside `root` (an untrusted pull request could plant `x.py -> ~/.ssh/id_rsa` and have its
    contents echoed into a public report), a file larger than `limit`, and any OSError (the file
    vanished, lost its permissions, is a dangling link). Opened with O_NONBLOCK so that a file
    swapped for a FIFO between listing and reading cannot hang the run.
    """
    if root is not None and not inside(path, root):
        raise UnreadableFile("it is a symlink to a file outside the scanned tree (not followed)")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UnreadableFile(_os_reason(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("a folder opscan could not list (permission denied?)" if stat.S_ISDIR(info.st_mode)
                                 else "not a regular file (a FIFO, socket or device)")
        if info.st_size > limit:
            raise UnreadableFile(f"{info.st_size / 1e6:.1f} MB, over the {limit / 1e6:.0f} MB limit for "
                                 "source files (generated data?); exclude it with --exclude")
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise UnreadableFile(f"it grew past the {limit / 1e6:.0f} MB limit while being read")
            chunks.append(chunk)
        return b"".join(chunks)
    except UnreadableFile:
        raise
    except OSError as exc:
        raise UnreadableFile(_os_reason(exc)) from None
    finally:
        os.close(fd)


def inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether `path`, symlinks resolved, is `root` or lies under it (False if it cannot be resolved)."""
    try:
        real = os.path.realpath(path, strict=True)
    except (OSError, RuntimeError):
        return True  # vanished or a loop: the read that follows reports it as such
    real_root = os.path.realpath(root)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return "it vanished during the scan, or is a dangling symlink"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == 40:  # ELOOP
        return "symlink loop"
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return text
