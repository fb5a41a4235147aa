"""Runs one trace in its own process, with a timeout and a memory cap; every outcome is an Outcome."""

from __future__ import annotations

import importlib
import multiprocessing
import os
import re
import signal
import tempfile
import time
import traceback
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opscan.model import ModelTrace

# Outcome statuses (a closed vocabulary; rows carry them).
OUTCOMES: dict[str, str] = {
    "ok": "traced completely",
    "partial": "traced, but the trace stopped early (see the row's error)",
    "build-error": "the model could not be built (config, import or constructor error)",
    "trace-error": "the model was built but the trace raised",
    "timeout": "the trace did not finish within the time limit and was killed",
    "crash": "the trace process died (segfault, abort, killed)",
    "out-of-memory": "the trace process hit the memory cap",
}

DEFAULT_TRACER = "opscan.zoo.tracing:trace_model"
# Messages of allocation failures that torch reports as RuntimeError (under the RLIMIT_AS cap).
OOM_MARKERS = ("can't allocate memory", "DefaultCPUAllocator", "std::bad_alloc", "alloc_cpu.cpp")
PRELOAD = ["opscan.zoo.tracing", "torch", "transformers", "transformers.modeling_utils", "opscan.trace.runner"]


@dataclass(frozen=True)
class Job:
    """What one isolated child needs: the tracer target and the tracer's keyword options."""

    name: str
    target: str
    options: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Outcome:
    """How one isolated trace ended."""

    name: str
    status: str                    # one of OUTCOMES
    trace: ModelTrace | None = None
    error: str = ""
    seconds: float = 0.0           # build + trace time inside the child (wall time to the kill if it died)


def tracer_spec(tracer: str | Callable) -> str:
    """`module:qualname` for a tracer callable (so it can cross process and machine borders)."""
    if isinstance(tracer, str):
        return tracer
    return f"{tracer.__module__}:{tracer.__qualname__}"


def load_tracer(spec: str) -> Callable[..., ModelTrace]:
    """Import a tracer from `module:qualname`."""
    module_name, _, qualname = spec.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _child(job: Job, spec: str, mem_bytes: int, log_path: str, conn) -> None:
    """Body of the child process: cap memory, silence output, trace, send the result."""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if mem_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    start = time.perf_counter()
    try:
        from opscan.errors import TargetError

        trace = load_tracer(spec)(job.target, **dict(job.options))
        status = "ok" if trace.complete else "partial"
        conn.send(("done", status, trace, trace.stopped_at if not trace.complete else "",
                   time.perf_counter() - start))
    except MemoryError:
        conn.send(("done", "out-of-memory", None, f"MemoryError (memory cap {mem_bytes / 2**30:.1f} GiB)",
                   time.perf_counter() - start))
    except BaseException as exc:  # noqa: BLE001 - every failure becomes the row's error
        kind = "build-error" if _is_build_error(exc, TargetError) else "trace-error"
        if any(marker in str(exc) for marker in OOM_MARKERS):
            kind = "out-of-memory"
        where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        at = f" (at {os.path.basename(where[0].filename)}:{where[0].lineno})" if where else ""
        cap = _oom_note(str(exc), mem_bytes) if kind == "out-of-memory" else ""
        conn.send(("done", kind, None, f"{type(exc).__name__}: {_first_line(exc)}"[:400] + at + cap,
                   time.perf_counter() - start))
    finally:
        conn.close()


def _oom_note(message: str, mem_bytes: int) -> str:
    """" [asked for 28.0 GiB at once; cap 8 GiB]": how big the failed allocation was, and the cap."""
    match = re.search(r"tried to allocate (\d+) bytes", message)
    asked = f"asked for {int(match[1]) / 2**30:.1f} GiB at once; " if match else ""
    cap = f"cap {mem_bytes / 2**30:g} GiB" if mem_bytes else "no cap"
    return f" [{asked}{cap}]"


def _is_build_error(exc: BaseException, target_error: type) -> bool:
    return isinstance(exc, (target_error, ImportError))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _log_tail(path: str, lines: int = 2) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            tail = [line.strip() for line in handle.read().splitlines() if line.strip()][-lines:]
    except OSError:
        return ""
    return " | ".join(tail)[:300]


@contextmanager
def _allow_children():
    """Let a daemonic process (a Dask worker) start children; see NOTE [daemonic workers]."""
    # NOTE [daemonic workers]
    # Dask (and multiprocessing pools) run workers as daemonic processes, which multiprocessing
    # refuses to let start children because it could not clean them up at exit. Our children are
    # always joined or killed before this function returns, so lifting the flag for the start is safe.
    process = multiprocessing.current_process()
    daemon = process._config.get("daemon")
    if daemon:
        process._config["daemon"] = False
    try:
        yield
    finally:
        if daemon:
            process._config["daemon"] = daemon


def context(start_method: str = "forkserver"):
    """The multiprocessing context children start from; forkserver preloads torch and transformers."""
    ctx = multiprocessing.get_context(start_method)
    if start_method == "forkserver":
        ctx.set_forkserver_preload(PRELOAD)
    return ctx


def run_isolated(job: Job, tracer: str | Callable = DEFAULT_TRACER, timeout: float = 300.0,
                 mem_gib: float = 8.0, start_method: str = "forkserver") -> Outcome:
    """Trace `job` in a fresh child process; a hang, crash or error is an Outcome, never an exception."""
    ctx = context(start_method)
    spec = tracer_spec(tracer)
    recv, send = ctx.Pipe(duplex=False)
    fd, log_path = tempfile.mkstemp(prefix="opscan-zoo-", suffix=".log")
    os.close(fd)
    start = time.perf_counter()
    mem_bytes = int(mem_gib * 2**30) if mem_gib else 0
    with _allow_children():
        process = ctx.Process(target=_child, args=(job, spec, mem_bytes, log_path, send), daemon=True)
        process.start()
    send.close()
    try:
        message = None
        if recv.poll(timeout):
            try:
                message = recv.recv()
            except (EOFError, OSError):
                message = None
        elapsed = time.perf_counter() - start
        if message is not None:
            process.join(10)
            _, status, trace, error, child_seconds = message
            return Outcome(job.name, status, trace, error, round(child_seconds, 3))
        if process.is_alive() and elapsed >= timeout:
            return Outcome(job.name, "timeout", None, f"no result after {timeout:g} s; killed", round(elapsed, 3))
        process.join(10)
        return Outcome(job.name, *_death(process.exitcode, log_path, mem_gib), seconds=round(elapsed, 3))
    finally:
        if process.is_alive():
            process.kill()
            process.join(10)
        recv.close()
        try:
            os.unlink(log_path)
        except OSError:
            pass


def _death(exitcode: int | None, log_path: str, mem_gib: float) -> tuple[str, None, str]:
    """Explain a child that ended without sending a result."""
    tail = _log_tail(log_path)
    suffix = f"; last output: {tail}" if tail else ""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        if name == "SIGKILL":
            return "crash", None, f"killed by SIGKILL (out of memory? cap {mem_gib:g} GiB){suffix}"
        return "crash", None, f"process killed by {name}{suffix}"
    return "crash", None, f"process exited with code {exitcode} without a result{suffix}"
