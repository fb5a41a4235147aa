"""Runs one planted function of escape_probes.py in the contained child, as whoever runs this
script (tests/reliability/test_reliability_escapes.py starts it as the caller and as uid 65534, with
and without user namespaces), and prints how it ended as one JSON line.

    python escape_runner.py REQUEST_JSON

With `keys` in the request, it first joins a new session keyring and adds those keys (to it, and
to the user keyring for two minutes), as a user's login would have; they are revoked at the end.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

_KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}   # add_key, keyctl
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_REVOKE, KEYCTL_LINK, KEYCTL_SET_TIMEOUT = 1, 3, 8, 15


def _add_keys(keys: dict[str, str]) -> list[int]:
    libc = ctypes.CDLL(None, use_errno=True)
    add_key, keyctl = _KEYCTL.get(os.uname().machine, (248, 250))
    libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), None)
    # the user keyring linked in, as a login session has it (and so its keys can be revoked at the end)
    libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(KEYCTL_LINK), ctypes.c_long(-4), ctypes.c_long(-3))
    serials = []
    for ring in (-3, -4):   # the session keyring, the user keyring
        for description, data in keys.items():
            serial = libc.syscall(ctypes.c_long(add_key), b"user", description.encode(), data.encode(),
                                  ctypes.c_size_t(len(data)), ctypes.c_long(ring))
            if serial > 0:
                libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(KEYCTL_SET_TIMEOUT), ctypes.c_long(serial),
                             ctypes.c_long(120))
                serials.append(serial)
    return serials


def _revoke(serials: list[int]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    keyctl = _KEYCTL.get(os.uname().machine, (248, 250))[1]
    for serial in serials:
        libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(KEYCTL_REVOKE), ctypes.c_long(serial))


def main() -> None:
    request = json.loads(sys.argv[1])
    serials = _add_keys(request.get("keys") or {})
    from opscan.containment import Policy
    from opscan.containment.process import Limits, run

    policy = Policy(overlays=tuple(request.get("overlays", ())), max_processes=request.get("max_processes", 512),
                    scratch_size=request.get("scratch_size", 48 << 20), enabled=request.get("contained", True))
    try:
        ended = run(request["func"], request["kwargs"], Limits(timeout=180, max_memory=request.get("max_memory"),
                                                                containment=policy))
    finally:
        _revoke(serials)
    parts = dict(ended.containment.parts) if ended.containment else {}
    print(json.dumps({"how": ended.how, "signal": ended.signal, "error": ended.error, "value": ended.value,
                      "parts": parts}))


if __name__ == "__main__":
    main()
