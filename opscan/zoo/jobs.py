"""One zoo model = one Job, traced through opscan.sandbox (the isolation `opscan trace` uses too);
how the child ended becomes the model's Outcome. Every outcome is an Outcome, never an exception."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opscan.model import ModelTrace
from opscan.sandbox import Ended, Limits, format_size, run

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
# What a forkserver imports once, so each model's child starts with torch and transformers loaded.
PRELOAD = ("opscan.zoo.tracing", "torch", "transformers", "transformers.modeling_utils", "opscan.targets.loader")
# Exceptions (by class name, bases included) that mean the model could not be built.
BUILD_ERRORS = ("TargetError", "ImportError")


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
    error_types: tuple[str, ...] = ()   # "build-error" / "trace-error": the exception's class names, bases included


def tracer_spec(tracer: str | Callable) -> str:
    """`module:qualname` for a tracer callable (so it can cross process and machine borders)."""
    if isinstance(tracer, str):
        return tracer
    return f"{tracer.__module__}:{tracer.__qualname__}"


def trace_job(job: Job, tracer: str | Callable, limits: Limits) -> Outcome:
    """Trace `job` with `tracer(target, **options)` in a child process under `limits`."""
    ended = run(tracer_spec(tracer), {**dict(job.options), "target": job.target}, limits,
                capture_output=True, preload=PRELOAD)
    return outcome(job.name, ended, limits)


def outcome(name: str, ended: Ended, limits: Limits) -> Outcome:
    """The zoo row's view of how the child ended."""
    seconds = ended.seconds
    if ended.how == "returned":
        trace = ended.value
        if trace.complete:
            return Outcome(name, "ok", trace, "", seconds)
        return Outcome(name, "partial", trace, trace.stopped_at, seconds)
    cap = format_size(ended.max_memory) + (" (an existing limit)" if ended.clamped else "")
    if ended.how == "raised":
        kind = "build-error" if set(BUILD_ERRORS) & set(ended.error_types) else "trace-error"
        return Outcome(name, kind, None, ended.error + _at(ended.where), seconds, tuple(ended.error_types))
    if ended.how == "out-of-memory":
        return Outcome(name, "out-of-memory", None, f"{ended.error} [{_asked(ended.error)}memory cap {cap}]",
                       seconds)
    if ended.how == "timeout":
        return Outcome(name, "timeout", None, f"no result after {limits.timeout:g} s; killed", seconds)
    suffix = f"; last output: {ended.output}" if ended.output else ""
    if ended.how == "signal" and ended.signal == "SIGKILL":
        return Outcome(name, "crash", None, f"killed by SIGKILL (out of memory? memory cap {cap}){suffix}", seconds)
    if ended.how == "signal":
        return Outcome(name, "crash", None, f"process killed by {ended.signal}{suffix}", seconds)
    if ended.how == "not-started":
        return Outcome(name, "crash", None, ended.error, seconds)
    return Outcome(name, "crash", None, f"process exited with code {ended.exitcode} without a result{suffix}",
                   seconds)


def _at(where: str) -> str:
    """' (at modeling_foo.py:12)' from 'path/modeling_foo.py:12'."""
    if not where or where == "?":
        return ""
    path, _, line = where.rpartition(":")
    return f" (at {os.path.basename(path)}:{line})"


def _asked(error: str) -> str:
    """'asked for 28.0 GiB at once; ' when torch's message says how big the failed allocation was."""
    match = re.search(r"tried to allocate (\d+) bytes", error)
    return f"asked for {int(match[1]) / 2**30:.1f} GiB at once; " if match else ""
