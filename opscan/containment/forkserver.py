"""A fork server for contained children (`start_method="forkserver"`, the zoo's): an isolated
interpreter that imports the heavy modules once (torch, transformers) and forks one child per
request, each of which contains itself before anything of the project runs (child.call).

The server is started as every child is (child.isolated_argv: `python -I`, in /), with the
environment a contained child starts with (policy.carried_environment: no secret), never the
caller's; it imports only the modules it is told to preload, from the interpreter's own sys.path
(not the working folder, not PYTHONPATH). It holds no pipe of the parent but its socket: each
request brings the child's pipes with it (SCM_RIGHTS), and a status pipe on which the server
writes the child's pid, then its exit code (negative: the signal) once it has reaped it.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import struct
import subprocess
import threading
from collections.abc import Mapping, Sequence

from opscan.containment.child import call
from opscan.containment.interpreter import NEUTRAL_FOLDER, isolated_argv

_INT = struct.Struct("i")
_servers: dict[tuple, ForkServer] = {}
_lock = threading.Lock()


class ForkServer:
    """The parent's handle on one fork server process."""

    def __init__(self, preload: Sequence[str], env: Mapping[str, str]) -> None:
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._proc = subprocess.Popen(isolated_argv(__name__, str(theirs.fileno()), json.dumps(list(preload))),
                                          pass_fds=(theirs.fileno(),), env=dict(env), cwd=NEUTRAL_FOLDER,
                                          stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self._send = threading.Lock()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    def start(self, request_r: int, result_w: int, out: int) -> Served:
        """Fork a child that runs child.call on these pipes; OSError when the server is gone."""
        status_r, status_w = os.pipe()
        try:
            with self._send:
                socket.send_fds(self._sock, [b"c"], [request_r, result_w, out, status_w])
        except OSError:
            os.close(status_r)
            raise
        finally:
            os.close(status_w)
        pid = _read_int(status_r)
        if pid is None:
            os.close(status_r)
            raise OSError("the fork server ended before it forked the child")
        return Served(pid, status_r)

    def close(self) -> None:
        self._sock.close()   # the server ends when it reads the end of its socket
        try:
            self._proc.wait(5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


class Served:
    """A child of the fork server: its pid, and the pipe its exit code arrives on."""

    def __init__(self, pid: int, status_fd: int) -> None:
        self.pid, self.exit_fd = pid, status_fd
        self.returncode: int | None = None
        os.set_blocking(status_fd, False)

    def poll(self) -> int | None:
        if self.returncode is None and self.exit_fd >= 0:
            try:
                code = _read_int(self.exit_fd)
            except BlockingIOError:
                return None
            os.close(self.exit_fd)
            self.exit_fd = -1
            self.returncode = code if code is not None else 1   # the server died: no status to give
        return self.returncode


def server_for(preload: Sequence[str], env: Mapping[str, str]) -> ForkServer:
    """The running fork server for these preloads and this environment (started when none is)."""
    key = (tuple(preload), tuple(sorted(env.items())))
    with _lock:
        server = _servers.get(key)
        if server is None or not server.alive():
            server = _servers[key] = ForkServer(preload, env)
        return server


@atexit.register
def _close_servers() -> None:
    with _lock:
        for server in _servers.values():
            server.close()
        _servers.clear()


def _read_int(fd: int) -> int | None:
    data = b""
    while len(data) < _INT.size:
        chunk = os.read(fd, _INT.size - len(data))
        if not chunk:
            return None
        data += chunk
    return _INT.unpack(data)[0]


# --- the server process ---------------------------------------------------------------------------------

def main(argv: list[str]) -> None:
    """`SOCKET_FD PRELOAD` (the interpreter's arguments): the server's life."""
    serve(int(argv[0]), argv[1])


def serve(sock_fd: int, preload: str) -> None:
    """Preload, then fork a child per request and report its pid and its end."""
    import importlib

    for name in json.loads(preload):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module that does not import here is imported by each child
            pass
    sock = socket.socket(fileno=sock_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, int] = {}   # pid -> its status pipe
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            while True:
                try:
                    if not os.read(wake_r, 4096):
                        break
                except BlockingIOError:
                    break
        if sock in ready:
            message, fds, _, _ = socket.recv_fds(sock, 1, 4)
            if not message:
                break   # the parent is gone
            if len(fds) != 4:
                for fd in fds:
                    os.close(fd)
                continue
            request_r, result_w, out, status_w = fds
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                for fd in (sock.detach(), wake_r, wake_w, status_w, *children.values()):
                    os.close(fd)
                call(request_r, result_w, out)
            for fd in (request_r, result_w, out):
                os.close(fd)
            children[pid] = status_w
            _report(status_w, pid)
        _reap(children)
    os._exit(0)


def _reap(children: dict[int, int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        status_w = children.pop(pid, None)
        if status_w is not None:
            _report(status_w, os.waitstatus_to_exitcode(status))
            os.close(status_w)


def _report(fd: int, value: int) -> None:
    try:
        os.write(fd, _INT.pack(value))
    except OSError:
        pass   # the parent stopped waiting for this child
