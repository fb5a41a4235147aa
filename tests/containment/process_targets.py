"""Functions the containment process tests run in a child process (importable by module name)."""

from __future__ import annotations

import os
import resource
import signal
import struct
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


# --- planted answers: what a hostile model can write to the pipe opscan reads its answer from ---------

EXPLOIT = "open({marker!r}, 'w').write('this ran in opscan, uncontained')"


class Exec:
    """Unpickling it runs `code` (the object a hostile model sends: `__reduce__` -> exec)."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self):
        return (exec, (self.code,))


def writable_pipes() -> list[int]:
    """Every pipe this process may write to, but its stdout and stderr: where opscan's answer goes."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd < 3 or not os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                continue
            with open(f"/proc/self/fdinfo/{fd}") as handle:
                flags = int(handle.read().split("flags:")[1].split()[0], 8)
        except OSError:
            continue
        if flags & os.O_ACCMODE == os.O_WRONLY:
            found.append(fd)
    return found


def frame(payload: bytes) -> bytes:
    return struct.pack(">Q", len(payload)) + payload


def planted_answer(marker: str, kind: str) -> str:
    """Write a hostile answer on every pipe it may write to, then return normally."""
    import gc
    import json
    import pickle

    evil = Exec(EXPLOIT.format(marker=marker))
    if kind == "connection":   # what ran code in opscan: multiprocessing's Connection, found with gc
        for obj in gc.get_objects():
            if type(obj).__name__ == "Connection" and hasattr(obj, "send"):
                try:
                    obj.send(evil)
                except Exception:  # noqa: BLE001 - the reading end
                    pass
    payloads = {
        "connection": pickle.dumps(evil),
        "pickle": pickle.dumps(evil),                                    # raw pickle bytes
        "framed-pickle": frame(pickle.dumps(evil)),                      # pickle bytes in a well-made frame
        "huge": struct.pack(">Q", 1 << 40) + b"{" * 4096,                # announces a terabyte
        "over-limit": frame(b'{"how": "returned", "value": "' + b"x" * (65 << 20) + b'"}'),
        "deep": frame(b'{"how": "returned", "value": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"),
        "wrong-types": frame(json.dumps({"how": "returned", "value": {"target": 1, "mode": "train",
                                                                     "device": "neuron"}}).encode()),
        "unknown-keys": frame(json.dumps({"how": "returned", "value": None,
                                          "__reduce__": ["exec", [EXPLOIT.format(marker=marker)]]}).encode()),
        "made-up-error": frame(json.dumps({"how": "raised", "error": "x", "error_types": ["TargetError"],
                                           "opscan_error": ["Path", marker, None, None]}).encode()),
        "not-a-how": frame(json.dumps({"how": "signal", "value": None}).encode()),
        "long-error": frame(json.dumps({"how": "raised", "error": "x" * (8 << 20), "error_types": ["E"] * 100_000,
                                        "where": "y" * (4 << 20),
                                        "opscan_error": ["TargetError", "z" * (4 << 20), "p" * 9000, 1]}).encode()),
    }
    for fd in writable_pipes():
        try:
            os.write(fd, payloads[kind])
        except OSError:
            pass
    return "the answer opscan would have taken"


def return_an_object(marker: str):
    """Return what pickle would rebuild by calling exec (not data: the child cannot send it)."""
    return Exec(EXPLOIT.format(marker=marker))


def open_descriptors() -> list[str]:
    """What this process's descriptors point to (all but stdin, stdout, stderr)."""
    out = []
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            out.append(f"{name} {os.readlink(f'/proc/self/fd/{name}')}")
        except OSError:
            pass
    return [line for line in out if int(line.split()[0]) > 2]


def tell_the_tracker(victim: str) -> list[int]:
    """Order every pipe this process can write to (a resource tracker's among them, if it inherited one)
    to unlink the shared-memory segment `victim` at exit."""
    line = f"REGISTER:{victim}:shared_memory\n".encode()
    told = []
    for fd in writable_pipes():
        try:
            os.write(fd, line)
            told.append(fd)
        except OSError:
            pass
    return told
