"""Functions the containment process tests run in a child process (importable by module name)."""

from __future__ import annotations

import os
import resource
import signal
import time


def limits_seen() -> dict:
    """What the child sees: its RLIMIT_AS (soft, hard) and its pid."""
    return {"as": list(resource.getrlimit(resource.RLIMIT_AS)), "pid": os.getpid()}


def imports_torch() -> str:
    import torch

    return str(torch.__version__)   # torch.__version__ is a torch class: unpickling it imports torch


def allocate(gib: int = 64) -> int:
    blocks = [bytearray(1 << 30) for _ in range(gib)]
    return len(blocks)


def hang() -> None:
    time.sleep(3600)


def shout_and_abort() -> None:
    print("about to abort: pretend assertion failed", flush=True)
    os.kill(os.getpid(), signal.SIGABRT)


def fail_import() -> None:
    import no_such_module_for_opscan_tests  # noqa: F401


def raise_opscan_error() -> None:
    from opscan.errors import TargetError

    raise TargetError("cannot import 'nope'", "model.py", 3)
