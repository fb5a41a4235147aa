"""Running a function in a contained child under a time and memory limit, and saying how it ended.

The one containment mechanism of opscan: `opscan trace`, `opscan PATH`, `opscan run`, `opscan zoo`
and `opscan db probe` all run project code through `run(func, kwargs, limits, returns=TYPE)`. It
calls `func` ("pkg.module:name") in a child started with `limits.start_method` (spawn: a fresh
isolated interpreter; forkserver: forks of opscan's own fork server, which preloaded heavy imports,
used by the zoo; fork: a fork of opscan; children.py), which contains itself before anything of the
project runs (child.py), and returns an `Ended`: how the child ended (the closed vocabulary HOW:
returned, raised, out of memory, timed out, killed by a signal, exited, not started, invalid) with
what it returned, decoded as TYPE and nothing else (codec.py), or why it failed. It never raises for
what the child did, and the parent never imports torch. What the model does cannot take opscan down
with it: a hang is killed at the timeout, a segfault or an abort in native code ends only the
child, an allocation past the limit becomes a MemoryError (or a kill) in the child, and what it
writes on opscan's result pipe is at most an invalid answer.

The memory limit (RLIMIT_AS of the child) is clamped to an address-space limit the process
already has (a container's or `ulimit -v`): the child's limit is never set above it, and the hard
limit is never changed, so a lower existing limit stays in force (`Ended.clamped`).

This module knows nothing of traces: what an `Ended` means for a model's trace (one vocabulary
for `opscan PATH`, `opscan trace` and the zoo) is opscan/containment/outcome.py; the --timeout and
--max-memory flags are parsed in opscan/commands/flags.py. By default the child's stdout goes to
stderr, so a model that prints cannot corrupt `--format json` on stdout; `capture_output=True`
(the zoo) keeps it in a log whose last lines come back in `Ended.output`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from opscan import containment, errors
from opscan.containment import Held, Policy, children, codec
from opscan.containment.child import HEADER, Answer, Request
from opscan.containment.interpreter import NEUTRAL_FOLDER
# Limits, its DEFAULT_TIMEOUT and default_max_memory live in policy.py (a run that starts no child,
# `opscan scan`, builds its default Limits without importing this module) and are re-exported here
from opscan.containment.policy import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT, Limits, carried_environment
from opscan.containment.policy import default_max_memory as default_max_memory
from opscan.errors import UsageError

START_METHODS = ("spawn", "forkserver", "fork")
ERROR_LIMIT, MRO_LIMIT = 4000, 32   # characters of an answer's error and place; class names of its exception
ANSWER_LIMIT = 64 << 20    # bytes of one answer frame (an 80-layer Llama's trace: 0.2 MB; containment_bench.py --codec)

class How(StrEnum):
    """How a child ended (Ended.how; NOTE [typed vocabularies] in opscan/records/vocabulary.py)."""

    RETURNED = "returned"
    RAISED = "raised"
    OUT_OF_MEMORY = "out-of-memory"
    TIMEOUT = "timeout"
    SIGNAL = "signal"
    EXITED = "exited"
    NOT_STARTED = "not-started"
    NOT_CONTAINED = "not-contained"
    INVALID = "invalid"

    @property
    def description(self) -> str:
        return _HOW[self]


_HOW: dict[str, str] = {
    "returned": "the function returned; Ended.value is its result",
    "raised": "the function raised an exception (Ended.error, Ended.error_types, Ended.where)",
    "out-of-memory": "an allocation failed under the memory limit",
    "timeout": "no result within the time limit; the child was killed",
    "signal": "the child died of a signal (segfault, abort, the OOM killer's SIGKILL)",
    "exited": "the child exited without a result (sys.exit, os._exit)",
    "not-started": "the child process could not be started",
    "not-contained": "--require-containment: a part of the containment could not be had; nothing ran",
    "invalid": "the child sent something that is not a valid answer (not JSON, too large, the wrong types); "
               "none of it was used (Ended.error says why)",
}
HOW: dict[str, str] = {k.value: k.description for k in How}


@dataclass(frozen=True)
class Ended:
    """How one contained call ended (see HOW)."""

    how: How
    value: Any = None                     # "returned": what the function returned
    error: str = ""                       # "raised" / "out-of-memory": "Type: first line of the message"
    error_types: tuple[str, ...] = ()     # "raised": the exception's class names, its own first, then bases
    opscan_error: tuple | None = None     # "raised" an OpscanError: (class name, message, path, line)
    where: str = ""                       # "raised": file:line of the innermost frame
    signal: str = ""                      # "signal": e.g. "SIGSEGV"
    exitcode: int | None = None
    seconds: float = 0.0                  # inside the child when it answered, else wall time to its end
    output: str = ""                      # capture_output: the last lines the child printed
    max_memory: int | None = None         # the address-space limit in force in the child (bytes)
    clamped: bool = False                 # max_memory is an existing limit below the one asked for
    containment: Held | None = None       # which parts of the containment held (None: not contained)

    def __post_init__(self) -> None:   # NOTE [typed vocabularies] in opscan/records/vocabulary.py
        object.__setattr__(self, "how", How(self.how))


def effective_memory(requested: int | None) -> tuple[int | None, bool]:
    """(the address-space limit the child will have, whether an existing limit lowered `requested`).

    An existing RLIMIT_AS of this process (a container's, `ulimit -v`) is inherited by the child
    and cannot be raised; the child's limit is the lower of the two.
    """
    try:
        import resource
    except ImportError:  # not a POSIX system: no limits at all
        return None, False
    existing = [v for v in resource.getrlimit(resource.RLIMIT_AS) if v != resource.RLIM_INFINITY]
    current = min(existing) if existing else None
    if current is None:
        return requested, False
    if requested is None or requested <= current:
        return (requested if requested is not None else current), False
    return current, True


def format_size(size: int | None) -> str:
    """Bytes -> '8G' / '512M' (as --max-memory takes it)."""
    if size is None:
        return "none"
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.4g}{unit}"
    return str(size)


def run(func: str, kwargs: dict[str, Any], limits: Limits, *, capture_output: bool = False,
        preload: Sequence[str] = (), returns: Any = Any) -> Ended:
    """Call `func` ("module:name") with `kwargs` in a contained child and say how it ended.

    `returns`: the declared type of what `func` returns (ModelTrace, `tuple[ModelTrace, tuple[str, ...]]`,
    ...): the answer is decoded as that type and nothing else (NOTE [data only on the way back] in
    codec.py); `Any` takes plain JSON data. `preload`: modules a fork server imports once for all its
    children (ignored by other start methods). A KeyboardInterrupt in the parent stops the child and
    propagates.
    """
    if limits.start_method not in START_METHODS:
        raise UsageError(f"start method {limits.start_method!r}: expected one of {', '.join(START_METHODS)}")
    max_memory, clamped = effective_memory(limits.max_memory)
    common: dict[str, Any] = {"max_memory": max_memory, "clamped": clamped}
    policy = limits.containment
    log_path, out = None, 2
    if capture_output:
        out, log_path = tempfile.mkstemp(prefix="opscan-child-", suffix=".log")
    scratch = containment.prepare_scratch() if policy.enabled else None
    request = codec.dumps(Request(func, codec.encode_tagged(kwargs), max_memory, policy, scratch, _cwd(), _path()))
    env = carried_environment(os.environ, policy) if policy.enabled else dict(os.environ)
    request_r, request_w = os.pipe()
    result_r, result_w = os.pipe()
    start = time.monotonic()
    child = None
    try:
        try:
            child = children.start(limits.start_method, request_r, result_w, out, env, preload)
        except OSError as exc:
            return Ended(How.NOT_STARTED, error=f"could not start the child process: {exc}", **common)
        finally:
            for fd in (request_r, result_w, *((out,) if log_path else ())):
                os.close(fd)
        _send(request_w, request)
        request_w = -1
        try:
            frames, state = _collect(child, result_r, limits.timeout)
        except KeyboardInterrupt:
            children.stop(child)
            raise
        return _ended(child, policy, frames, state, time.monotonic() - start, returns, log_path, common)
    finally:
        if request_w >= 0:
            os.close(request_w)
        os.close(result_r)
        if child is not None:
            children.stop(child)
            if policy.enabled:
                children.end_group(child)
            children.close(child)
        if scratch:
            containment.remove_scratch(scratch)
        if log_path:
            with contextlib.suppress(OSError):
                os.unlink(log_path)


def _ended(child: children.Child, policy: Policy, frames: list[bytes], state: str, elapsed: float, returns: Any,
           log_path: str | None, common: dict[str, Any]) -> Ended:
    """The Ended of a child from what it sent and how the wait ended (`_collect`)."""
    held = None
    try:
        held = codec.loads(frames[0], Held | None) if frames else None
        answer = codec.loads(frames[1], Answer) if len(frames) > 1 else None
        value = codec.decode(answer.value, returns) if answer is not None and answer.how == How.RETURNED else None
    except codec.InvalidData as exc:
        state = f"the child sent invalid data: {exc}"
    if state == "timeout":
        children.stop(child)
        return Ended(How.TIMEOUT, seconds=round(elapsed, 3), output=_log_tail(log_path), containment=held, **common)
    if state not in ("answered", "ended"):
        children.stop(child)
        return Ended(How.INVALID, error=state, seconds=round(elapsed, 3), output=_log_tail(log_path),
                     containment=held, **common)
    if policy.enabled:
        children.end_group(child)
    code = children.wait(child, 5)
    if answer is None:
        return _death(code, elapsed, _log_tail(log_path), held, common)
    fields = {f.name: getattr(answer, f.name) for f in dataclasses.fields(Answer) if f.name not in ("value", "seconds")}
    fields["error"], fields["where"] = answer.error[:ERROR_LIMIT], answer.where[:ERROR_LIMIT]   # one line, whoever
    fields["how"] = How(answer.how)
    fields["error_types"] = answer.error_types[:MRO_LIMIT]                                      # wrote the answer
    if answer.opscan_error is not None:
        name, message, path, line = answer.opscan_error
        fields["opscan_error"] = (name[:200], message[:ERROR_LIMIT], path and path[:ERROR_LIMIT], line)
    return Ended(value=value, seconds=round(answer.seconds, 3), containment=held,
                 output=_log_tail(log_path) if answer.how != How.RETURNED else "", **fields, **common)


def _collect(child: children.Child, fd: int, timeout: float | None) -> tuple[list[bytes], str]:
    """The frames the child sent (at most two) and how the wait ended: "answered", "ended" (the child
    ended without both), "timeout", or why what it sent is not frames (too large)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    buffer, frames, open_ = bytearray(), [], True
    os.set_blocking(fd, False)
    while True:
        if open_:
            open_, problem = _read(fd, buffer, frames)
            if problem or len(frames) >= 2:
                return frames, problem or "answered"
        if child.poll() is not None:
            if open_:
                _, problem = _read(fd, buffer, frames)   # what it wrote before it ended
                if problem:
                    return frames, problem
            return frames, "answered" if len(frames) >= 2 else "ended"
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return frames, "timeout"
        waits = ([fd] if open_ else []) + ([child.exit_fd] if child.exit_fd >= 0 else [])
        if child.exit_fd < 0:   # no pidfd: look again soon
            remaining = 0.05 if remaining is None else min(remaining, 0.05)
        select.select(waits, [], [], remaining)


def _read(fd: int, buffer: bytearray, frames: list[bytes]) -> tuple[bool, str]:
    """Read what is there into `buffer`, move whole frames to `frames`: (still open, problem or "")."""
    open_ = True
    while len(frames) < 2:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            break
        if not chunk:
            open_ = False
            break
        buffer += chunk
        while len(buffer) >= HEADER.size and len(frames) < 2:
            (length,) = HEADER.unpack_from(buffer)
            if length > ANSWER_LIMIT:
                return open_, (f"the child sent invalid data: a frame of {format_size(length)}B, over the "
                               f"limit of {format_size(ANSWER_LIMIT)}B")
            if len(buffer) < HEADER.size + length:
                break
            frames.append(bytes(buffer[HEADER.size:HEADER.size + length]))
            del buffer[:HEADER.size + length]
    return open_, ""


def _send(fd: int, data: bytes) -> None:
    """Write the request and close the pipe (a child that ended before reading it is seen by _collect)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass
    finally:
        os.close(fd)


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return NEUTRAL_FOLDER


def _path() -> tuple[str, ...]:
    """This process's sys.path, each entry absolute (the child takes it once contained)."""
    return tuple(dict.fromkeys(os.path.abspath(entry or ".") for entry in sys.path if isinstance(entry, str)))


def check_containment(limits: Limits) -> Held:
    """Which parts of the containment a child gets here (a child that runs no project code);
    ContainmentError when the policy requires it and a part does not hold (exit 2, before any
    project code runs)."""
    ended = run("opscan.containment.supervisor:held_here", {}, replace(limits, timeout=60,
                containment=replace(limits.containment, require=False)), returns=bool)
    held = ended.containment or containment.not_contained(f"the child {ended.how}: {ended.error or ended.exitcode}")
    if limits.containment.require and not held.all:
        raise errors.ContainmentError(f"--require-containment: {held.line()}")
    return held


def _death(exitcode: int | None, elapsed: float, output: str, held: Held | None, common: dict) -> Ended:
    """The Ended of a child that ended without sending a result."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return Ended(How.SIGNAL, signal=name, exitcode=exitcode, seconds=round(elapsed, 3), output=output,
                     containment=held, **common)
    return Ended(How.EXITED, exitcode=exitcode, seconds=round(elapsed, 3), output=output, containment=held, **common)


def _log_tail(path: str | None, lines: int = 2) -> str:
    """The last non-empty lines the child printed (capture_output), joined with ' | '."""
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            tail = [line.strip() for line in handle.read().splitlines() if line.strip()][-lines:]
    except OSError:
        return ""
    return " | ".join(tail)[:300]
