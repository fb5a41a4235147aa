"""How a model's trace in an contained child ended: one vocabulary for `opscan PATH`, `opscan trace` and the zoo.

opscan/containment/process.py runs the child and says how the process ended (`Ended.how`: returned, raised,
timed out, ...). This module says what that means for a trace, in the closed vocabulary OUTCOMES
(`status_of`), and gives each caller its form of the same answer:

- the zoo keeps every model as a row: `outcome(name, ended, limits)` -> `Outcome` (never raises);
- `opscan PATH` and `opscan trace` stop on it: `result_of(ended, what, limits)` returns the trace,
  or raises one error line for the status (ModelProcessError for a timeout, memory exhaustion or a
  crash; the OpscanError the child raised, same class and message; TraceError for any other
  exception in the model's code) saying what happened, the limit, and what to try.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from opscan import errors
from opscan.errors import ModelProcessError, TraceError
from opscan.containment.process import Ended, How, Limits, format_size, run
from opscan.records import ModelTrace, joined_stop

class TraceStatus(StrEnum):
    """How a trace ended (Outcome.status; zoo rows carry it as `status`)."""

    OK = "ok"
    PARTIAL = "partial"
    BUILD_ERROR = "build-error"
    TRACE_ERROR = "trace-error"
    TIMEOUT = "timeout"
    CRASH = "crash"
    OUT_OF_MEMORY = "out-of-memory"

    @property
    def description(self) -> str:
        return _OUTCOMES[self]

    @property
    def traced(self) -> bool:
        """The child returned a trace (complete or not)."""
        return self in (TraceStatus.OK, TraceStatus.PARTIAL)

    @property
    def failed_in_model(self) -> bool:
        """The model's code raised: while building it, or in its step."""
        return self in (TraceStatus.BUILD_ERROR, TraceStatus.TRACE_ERROR)

    @property
    def limit(self) -> bool:
        """A limit stopped it, or its process died (NOTE [stop classes] in opscan/zoo/results.py)."""
        return self in (TraceStatus.TIMEOUT, TraceStatus.OUT_OF_MEMORY, TraceStatus.CRASH)


_OUTCOMES: dict[str, str] = {
    "ok": "traced completely",
    "partial": "traced, but the trace stopped early (see the row's error)",
    "build-error": "the model could not be built (config, import or constructor error)",
    "trace-error": "the model was built but the trace raised",
    "timeout": "the trace did not finish within the time limit and was killed",
    "crash": "the trace process died (segfault, abort, killed) or sent an answer that is not valid data",
    "out-of-memory": "the trace process hit the memory cap",
}
OUTCOMES: dict[str, str] = {k.value: k.description for k in TraceStatus}
# Exceptions (by class name, bases included) that mean the model could not be built.
BUILD_ERRORS = ("TargetError", "ImportError")
TRACE_FUNCTION = "opscan.targets.loader:trace_target"
# `opscan run`'s script and `opscan PATH`'s training command run there (opscan/trace/run/)
RUN_FUNCTION = "opscan.trace.run:run_script"
IN_PROCESS = "--in-process: in opscan's own process"   # what no part of the containment is, then


@dataclass(frozen=True)
class Outcome:
    """How one contained trace ended, as a zoo row keeps it."""

    name: str
    status: TraceStatus            # one of OUTCOMES
    trace: ModelTrace | None = None
    error: str = ""
    seconds: float = 0.0           # build + trace time inside the child (wall time to the kill if it died)
    error_types: tuple[str, ...] = ()   # "build-error" / "trace-error": the exception's class names, bases included

    def __post_init__(self) -> None:   # NOTE [typed vocabularies] in opscan/records/vocabulary.py
        object.__setattr__(self, "status", TraceStatus(self.status))


def status_of(ended: Ended) -> TraceStatus:
    """The OUTCOMES status of a trace that ended as `ended` (the one place this is decided)."""
    if ended.how is How.RETURNED:
        return TraceStatus.OK if getattr(ended.value, "complete", True) else TraceStatus.PARTIAL
    if ended.how is How.RAISED:
        return TraceStatus.BUILD_ERROR if set(BUILD_ERRORS) & set(ended.error_types) else TraceStatus.TRACE_ERROR
    if ended.how is How.OUT_OF_MEMORY:
        return TraceStatus.OUT_OF_MEMORY
    if ended.how is How.TIMEOUT:
        return TraceStatus.TIMEOUT
    return TraceStatus.CRASH   # signal, exited, not-started


def outcome(name: str, ended: Ended, limits: Limits) -> Outcome:
    """The zoo row's view of how the child ended (short errors: a row is one line)."""
    status, seconds = status_of(ended), ended.seconds
    if status.traced:
        trace = ended.value
        stop = joined_stop(trace.stopped_at, trace.stop_hint) if status is TraceStatus.PARTIAL else ""
        return Outcome(name, status, trace, stop, seconds)
    cap = format_size(ended.max_memory) + (" (an existing limit)" if ended.clamped else "")
    if status.failed_in_model:
        return Outcome(name, status, None, ended.error + _at(ended.where), seconds, tuple(ended.error_types))
    if status is TraceStatus.OUT_OF_MEMORY:
        return Outcome(name, status, None, f"{ended.error} [{_asked(ended.error)}memory cap {cap}]", seconds)
    if status is TraceStatus.TIMEOUT:
        return Outcome(name, status, None, f"no result after {limits.timeout:g} s; killed", seconds)
    suffix = f"; last output: {ended.output}" if ended.output else ""
    if ended.how is How.SIGNAL and ended.signal == "SIGKILL":
        return Outcome(name, status, None, f"killed by SIGKILL (out of memory? memory cap {cap}){suffix}", seconds)
    if ended.how is How.SIGNAL:
        return Outcome(name, status, None, f"process killed by {ended.signal}{suffix}", seconds)
    if ended.how in (How.NOT_STARTED, How.NOT_CONTAINED, How.INVALID):
        return Outcome(name, status, None, ended.error, seconds)
    return Outcome(name, status, None, f"process exited with code {ended.exitcode} without a result{suffix}",
                   seconds)


def result_of(ended: Ended, what: str, limits: Limits) -> Any:
    """The returned value, or the one-line error for how the child ended (`what`: e.g. "trace of hf:gpt2").

    Raises the OpscanError the child raised (same class and message), ModelProcessError for a
    timeout, crash or memory exhaustion, and TraceError for other exceptions in the model's code.
    """
    status = status_of(ended)
    if status.traced:
        return ended.value
    if ended.how is How.NOT_CONTAINED:
        raise errors.ContainmentError(f"{what}: --require-containment: {ended.error}")
    if ended.how is How.INVALID:
        raise ModelProcessError(f"{what}: {ended.error}; none of it was used (the model's code may have written "
                                "to opscan's result pipe)", subject=what)
    if ended.opscan_error is not None:
        cls_name, text, path, line = ended.opscan_error
        cls = getattr(errors, cls_name, None)
        if not (isinstance(cls, type) and issubclass(cls, errors.OpscanError)):   # a name the child made up
            cls = TraceError
        raise cls(text, path, line)
    if status.failed_in_model:
        raise TraceError(f"{what} failed inside the model code: {ended.error} (at {ended.where})", subject=what)
    if status is TraceStatus.TIMEOUT:
        raise ModelProcessError(
            f"{what} timed out after {ended.seconds:.0f} s (limit --timeout {limits.timeout:g}); the model may "
            "hang (a blocking call, an endless loop, a collective waiting for other ranks): "
            "raise --timeout, or trace a smaller shape (--batch, --seq-len)", subject=what)
    if status is TraceStatus.OUT_OF_MEMORY:
        raise ModelProcessError(
            f"{what} ran out of memory (limit {describe_memory(ended, limits)}): {ended.error}; raise "
            "--max-memory, or trace a smaller shape (--batch, --seq-len); a fake-tensor trace needs little "
            "memory, so real tensors made while building the model (weights loaded, torch.randn in "
            "__init__) are the usual cause", subject=what)
    # NOTE [not started]: a child that could not be started is a "crash" row in the zoo, but for
    # `opscan PATH` it says nothing about the model: a TraceError (the trace is skipped with a note).
    if ended.how is How.NOT_STARTED:
        raise TraceError(f"{what}: {ended.error}")
    if ended.how is How.SIGNAL and ended.signal == "SIGSEGV":
        raise ModelProcessError(
            f"{what} crashed: the model's process died of a segmentation fault (SIGSEGV) in native "
            "code (a C/C++ extension, ctypes, or a torch bug); opscan itself is unharmed: "
            "check the model's compiled extensions, or run the model once on CPU to reproduce", subject=what)
    if ended.how is How.SIGNAL and ended.signal == "SIGKILL":
        raise ModelProcessError(
            f"{what} was killed (SIGKILL), most likely by the system's out-of-memory killer "
            f"(limit {describe_memory(ended, limits)}): lower --max-memory so the "
            "limit is hit first, or trace a smaller shape (--batch, --seq-len)", subject=what)
    if ended.how is How.SIGNAL:
        raise ModelProcessError(f"{what} crashed: the model's process died of {ended.signal}; "
                                "run the model once on CPU to reproduce", subject=what)
    raise ModelProcessError(f"{what} ended without a result (exit code {ended.exitcode}); the model code "
                            "may call sys.exit() or os._exit()", subject=what)


def trace_isolated(options: dict[str, Any], limits: Limits | None) -> ModelTrace:
    """`opscan.targets.loader.trace_target(**options)` in a child process under `limits` (raises as `result_of`);
    `limits` None traces in this process, without a child (`--in-process`, for debugging)."""
    if limits is None:
        from dataclasses import replace

        from opscan.containment import PARTS
        from opscan.targets.loader import trace_target
        from opscan.targets.project_code import built_by

        trace = trace_target(**options)
        return replace(trace, built_by=built_by(trace.target, bool(options.get("trust_remote_code"))),
                       containment=tuple((part, IN_PROCESS) for part in PARTS))
    what = f"trace of {options.get('target', '?')}"
    ended = run(TRACE_FUNCTION, options, with_overlay(limits, options.get("project_root")), returns=ModelTrace)
    trace = result_of(ended, what, limits)
    return contained(trace, ended, options)


def with_overlay(limits: Limits, root: str | None) -> Limits:
    """`limits` whose containment puts the project folder under an overlay (its writes go to a copy)."""
    from dataclasses import replace

    if not root:
        return limits
    return replace(limits, containment=replace(limits.containment,
                                               overlays=(*limits.containment.overlays, str(root))))


def contained(trace: ModelTrace, ended: Ended, options: dict[str, Any]) -> ModelTrace:
    """The trace with what project code ran to build it and which parts of the containment held."""
    from dataclasses import replace

    from opscan.targets.project_code import built_by

    return replace(trace, built_by=built_by(trace.target or options.get("target", ""),
                                            bool(options.get("trust_remote_code"))),
                   containment=ended.containment.parts if ended.containment else ())


def describe_memory(ended: Ended, limits: Limits) -> str:
    """'--max-memory 8G', or '--max-memory 8G, clamped to the existing limit 2G' (for messages)."""
    asked = f"--max-memory {format_size(limits.max_memory)}"
    if ended.clamped:
        return f"{asked}, clamped to the existing address-space limit {format_size(ended.max_memory)}"
    if limits.max_memory is None and ended.max_memory is not None:
        return f"the existing address-space limit {format_size(ended.max_memory)}"
    return asked


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
