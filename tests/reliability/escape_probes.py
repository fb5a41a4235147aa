"""Planted code that tries the ways out of the containment of issue 41 (tests/reliability/
test_reliability_escapes.py runs it as the contained child's code): Unix sockets outside, SysV
shared memory and POSIX message queues that outlive the child, the host's /dev/shm, the user's
keyrings, credential files anywhere, many processes, much memory in many processes.

Each function reports what it reached and never raises: stdlib and ctypes only, so it runs under
any Python (the unprivileged run uses the system's)."""

from __future__ import annotations

import ctypes
import os
import socket
import time

_libc = ctypes.CDLL(None, use_errno=True)
_KEYCTL = {"x86_64": 250, "aarch64": 219}
KEYCTL_LINK, KEYCTL_SEARCH, KEYCTL_READ = 8, 10, 11
IPC_CREAT, IPC_RMID = 0o1000, 0


def _errno() -> str:
    import errno

    code = ctypes.get_errno()
    return errno.errorcode.get(code, str(code))


def attempt(spec: dict) -> dict:
    """Every attempt of `spec` (paths, socket names, keys: see the test) -> what each reached."""
    return {
        "read": {path: _read(path) for path in spec.get("read", ())},
        "listed": {path: _list(path) for path in spec.get("list", ())},
        "wrote": {path: _write(path) for path in spec.get("write", ())},
        "unix": {name: _unix(name) for name in spec.get("unix", ())},
        "tcp": _tcp(spec["port"]) if spec.get("port") else "",
        "sysv": {str(size): _sysv(spec["sysv_key"] + index, size)
                 for index, size in enumerate(spec.get("sysv_sizes", ()))},
        "mqueue": _mqueue(spec["mqueue"]) if spec.get("mqueue") else "",
        "keys": _keys(spec.get("key_description", "")),
    }


def _read(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return "READ:" + handle.read(4096).decode(errors="replace")
    except OSError as exc:
        return f"refused {type(exc).__name__}"


def _list(path: str) -> list[str] | str:
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return f"refused {type(exc).__name__}"


def _write(path: str) -> str:
    try:
        with open(path, "w") as handle:
            handle.write("overwritten by the planted code")
        return "WROTE"
    except OSError as exc:
        return f"refused {type(exc).__name__}"


def _unix(name: str) -> str:
    """Connect to a Unix socket (`@name`: an abstract one) and send a line."""
    address = "\0" + name[1:] if name.startswith("@") else name
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect(address)
            try:
                sock.sendall(b"planted\n")
            except OSError:
                pass   # the listener counts and closes at once: connected all the same
        return "CONNECTED"
    except OSError as exc:
        return f"refused {type(exc).__name__}"


def _tcp(port: int) -> str:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return "CONNECTED"
    except OSError as exc:
        return f"refused {type(exc).__name__}"


def _sysv(key: int, size: int) -> str:
    """A SysV shared-memory segment of `size` bytes under `key`, left behind on purpose."""
    _libc.shmget.restype = ctypes.c_int
    ident = _libc.shmget(ctypes.c_int(key), ctypes.c_size_t(size), ctypes.c_int(IPC_CREAT | 0o666))
    return "CREATED" if ident >= 0 else f"refused {_errno()}"


def _mqueue(name: str) -> str:
    """A POSIX message queue `name`, left behind on purpose."""
    try:
        opener = _libc.mq_open
    except AttributeError:
        opener = ctypes.CDLL("librt.so.1", use_errno=True).mq_open
    opener.restype = ctypes.c_int
    fd = opener(name.encode(), ctypes.c_int(os.O_CREAT | os.O_RDWR), ctypes.c_uint(0o666), None)
    return "CREATED" if fd >= 0 else f"refused {_errno()}"


def _keyctl(*args: int | bytes | None) -> int:
    number = _KEYCTL.get(os.uname().machine, 250)
    converted = [a if isinstance(a, bytes) or a is None else ctypes.c_long(a) for a in args]
    return _libc.syscall(ctypes.c_long(number), *converted)


def _keys(description: str) -> list[str]:
    """Whatever key data can be read: the key by name in the session and user keyrings, then every
    keyring of /proc/keys linked into the session keyring (so their keys become "possessed"), then
    every key of /proc/keys by its serial number."""
    if not description:
        return []
    found: list[str] = []

    def read(serial: int) -> None:
        buffer = ctypes.create_string_buffer(4096)
        size = _keyctl(KEYCTL_READ, serial, ctypes.addressof(buffer), 4096)
        if size > 0:
            found.append(buffer.raw[:size].decode(errors="replace"))

    def search() -> None:
        for ring in (-3, -4, -5):   # session, user, user-session keyrings
            serial = _keyctl(KEYCTL_SEARCH, ring, b"user", description.encode(), 0)
            if serial > 0:
                read(serial)

    search()
    try:
        with open("/proc/keys", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split()
        if len(fields) > 8 and fields[7] == "keyring":
            _keyctl(KEYCTL_LINK, int(fields[0], 16), -3)
    search()
    for line in lines:   # this test's key only (not another run's that has not expired yet)
        fields = line.split()
        if len(fields) > 8 and fields[7] == "user" and fields[8].rstrip(":") == description:
            read(int(fields[0], 16))
    return sorted(set(found))


def fork_count(attempts: int) -> int:
    """How many processes could be started at once (each waits until the end), up to `attempts`."""
    children: list[int] = []
    for _ in range(attempts):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return len(children)


def hold_memory(processes: int, mib: int) -> str:
    """`processes` processes that each fill `mib` MiB and hold it: "held all" once every one has
    (each stays under a per-process limit; together they are over the tree's)."""
    read_end, write_end = os.pipe()
    children = []
    for _ in range(processes):
        pid = os.fork()
        if pid == 0:
            block = bytearray(mib << 20)
            for offset in range(0, len(block), 4096):
                block[offset] = 1
            os.write(write_end, b"x")
            time.sleep(30)
            os._exit(0)
        children.append(pid)
    os.close(write_end)
    got = b""
    deadline = time.monotonic() + 60
    while len(got) < processes and time.monotonic() < deadline:
        chunk = os.read(read_end, processes)
        if not chunk:
            break
        got += chunk
    time.sleep(1)   # held long enough for a watch to see it
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return "held all" if len(got) == processes else f"held {len(got)}"
