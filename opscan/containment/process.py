"""Running a function in a child process under a time and memory limit, and saying how it ended.

The one containment mechanism of opscan: `opscan trace`, `opscan PATH` and `opscan zoo` all run
model code through `run(func, kwargs, limits)`. It calls `func` ("pkg.module:name") in a child
process started with `limits.start_method` (spawn: a fresh interpreter; forkserver: forks of a
server that preloaded heavy imports, used by the zoo; fork) and returns an `Ended`: how the child
ended (the closed vocabulary HOW: returned, raised, out of memory, timed out, killed by a signal,
exited, not started) with what it returned or why it failed. It never raises for what the child
did, and the parent never imports torch. What the model does cannot take opscan down with it: a
hang is killed at the timeout, a segfault or an abort in native code ends only the child, an
allocation past the limit becomes a MemoryError (or a kill) in the child.

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
import importlib
import multiprocessing
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from opscan import containment, errors
from opscan.containment import Held, Policy
from opscan.errors import UsageError

DEFAULT_TIMEOUT = 900.0  # seconds; a 70B-shape fake trace takes ~25 s here
START_METHODS = ("spawn", "forkserver", "fork")

# How a child ended (a closed vocabulary; Ended.how is one of these).
HOW: dict[str, str] = {
    "returned": "the function returned; Ended.value is its result",
    "raised": "the function raised an exception (Ended.error, Ended.error_types, Ended.where)",
    "out-of-memory": "an allocation failed under the memory limit",
    "timeout": "no result within the time limit; the child was killed",
    "signal": "the child died of a signal (segfault, abort, the OOM killer's SIGKILL)",
    "exited": "the child exited without a result (sys.exit, os._exit)",
    "not-started": "the child process could not be started",
    "not-contained": "--require-containment: a part of the containment could not be had; nothing ran",
}


@dataclass(frozen=True)
class Limits:
    """What the child may use: wall seconds (None = no limit), bytes of address space (None = no
    limit of opscan's own), how the child process is started, and its containment
    (opscan/containment/policy.py PARTS: environment, network, files, processes)."""

    timeout: float | None = DEFAULT_TIMEOUT
    max_memory: int | None = None
    start_method: str = "spawn"
    containment: Policy = Policy()


@dataclass(frozen=True)
class Ended:
    """How one contained call ended (see HOW)."""

    how: str
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


def default_max_memory() -> int | None:
    """Three quarters of physical memory (so a runaway model fails before the machine swaps), or None."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4)
    except (ValueError, OSError, AttributeError):
        return None


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
        preload: Sequence[str] = ()) -> Ended:
    """Call `func` ("module:name") with `kwargs` in a child process and say how it ended.

    `preload`: modules a forkserver imports once for all its children (ignored by other start
    methods). A KeyboardInterrupt in the parent stops the child and propagates.
    """
    if limits.start_method not in START_METHODS:
        raise UsageError(f"start method {limits.start_method!r}: expected one of {', '.join(START_METHODS)}")
    ctx = multiprocessing.get_context(limits.start_method)
    if limits.start_method == "forkserver" and preload:
        ctx.set_forkserver_preload(list(preload))
    max_memory, clamped = effective_memory(limits.max_memory)
    log_path = None
    if capture_output:
        fd, log_path = tempfile.mkstemp(prefix="opscan-child-", suffix=".log")
        os.close(fd)
    policy = limits.containment
    scratch = containment.prepare_scratch() if policy.enabled else None
    receiver, sender = ctx.Pipe(duplex=False)
    start = time.monotonic()
    child = None
    try:
        child = ctx.Process(target=_child_main, args=(sender, func, kwargs, max_memory, log_path, policy, scratch),
                            name=f"opscan: {func}", daemon=True)
        try:
            with _allow_children():
                child.start()
        except OSError as exc:
            sender.close()
            return Ended("not-started", error=f"could not start the child process: {exc}",
                         max_memory=max_memory, clamped=clamped)
        sender.close()
        try:
            message, timed_out = _wait(child, receiver, limits.timeout)
        except KeyboardInterrupt:
            _stop(child)
            raise
        elapsed = time.monotonic() - start
        common = {"max_memory": max_memory, "clamped": clamped}
        if message is None:
            if timed_out:
                _stop(child)
                return Ended("timeout", seconds=round(elapsed, 3), output=_log_tail(log_path), **common)
            _end_group(child, policy)
            child.join(5)
            return _death(child.exitcode, elapsed, _log_tail(log_path), common)
        _end_group(child, policy)
        child.join(5)
        fields, seconds, held = message
        output = _log_tail(log_path) if fields["how"] != "returned" else ""
        return Ended(seconds=round(seconds, 3), output=output, containment=held, **fields, **common)
    finally:
        if child is not None and child.is_alive():
            _stop(child)
        if child is not None:
            _end_group(child, policy)
        receiver.close()
        if scratch:
            containment.remove_scratch(scratch)
        if log_path:
            with contextlib.suppress(OSError):
                os.unlink(log_path)


def check_containment(limits: Limits) -> Held:
    """Which parts of the containment a child gets here (a child that runs no project code);
    ContainmentError when the policy requires it and a part does not hold (exit 2, before any
    project code runs)."""
    ended = run("opscan.containment.supervisor:held_here", {}, replace(limits, timeout=60,
                containment=replace(limits.containment, require=False)))
    held = ended.containment or containment.not_contained(f"the child {ended.how}: {ended.error or ended.exitcode}")
    if limits.containment.require and not held.all:
        raise errors.ContainmentError(f"--require-containment: {held.line()}")
    return held


def _wait(child, receiver, timeout: float | None) -> tuple[Any, bool]:
    """(the child's one message or None, whether the timeout passed first)."""
    from multiprocessing.connection import wait

    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready = wait([receiver, child.sentinel], remaining)
        if receiver in ready:
            try:
                return receiver.recv(), False
            except (EOFError, OSError):
                return None, False
        if child.sentinel in ready:
            # The child may have sent its result just before exiting.
            if receiver.poll(0):
                continue
            return None, False
        if not ready:
            return None, True


def _end_group(child, policy: Policy) -> None:
    """Kill what is left of the child's process group (the child leads one: containment.enter);
    with the PID namespace its processes die with it anyway (NOTE [processes left behind])."""
    # NOTE [processes left behind]
    # A contained child is pid 1 of its own PID namespace: when it ends, the kernel kills every
    # process in that namespace, so a daemon it forked cannot outlive it. Where there is no PID
    # namespace, the child still leads its own session and process group, which is killed here;
    # only a process that made its own session escapes that (the report says processes: not held).
    if not policy.enabled or not child.pid or not hasattr(os, "killpg"):
        return
    with contextlib.suppress(OSError):
        os.killpg(child.pid, signal.SIGKILL)


def _stop(child) -> None:
    child.terminate()
    child.join(3)
    if child.is_alive():
        child.kill()
        child.join(3)


def _death(exitcode: int | None, elapsed: float, output: str, common: dict) -> Ended:
    """The Ended of a child that ended without sending a result."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return Ended("signal", signal=name, exitcode=exitcode, seconds=round(elapsed, 3), output=output, **common)
    return Ended("exited", exitcode=exitcode, seconds=round(elapsed, 3), output=output, **common)


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


@contextlib.contextmanager
def _allow_children():
    """Let a daemonic process (a Dask worker) start children; see NOTE [daemonic workers]."""
    # NOTE [daemonic workers]
    # Dask (and multiprocessing pools) run workers as daemonic processes, which multiprocessing
    # refuses to let start children because it could not clean them up at exit. Our children are
    # always joined or killed before `run` returns, so lifting the flag for the start is safe.
    process = multiprocessing.current_process()
    daemon = process._config.get("daemon")
    if daemon:
        process._config["daemon"] = False
    try:
        yield
    finally:
        if daemon:
            process._config["daemon"] = daemon


# Allocation failures that torch reports as RuntimeError under RLIMIT_AS (it has no exception
# class for a failed CPU allocation, so its message is all there is to go by).
_OOM_TEXT = ("MemoryError", "can't allocate memory", "DefaultCPUAllocator", "std::bad_alloc", "alloc_cpu.cpp")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _one_line(exc: BaseException, limit: int = 2000) -> str:
    """Class and whole message on one line (the reason is often on a later line); only a message
    past `limit` is shortened, and says by how much."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit} more characters)"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _describe(exc: BaseException) -> dict[str, Any]:
    """The Ended fields the child sends for an exception: out of memory, or raised."""
    chain, seen = exc, 0
    while chain is not None and seen < 20:
        if isinstance(chain, MemoryError) or any(t in f"{type(chain).__name__}: {chain}" for t in _OOM_TEXT):
            text = _first_line(chain)
            return {"how": "out-of-memory", "error": f"{type(chain).__name__}{': ' + text[:300] if text else ''}"}
        chain, seen = chain.__cause__ or chain.__context__, seen + 1
    frames = traceback.extract_tb(exc.__traceback__)
    fields: dict[str, Any] = {
        "how": "raised", "error": _one_line(exc),
        "error_types": tuple(cls.__name__ for cls in type(exc).__mro__ if cls is not object),
        "where": f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?",
    }
    if isinstance(exc, errors.OpscanError):
        fields["opscan_error"] = (type(exc).__name__, exc.message, exc.path, exc.line)
    return fields


def _child_main(sender, func: str, kwargs: dict[str, Any], max_memory: int | None, log_path: str | None,
                policy: Policy = Policy(enabled=False), scratch: str | None = None) -> None:
    """Entry point of the child: limit, redirect output, contain, call, send one message."""
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    else:
        os.dup2(2, 1)  # model prints go to stderr; stdout stays the parent's report
        sys.stdout = sys.stderr
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing model leaves no core file behind
    if max_memory is not None:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or max_memory < soft:
            resource.setrlimit(resource.RLIMIT_AS, (max_memory, hard))   # the hard limit stays as it was
    first_pid = os.getpid()
    held = containment.enter(policy, scratch) if policy.enabled and scratch else None
    if held is not None and policy.require and not held.all:
        sender.send(({"how": "not-contained", "error": held.line()}, 0.0, held))
        sender.close()
        return
    start = time.perf_counter()
    try:
        module_name, _, name = func.partition(":")
        target = importlib.import_module(module_name)
        for part in name.split("."):
            target = getattr(target, part)
        fields: dict[str, Any] = {"how": "returned", "value": target(**kwargs)}
    except BaseException as exc:  # noqa: BLE001 - everything the model raises is reported, not raised
        fields = _describe(exc)
    try:
        sender.send((fields, time.perf_counter() - start, held))
    except MemoryError:
        sender.send(({"how": "out-of-memory", "error": "MemoryError while sending the result"}, 0.0, held))
    except Exception as exc:  # noqa: BLE001 - an unpicklable result
        sender.send(({"how": "raised", "error": f"could not send the result back: {type(exc).__name__}: {exc}",
                      "error_types": (type(exc).__name__,), "where": func}, 0.0, held))
    finally:
        sender.close()
    if os.getpid() != first_pid:
        # the worker forked by containment.enter (NOTE [three processes]): end here, without running
        # the multiprocessing exit handlers a second time (the waiter ends with this status)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
