"""A seccomp filter of the contained child: no keyring system call (NOTE [keyring])."""

from __future__ import annotations

import ctypes
import errno
import os
import struct

from opscan.containment.namespaces import PR_SET_NO_NEW_PRIVS, lib

# NOTE [keyring]
# The kernel's keyrings are not a namespace of their own: a new user namespace has a user keyring
# of its own, but /proc/keys still lists the keyrings of the same uid outside, and the host's user
# keyring (permissions "user: all") can be linked into the child's session keyring, after which
# every key in it is "possessed" and `keyctl read` returns it (tried, as root and as uid 65534).
# A new session keyring alone therefore holds nothing. So the child first joins a new anonymous
# session keyring (the host's session keys are no longer possessed) and then installs a seccomp
# filter that makes add_key, request_key and keyctl fail with EPERM, as Docker's default profile
# does; the filter is inherited by every process the code starts and cannot be removed. System
# calls of another architecture (a 32-bit `int 0x80`, x32) fail the same way, since they would
# reach the same calls under other numbers.

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_KEYRING_CALLS = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}   # add_key, request_key, keyctl
_X32_BIT = 0x40000000
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_KEYCTL_JOIN_SESSION_KEYRING = 1


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def program(machine: str) -> bytes:
    """The filter's BPF instructions for `machine` (struct sock_filter: code, jt, jf, k)."""
    calls = _KEYRING_CALLS[machine]
    deny = _RET_ERRNO | errno.EPERM
    code: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, 4)]   # seccomp_data.arch
    rest = 2 + (1 if machine == "x86_64" else 0) + len(calls) + 1   # instructions after the arch check
    code.append((_JEQ_K, 0, rest - 1, _AUDIT_ARCH[machine]))       # another architecture: deny
    code.append((_LD_W_ABS, 0, 0, 0))                              # seccomp_data.nr
    if machine == "x86_64":
        code.append((_JGE_K, len(calls) + 1, 0, _X32_BIT))          # an x32 call: deny
    for index, number in enumerate(calls):
        code.append((_JEQ_K, len(calls) - index, 0, number))       # a keyring call: deny
    code.append((_RET_K, 0, 0, _RET_ALLOW))
    code.append((_RET_K, 0, 0, deny))
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in code)


def no_keyring() -> str:
    """Join a new session keyring and forbid the keyring calls (NOTE [keyring]); "held" or why not."""
    machine = os.uname().machine
    if machine not in _AUDIT_ARCH:
        return f"no seccomp filter for {machine}"
    libc = lib()
    libc.syscall(ctypes.c_long(_KEYRING_CALLS[machine][2]), ctypes.c_long(_KEYCTL_JOIN_SESSION_KEYRING), None)
    code = program(machine)
    buffer = ctypes.create_string_buffer(code, len(code))
    prog = _Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"no_new_privs refused: {errno.errorcode.get(ctypes.get_errno(), '?')}"
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        return f"seccomp refused: {errno.errorcode.get(ctypes.get_errno(), '?')}"
    return "held"
