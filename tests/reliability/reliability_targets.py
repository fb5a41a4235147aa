"""Functions the isolation tests run in a child process: they hang, crash, allocate or misbehave on purpose."""

from __future__ import annotations

import os
import signal
import sys
import time


def answer(value: int = 41) -> int:
    print("noise on stdout from the model")  # must not reach the parent's stdout
    return value + 1


def hang(seconds: float = 3600.0) -> None:
    time.sleep(seconds)


def segfault() -> None:
    import ctypes

    ctypes.string_at(0)


def kill_self(signum: int = int(signal.SIGSEGV)) -> None:
    os.kill(os.getpid(), signum)


def allocate(gib: int = 64) -> int:
    blocks = []
    for _ in range(gib):
        blocks.append(bytearray(1 << 30))
    return len(blocks)


def raise_opscan_error() -> None:
    from opscan.errors import TargetError

    raise TargetError("cannot import 'nope'", "model.py", 3)


def raise_other() -> None:
    raise ValueError("model code failed")


def exit_early() -> None:
    os._exit(3)


def python_version() -> str:
    return sys.version
