"""Running code that executes a user's model (the trace) in a child process with a time and memory limit.

`run_isolated("pkg.module:function", kwargs, limits)` calls the function in a fresh `spawn`ed
interpreter with RLIMIT_AS set to `limits.max_memory` and waits at most `limits.timeout`
seconds. What the model does cannot take opscan down with it: a hang is killed at the timeout, a
segfault or an abort in native code ends only the child, an allocation past the limit becomes a
MemoryError (or a kill) in the child. Each comes back as one TraceError line saying what happened,
the limit, and what to try; an OpscanError raised in the child (a bad target, say) is re-raised
as the same class with the same message. The child's stdout goes to stderr, so a model that
prints cannot corrupt `--format json` on stdout.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import multiprocessing
import os
import re
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any

from opscan import errors
from opscan.errors import ModelProcessError, TraceError, UsageError

DEFAULT_TIMEOUT = 900.0  # seconds; a 70B-shape fake trace takes ~25 s here


@dataclass(frozen=True)
class Limits:
    """What the child may use: wall seconds (None = no limit) and bytes of address space (None = no limit)."""

    timeout: float | None = DEFAULT_TIMEOUT
    max_memory: int | None = None


def default_max_memory() -> int | None:
    """Three quarters of physical memory (so a runaway model fails before the machine swaps), or None."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4)
    except (ValueError, OSError, AttributeError):
        return None


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int | None:
    """'8G', '512M', '1.5GiB', '1000000' (bytes), '0' or 'none' (no limit) -> bytes. Raises UsageError."""
    if text.strip().lower() in ("0", "none", "unlimited"):
        return None
    match = _SIZE.match(text)
    if not match:
        raise UsageError(f"--max-memory: not a size: {text!r} (expected e.g. 8G, 512M, 0 for no limit)")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[match[2].lower()]
    value = int(float(match[1]) * scale)
    if value < 64 << 20:
        raise UsageError(f"--max-memory {text}: too small to start Python and torch (at least 64M)")
    return value


def parse_timeout(text: str) -> float | None:
    """'600', '2.5', '0' (no limit) -> seconds. Raises UsageError."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"--timeout: not a number of seconds: {text!r}") from None
    if value < 0:
        raise UsageError(f"--timeout: must be >= 0 seconds (0 means no limit), not {text}")
    return None if value == 0 else value


def format_size(size: int | None) -> str:
    """Bytes -> '8G' / '512M' (as --max-memory takes it)."""
    if size is None:
        return "none"
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.4g}{unit}"
    return str(size)


TRACE_FUNCTION = "opscan.trace:trace_target"


def add_limit_arguments(parser) -> None:
    """The --timeout / --max-memory / --in-process flags of every command that runs model code."""
    parser.add_argument("--timeout", metavar="SECONDS", default=str(int(DEFAULT_TIMEOUT)),
                        help=f"stop a trace that runs longer (default {int(DEFAULT_TIMEOUT)}; 0: no limit). "
                        "Tracing runs the model's code in a child process")
    parser.add_argument("--max-memory", metavar="SIZE", default=None,
                        help="address-space limit of the trace's child process, e.g. 8G "
                        "(default: 3/4 of physical memory; 0: no limit)")
    parser.add_argument("--in-process", action="store_true",
                        help="trace in this process, without the child process and its limits (debugging)")


def limits_from(args) -> Limits:
    """Limits from parsed --timeout / --max-memory (UsageError for bad values)."""
    timeout = parse_timeout(str(getattr(args, "timeout", DEFAULT_TIMEOUT)))
    raw = getattr(args, "max_memory", None)
    return Limits(timeout=timeout, max_memory=parse_size(raw) if raw is not None else default_max_memory())


_CURRENT: contextvars.ContextVar[tuple[Limits, bool] | None] = contextvars.ContextVar("opscan_trace_limits",
                                                                                     default=None)


@contextlib.contextmanager
def trace_limits(limits: Limits, in_process: bool = False):
    """Within the block, `current_limits()` (used by the traces of `opscan PATH`) is these limits."""
    token = _CURRENT.set((limits, in_process))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_limits() -> tuple[Limits, bool]:
    """(limits, in_process) set by `trace_limits`, else the defaults (isolated)."""
    return _CURRENT.get() or (Limits(max_memory=default_max_memory()), False)


def trace_isolated(options: dict[str, Any], limits: Limits, in_process: bool = False):
    """`opscan.trace.trace_target(**options)` in a child process under `limits` (see module doc)."""
    if in_process:
        from opscan.trace import trace_target

        return trace_target(**options)
    return run_isolated(TRACE_FUNCTION, options, limits, what=f"trace of {options.get('target', '?')}")


def run_isolated(func: str, kwargs: dict[str, Any], limits: Limits, what: str = "the trace") -> Any:
    """Call `func` ("module:name") with `kwargs` in a child process and return its result.

    Raises TraceError (timeout, crash, out of memory, unexpected exception in the child) or the
    OpscanError the child raised. `what` names the work in messages, e.g. "trace of hf:gpt2".
    """
    ctx = multiprocessing.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child_main, args=(sender, func, kwargs, limits.max_memory),
                        name=f"opscan: {what}", daemon=True)
    start = time.monotonic()
    try:
        child.start()
    except OSError as exc:
        raise TraceError(f"{what}: could not start the child process: {exc}") from None
    sender.close()
    try:
        message, timed_out = _wait(child, receiver, limits.timeout)
    except KeyboardInterrupt:
        _stop(child)
        raise
    finally:
        receiver.close()
    elapsed = time.monotonic() - start
    if message is None:
        if timed_out:
            _stop(child)
            raise ModelProcessError(
                f"{what} timed out after {elapsed:.0f} s (limit --timeout {limits.timeout:g}); the model may "
                "hang (a blocking call, an endless loop, a collective waiting for other ranks): "
                "raise --timeout, or trace a smaller shape (--batch, --seq-len)")
        child.join(5)
        raise ModelProcessError(_death_message(what, child.exitcode, limits))
    child.join(5)
    kind = message[0]
    if kind == "ok":
        return message[1]
    if kind == "opscan-error":
        _, cls_name, text, path, line = message
        cls = getattr(errors, cls_name, TraceError)
        raise cls(text, path, line)
    if kind == "memory":
        raise ModelProcessError(f"{what} ran out of memory (limit --max-memory {format_size(limits.max_memory)}): "
                         f"{message[1]}; raise --max-memory, or trace a smaller shape (--batch, --seq-len); "
                         "a fake-tensor trace needs little memory, so real tensors made while building "
                         "the model (weights loaded, torch.randn in __init__) are the usual cause")
    raise TraceError(f"{what} failed inside the model code: {message[1]} (at {message[2]})")


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


def _stop(child) -> None:
    child.terminate()
    child.join(3)
    if child.is_alive():
        child.kill()
        child.join(3)


def _death_message(what: str, exitcode: int | None, limits: Limits) -> str:
    if exitcode is not None and exitcode < 0:
        number = -exitcode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        if number == signal.SIGSEGV:
            return (f"{what} crashed: the model's process died of a segmentation fault ({name}) in native "
                    "code (a C/C++ extension, ctypes, or a torch bug); opscan itself is unharmed: "
                    "check the model's compiled extensions, or run the model once on CPU to reproduce")
        if number == signal.SIGKILL:
            return (f"{what} was killed ({name}), most likely by the system's out-of-memory killer "
                    f"(limit --max-memory {format_size(limits.max_memory)}): lower --max-memory so the "
                    "limit is hit first, or trace a smaller shape (--batch, --seq-len)")
        return (f"{what} crashed: the model's process died of {name}; "
                "run the model once on CPU to reproduce")
    return (f"{what} ended without a result (exit code {exitcode}); the model code may call "
            "sys.exit() or os._exit()")


# Allocation failures that torch reports as RuntimeError under RLIMIT_AS.
_OOM_TEXT = ("MemoryError", "can't allocate memory", "DefaultCPUAllocator", "std::bad_alloc", "alloc_cpu.cpp")


def _classify(exc: BaseException) -> tuple:
    """The message the child sends for an exception: memory, an OpscanError, or anything else."""
    chain, seen = exc, 0
    while chain is not None and seen < 20:
        if isinstance(chain, MemoryError) or any(t in f"{type(chain).__name__}: {chain}" for t in _OOM_TEXT):
            text = str(chain)
            return ("memory", f"{type(chain).__name__}{': ' + text[:200] if text else ''}")
        chain, seen = chain.__cause__ or chain.__context__, seen + 1
    if isinstance(exc, errors.OpscanError):
        return ("opscan-error", type(exc).__name__, exc.message, exc.path, exc.line)
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
    return ("exception", f"{type(exc).__name__}: {exc}", where)


def _child_main(sender, func: str, kwargs: dict[str, Any], max_memory: int | None) -> None:
    """Entry point of the child: limit, redirect stdout, call, send one message."""
    os.dup2(2, 1)  # model prints go to stderr; stdout stays the parent's report
    sys.stdout = sys.stderr
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing model leaves no core file behind
    if max_memory is not None:

        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        soft = max_memory if hard == resource.RLIM_INFINITY else min(max_memory, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    try:
        module_name, _, name = func.partition(":")
        target = importlib.import_module(module_name)
        for part in name.split("."):
            target = getattr(target, part)
        message: tuple = ("ok", target(**kwargs))
    except BaseException as exc:  # noqa: BLE001 - everything the model raises is reported, not raised
        message = _classify(exc)
    try:
        sender.send(message)
    except MemoryError:
        sender.send(("memory", "MemoryError while sending the result"))
    except Exception as exc:  # noqa: BLE001 - an unpicklable result
        sender.send(("exception", f"could not send the result back: {type(exc).__name__}: {exc}", func))
    finally:
        sender.close()
