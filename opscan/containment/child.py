"""The contained child's side: it contains itself, then calls, and answers as data.

A child is started as an isolated interpreter (containment/interpreter.py) in the neutral folder
with `call REQUEST_FD RESULT_FD` (`main`), or forked by the fork server or by `fork` into `call`.
It reads one `Request` (the parent's JSON) from REQUEST_FD, sets its limits, enters the
containment, and only then goes to the caller's working folder, takes the parent's sys.path (the
project, the allow-listed PYTHONPATH), decodes the arguments, imports the function and calls it.
Two frames go back on RESULT_FD (NOTE [two frames]): which parts of the containment held (`Held`
or null), written before any project code ran, then the `Answer`.
"""

from __future__ import annotations

import os
import struct
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

from opscan import errors
from opscan.containment import codec
from opscan.containment.policy import Policy
from opscan.containment.supervisor import enter

HEADER = struct.Struct(">Q")   # a frame: its length in 8 bytes, then that many bytes of JSON


@dataclass(frozen=True)
class Request:
    """What the parent asks of one child (JSON on the request pipe)."""

    func: str                       # "module:name" to call, once contained
    kwargs: Any                     # codec.encode_tagged(kwargs): decoded once contained
    max_memory: int | None          # RLIMIT_AS, set before anything else
    policy: Policy
    scratch: str | None             # the child's scratch folder (None: not contained)
    cwd: str                        # the working folder the function runs in
    path: tuple[str, ...] = ()      # sys.path the function runs with (the parent's)


@dataclass(frozen=True)
class Answer:
    """How the call ended, as the child says it (the parent's Ended is built from it)."""

    how: Literal["returned", "raised", "out-of-memory", "not-contained"]
    value: Any = None
    error: str = ""
    error_types: tuple[str, ...] = ()
    opscan_error: tuple[str, str, str | None, int | None] | None = None   # (class, message, path, line)
    where: str = ""
    seconds: float = 0.0


# NOTE [two frames]
# The first frame (which parts held) is written by opscan's code before any of the project's runs,
# so the report's containment line cannot be rewritten by the project; the second carries what the
# function returned. Project code can write to the pipe too: anything that is not a frame of the
# declared types ends the run as "invalid" in the parent, and nothing of it is used.

def main(argv: list[str]) -> NoReturn:
    """`call REQUEST_FD RESULT_FD`: the isolated interpreter's call (interpreter.isolated_argv)."""
    if len(argv) != 3 or argv[0] != "call":
        print(f"opscan: not a child's command line: {argv!r}", file=sys.stderr)
        os._exit(2)
    call(int(argv[1]), int(argv[2]))


def call(request_fd: int, result_fd: int, out_fd: int | None = None) -> NoReturn:
    """Read the request, limit, contain, call, answer: the whole life of a child (never returns)."""
    request = codec.loads(_read_all(request_fd), Request)
    _stdio(out_fd)
    _limit(request.max_memory)
    held = None
    if request.policy.enabled and request.scratch:   # its files: the parent's sys.path too (taken below)
        held = enter(request.policy, request.scratch, cwd=request.cwd, sys_path=request.path)
    write_frame(result_fd, codec.dumps(held))
    if held is not None and request.policy.require and not held.all:
        _answer(result_fd, Answer("not-contained", error=held.line()))
    try:
        os.chdir(request.cwd)
    except OSError:
        pass   # the folder is not there for the child: it runs in the neutral one
    sys.path[:] = request.path
    start = time.perf_counter()
    try:
        import importlib

        kwargs = codec.decode_tagged(request.kwargs)
        module_name, _, name = request.func.partition(":")
        target: Any = importlib.import_module(module_name)
        for part in name.split("."):
            target = getattr(target, part)
        answer = Answer("returned", value=target(**kwargs))
    except BaseException as exc:  # noqa: BLE001 - everything the model raises is reported, not raised
        try:
            answer = describe(exc)
        except Exception:  # noqa: BLE001 - an exception whose message itself raises
            answer = Answer("raised", error=type(exc).__name__, error_types=(type(exc).__name__,), where="?")
    _answer(result_fd, answer, time.perf_counter() - start, request.func)


def write_frame(fd: int, payload: bytes) -> None:
    data = memoryview(HEADER.pack(len(payload)) + payload)
    while data:
        data = data[os.write(fd, data):]


def _answer(fd: int, answer: Answer, seconds: float = 0.0, func: str = "") -> NoReturn:
    try:
        payload = codec.dumps({**codec.encode(answer), "seconds": seconds})
    except MemoryError:
        payload = codec.dumps(Answer("out-of-memory", error="MemoryError while sending the result"))
    except Exception as exc:  # noqa: BLE001 - a result that is not data (a torch object, a class)
        payload = codec.dumps(Answer("raised", error=f"could not send the result back: {type(exc).__name__}: {exc}",
                                     error_types=(type(exc).__name__,), where=func))
    try:
        write_frame(fd, payload)
    except OSError:
        pass   # the parent stopped listening (a timeout, Ctrl-C)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or broken stream: nothing more to say
            pass
    os._exit(0)   # not the interpreter's exit: threads the model left are not waited for


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _stdio(out_fd: int | None) -> None:
    """stdin from /dev/null; stdout and stderr to `out_fd` (a forked child), stdout to stderr in
    any case: the model's prints never reach the parent's stdout (its report)."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    if out_fd is not None:
        os.dup2(out_fd, 2)
        if out_fd != 2:
            os.close(out_fd)
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def _limit(max_memory: int | None) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing model leaves no core file behind
    if max_memory is not None:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or max_memory < soft:
            resource.setrlimit(resource.RLIMIT_AS, (max_memory, hard))   # the hard limit stays as it was


# Allocation failures that torch reports as RuntimeError under RLIMIT_AS (it has no exception
# class for a failed CPU allocation, so its message is all there is to go by).
_OOM_TEXT = ("MemoryError", "can't allocate memory", "DefaultCPUAllocator", "std::bad_alloc", "alloc_cpu.cpp")


def describe(exc: BaseException) -> Answer:
    """The answer for an exception: out of memory, or raised (its class names, message and place)."""
    chain: BaseException | None = exc
    seen = 0
    while chain is not None and seen < 20:
        if isinstance(chain, MemoryError) or any(t in f"{type(chain).__name__}: {chain}" for t in _OOM_TEXT):
            text = _first_line(chain)
            return Answer("out-of-memory", error=f"{type(chain).__name__}{': ' + text[:300] if text else ''}")
        chain, seen = chain.__cause__ or chain.__context__, seen + 1
    frames = traceback.extract_tb(exc.__traceback__)
    opscan_error = None
    if isinstance(exc, errors.OpscanError):
        opscan_error = (type(exc).__name__, exc.message, exc.path, exc.line)
    return Answer("raised", error=_one_line(exc),
                  error_types=tuple(cls.__name__ for cls in type(exc).__mro__ if cls is not object),
                  opscan_error=opscan_error,
                  where=f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?")


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
