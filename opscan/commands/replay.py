"""Report replay: a warm `opscan scan` of an unchanged tree gives the last run's bytes without redoing it.

# NOTE [report replay]
A run of `opscan scan` records what it read and what it wrote; the next run with the same
invocation checks the record and, when nothing it read has changed, writes the same bytes and
returns the same exit code, without importing the scanner, the assessment or the reporters. It is
a cache of the command's output, beside the per-file scan cache (NOTE [scan cache]) that a run
which is not replayed still uses: one changed file is a normal warm run.

The record is complete by construction, not by a list of what the scan is thought to read. While
the run lasts, every read of this process is observed:
- file contents: the `open` audit event (PEP 578) of every open for reading, by any code;
- folder listings: the `os.listdir` / `os.scandir` audit events (a file added, removed or renamed
  in a listed folder changes the folder's signature);
- metadata: `os.stat` and `os.lstat` (through which `os.path.exists/isfile/isdir` and pathlib's
  `stat/exists/is_file` go), including the probes of files that were missing (a config file later
  created in a folder above the root is seen), and the stat index's own signature checks;
- the code: every imported module's file (an edited checkout of opscan or an upgraded library).
Each is kept with its signature (size, mtime_ns, inode, ctime_ns: NOTE [stat validation]), or as
missing. The invocation is the key: the parsed arguments, the working folder, the interpreter, the
whole environment (colour and width variables among it), which of stdin/stdout/stderr are
terminals and their size, and the output encodings.

A run is not recorded when what it depended on could escape observation: a child process started
(`os.fork`, `os.posix_spawn`, `subprocess.Popen`, `os.system`, `os.exec*` audit events: a scan pool
reads files in its workers), `--no-cache` (nothing is written), `--environment` (it asks another
interpreter), `--output` (the report goes to a file), a write to the standard streams' binary
buffers, or a run that ends in an exception. Nothing under the cache folder is an input (it is
derived), nor /proc, /sys or /dev.

A record is not replayed when any input's signature differs (or a missing file now exists), when an
input was changed within RACY_NS of the record's writing (the "racy git" rule of NOTE [stat
validation]: a second write in the same clock tick could leave the same signature), or when the
record is unreadable or foreign. What it misses is what the stat index misses (NOTE [stat
validation]), and a read by native code that opens files without Python's audit events (none in
the scan's path: its parsers are given bytes Python read); `--no-cache` never replays.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FORMAT = 1
KEEP = 32                      # records kept per cache folder (the newest; older ones are removed)
RACY_NS = 2_000_000_000        # as the stat index's (opscan/scan/cache.py)
_CHILD_EVENTS = frozenset({"os.fork", "os.forkpty", "os.posix_spawn", "subprocess.Popen", "os.system",
                           "os.exec", "os.spawn", "os.startfile"})
_LIST_EVENTS = frozenset({"os.listdir", "os.scandir"})
_SKIP_PREFIXES = ("/proc/", "/sys/", "/dev/")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

# An input's signature: None (missing), [size, mtime_ns, inode, ctime_ns] (a file, or a listed
# folder: its content), or ["dir", inode] (a folder that was only looked at, not listed: what the
# run learnt is that it is this folder; a file added in it is seen through the path it probes).
Signature = list[Any] | None


def signature(path: str, listed: bool = False) -> Signature:
    """The signature of `path` (symlinks followed) as the run saw it (`listed`: its entries read)."""
    try:
        st = _os_stat(path)
    except (OSError, ValueError):
        return None
    return _of(st, listed)


def _of(st: os.stat_result, listed: bool) -> list[Any]:
    if stat.S_ISDIR(st.st_mode) and not listed:
        return ["dir", st.st_ino]
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


_os_stat = os.stat


def invocation_key(arguments: dict[str, Any]) -> str:
    """The key of an invocation: everything outside the file system its output depends on."""
    from opscan import __version__

    parts: list[Any] = [FORMAT, __version__, sys.executable, sys.version, os.getcwd(),
                        sorted((k, repr(v)) for k, v in arguments.items() if not k.startswith("_")),
                        sorted(os.environ.items())]
    for fd in (0, 1, 2):
        try:
            tty = os.isatty(fd)
            parts.append([tty, tuple(os.get_terminal_size(fd)) if tty else None])
        except OSError:
            parts.append(None)
    parts.append([getattr(stream, "encoding", None) for stream in (sys.stdout, sys.stderr)])
    return hashlib.sha256(json.dumps(parts, default=repr).encode("utf-8", "surrogateescape")).hexdigest()


def record_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / "replay" / f"{key[:40]}.json"


def replay(cache_dir: Path, key: str) -> int | None:
    """Write the recorded output of `key` and return its exit code, if every input is unchanged;
    else None (nothing written)."""
    try:
        data = json.loads(record_path(cache_dir, key).read_bytes())
        if data.get("format") != FORMAT or data.get("key") != key:
            return None
        written, inputs, chunks, code = int(data["written_ns"]), data["inputs"], data["output"], int(data["exit"])
        for path, recorded in inputs:
            now = signature(path, listed=recorded is not None and recorded[0] != "dir")
            if now != recorded:
                return None
            if now is not None and now[0] != "dir" and now[1] >= written - RACY_NS:   # mtime only, as
                return None                                                          # git and the stat index
        output = [(int(stream), str(text)) for stream, text in chunks]
        if any(stream not in (0, 1) for stream, _ in output):
            return None
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return None
    streams = (sys.stdout, sys.stderr)   # a closed pipe raises here, as in a run (the command line's exit)
    for stream, text in output:
        streams[stream].write(text)
    for each in streams:
        each.flush()
    return code


class _Tee:
    """A text stream that writes through to `stream` and keeps what was written (in order, with the
    other stream's, in `chunks`). Everything else is the stream's own (isatty, fileno, encoding)."""

    def __init__(self, stream: Any, number: int, recorder: "Recorder") -> None:
        self._stream, self._number, self._recorder = stream, number, recorder

    def write(self, text: str) -> int:
        self._recorder.chunks.append((self._number, text))
        return int(self._stream.write(text))

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    @property
    def buffer(self) -> Any:   # bytes written past the text layer would not be recorded
        self._recorder.taint("a binary write to a standard stream")
        return self._stream.buffer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class Recorder:
    """Observes one run's reads (NOTE [report replay]); `save` writes the record if it is complete."""

    _active: "Recorder | None" = None
    _hooked = False

    def __init__(self, cache_dir: Path, key: str) -> None:
        self.cache_dir, self.key = cache_dir, key
        self.skip = (str(cache_dir.resolve()) + os.sep, *_SKIP_PREFIXES)
        self.inputs: dict[str, Signature] = {}
        self.chunks: list[tuple[int, str]] = []
        self.tainted: str | None = None
        self._saved: tuple[Any, Any, Callable[..., Any], Callable[..., Any]] | None = None

    def taint(self, reason: str) -> None:
        self.tainted = self.tainted or reason

    def note(self, path: Any, sig: Signature | bool = False, listed: bool = False) -> None:
        """Keep `path` as an input with its signature (`False`: stat it now); a listing's signature
        replaces a look's (NOTE [report replay])."""
        if isinstance(path, int):
            return
        try:
            text = os.fsdecode(path)
        except (TypeError, ValueError):
            return
        full = os.path.abspath(text)
        if full in self.inputs:
            known = self.inputs[full]
            if not (listed and known is not None and known[0] == "dir"):
                return
        if full.startswith(self.skip) or full + os.sep == self.skip[0]:
            return
        self.inputs[full] = signature(full, listed) if sig is False or sig is True else sig

    # -- observation ------------------------------------------------------------------------------
    @classmethod
    def _audit(cls, event: str, args: tuple[Any, ...]) -> None:
        recorder = cls._active
        if recorder is None:
            return
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            if path is None or (isinstance(mode, str) and any(c in mode for c in "wax+")):
                return
            if isinstance(flags, int) and flags & _WRITE_FLAGS:
                return
            recorder.note(path)
        elif event in _LIST_EVENTS:
            recorder.note(args[0] if args and args[0] is not None else ".", listed=True)
        elif event in _CHILD_EVENTS:
            recorder.taint(f"a child process ({event})")

    def _stat(self, real: Callable[..., Any], follows: bool) -> Callable[..., Any]:
        """`os.stat` / `os.lstat` that note the path: with the stat's own answer when it followed
        symlinks (the signature replay compares), else with a stat of its own."""
        def observed(path: Any, *args: Any, **kwargs: Any) -> Any:
            plain = not args and kwargs.get("dir_fd") is None
            try:
                st = real(path, *args, **kwargs)
            except OSError:
                if plain:
                    self.note(path, None)
                raise
            if plain:
                same = follows and kwargs.get("follow_symlinks", True)
                self.note(path, _of(st, False) if same else False)
            return st
        return observed

    def __enter__(self) -> "Recorder":
        if not Recorder._hooked:
            sys.addaudithook(Recorder._audit)
            Recorder._hooked = True
        self._saved = (sys.stdout, sys.stderr, os.stat, os.lstat)
        sys.stdout, sys.stderr = _Tee(sys.stdout, 0, self), _Tee(sys.stderr, 1, self)
        os.stat, os.lstat = self._stat(os.stat, True), self._stat(os.lstat, False)
        Recorder._active = self
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        Recorder._active = None
        assert self._saved is not None
        sys.stdout, sys.stderr, os.stat, os.lstat = self._saved
        if kind is not None:
            self.taint("the run ended in an exception")

    # -- the record -------------------------------------------------------------------------------
    def save(self, code: int) -> bool:
        """Write the record of a finished run (False when it is not complete or cannot be written)."""
        if self.tainted is not None:
            return False
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str):
                self.note(path)
        body = {"format": FORMAT, "key": self.key, "written_ns": time.time_ns(), "exit": int(code),
                "inputs": sorted([path, sig] for path, sig in self.inputs.items()),
                "output": self.chunks}
        target = record_path(self.cache_dir, self.key)
        try:
            from opscan.fsutil import atomic_write

            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, json.dumps(body, separators=(",", ":")))
            _prune(target.parent)
        except (OSError, ValueError):
            return False
        return True


def _prune(folder: Path) -> None:
    """Keep the KEEP newest records."""
    records = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in records[KEEP:]:
        try:
            old.unlink()
        except OSError:
            pass
