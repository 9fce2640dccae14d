"""An ``ssh://`` Docker engine, reached through a socket forward that OpenSSH makes.

docker-py's own ssh transport reads with blocking full reads (``BufferedReader.read(n)``), which
deadlocks the instance helper's request/response traffic. Instead, each ``ssh://[user@]host[:port]``
engine gets one OpenSSH client per process, forwarding a private local socket to the engine's::

    ssh -n -tt -o BatchMode=yes -o ExitOnForwardFailure=yes -o StreamLocalBindUnlink=yes \\
        -L <private dir>/engine.sock:<remote engine socket> -- host 'exec sleep 2147483647'

(a pty session for speed, see ``Tunnel._argv``; ``-nNT`` where the host allows no session), and
the engine is then a ``unix://`` one (the exec transport uses the raw socket, as for a local
engine). The user's ssh config, agent and known_hosts apply; nothing ever prompts (``BatchMode``).
The forward starts on the first request, is started again when it died, and stops when the last
client using it is released (a pool's ``close``) or when the interpreter exits. A process killed
with SIGKILL cannot stop it, so on Linux the kernel does: ssh is started by one long-lived thread
and asks for SIGTERM when that thread ends (``PR_SET_PDEATHSIG``; see :func:`_spawn`).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from praisonai._errors import ConfigError, ProviderUnavailableError
from praisonai._files import check_regular_file

#: How long the forward may take to answer ``/_ping``: under the pool's probe timeout (5 s), so
#: a host whose ssh hangs is reported by its own sentence, not by the pool's "did not answer".
TIMEOUT_S = 4.0
DEFAULT_SOCKET = "/var/run/docker.sock"
_READY = b"praisonai-forward-ready"  # printed by the remote session once it runs

# A user and a host name or [IPv6] address that cannot be read by ssh as an option (no leading
# '-'), nor carry spaces, quotes or anything a shell, ssh_config's %-tokens or -L would parse.
_ADDRESS = re.compile(
    r"ssh://(?:(?P<user>[A-Za-z0-9_][A-Za-z0-9._-]*)@)?"
    r"(?P<host>[A-Za-z0-9_][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])(?::(?P<port>[0-9]{1,5}))?"
)
_SOCKET = re.compile(r"/[A-Za-z0-9._/+-]*")  # no ':' (it splits -L's two sides), no spaces


@dataclass(frozen=True)
class Target:
    """Where an ``ssh://`` engine is: checked pieces, never a raw string handed to ssh."""

    url: str
    user: str | None
    host: str
    port: int | None
    socket: str
    config: str | None


def target(url: str, remote_socket: str | None, config: str | None) -> Target:
    """``url`` (``ssh://[user@]host[:port]``) checked, with the engine's socket on that host.

    Raises:
        ConfigError: anything ssh could read as an option, or a socket path -L cannot carry.
    """
    found = _ADDRESS.fullmatch(url)
    port = int(found["port"]) if found and found["port"] else None
    if found is None or (port is not None and not 0 < port < 65536):
        raise ConfigError(
            f"docker host {url!r} is not ssh://[user@]host[:port] (a user or host may not start "
            f"with '-' nor hold spaces or symbols)",
            op="config",
        )
    where = remote_socket or DEFAULT_SOCKET
    if not _SOCKET.fullmatch(where):
        message = f"docker host {url}: socket {where!r} is not an absolute path without ':' or spaces"
        raise ConfigError(message, op="config")
    config = os.path.expanduser(config) if config else None
    if config:  # ssh opens it itself: a FIFO would hang it until the forward's timeout
        try:
            check_regular_file(config, "ssh_config")
        except OSError as exc:
            raise ConfigError(
                f"docker host {url}: ssh_config {config}: {exc.strerror or exc}", op="config"
            ) from None
    return Target(url, found["user"], found["host"].strip("[]"), port, where, config)


class _SessionEnded(Exception):
    """ssh logged in, then ended with its remote command: the host keeps no session of ours."""


class Tunnel:
    """One OpenSSH client forwarding a private local socket to a remote engine's socket."""

    def __init__(self, to: Target) -> None:
        self.to = to
        self.dir = Path(tempfile.mkdtemp(prefix="praisonai-ssh-"))  # 0700: only this user connects
        self.path = str(self.dir / "engine.sock")
        self.users = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._session = True  # a pty session (see _argv) until the host refuses one
        self._foreign = False  # in a forked child: the parent's forward, never started or stopped

    def ensure(self) -> None:
        """Make sure the forward runs (blocking): started, or started again when it died.

        Raises:
            ProviderUnavailableError: ssh failed (authentication, host, forward); one sentence
                naming the host, with ssh's own last line.
        """
        with self._lock:
            if self._foreign:
                return
            if self._process is not None:
                if self._process.poll() is None:
                    return
                if _session_ended(self._process.returncode):  # it forwarded, then its session ended
                    self._session = False
            self._start()

    def _argv(self, session: bool) -> list[str]:
        """ssh's arguments; with ``session``, a remote ``sleep`` on a pty rather than ``-N``: sshd
        sets TCP_NODELAY on a connection only for a pty session, and without it each helper reply
        split over two writes waits for the client's delayed ACK (exec p50 45 ms, not 3 ms)."""
        to = self.to
        argv = ["ssh", "-n", "-tt"] if session else ["ssh", "-nNT"]
        argv += ["-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes", "-o", "StreamLocalBindUnlink=yes"]
        argv += ["-o", f"ConnectTimeout={int(TIMEOUT_S) - 1}"]
        # Our own connection, never a multiplexed one: its lifetime is this process's to manage.
        argv += ["-o", "ControlMaster=no", "-o", "ControlPath=none"]
        argv += ["-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3"]  # a dead link ends ssh
        argv += ["-F", to.config] if to.config else []
        argv += ["-l", to.user] if to.user else []
        argv += ["-p", str(to.port)] if to.port else []  # else ssh_config's Port applies
        argv += ["-L", f"{self.path}:{to.socket}", "--", to.host]
        # the marker says the session lasts (a forced command would print anything else and end);
        # the pty's hangup ends the sleep with the connection
        return [*argv, f"echo {_READY.decode()}; exec sleep 2147483647"] if session else argv

    def _start(self) -> None:
        """Start ssh and wait for the forward; where a pty session does not last (a forced
        command, no shell: ssh ends with that command's status), ``-N`` from then on."""
        deadline = time.monotonic() + TIMEOUT_S
        if self._session:
            try:
                return self._run(self._argv(session=True), deadline)
            except _SessionEnded:
                self._session = False
        with contextlib.suppress(_SessionEnded):
            return self._run(self._argv(session=False), deadline)
        self._fail("ssh exited")

    def _run(self, argv: list[str], deadline: float) -> None:
        self._stop_process()
        out = self.dir / "ssh.out"
        with open(self.dir / "ssh.log", "wb") as log, open(out, "wb") as said:  # the child keeps copies
            self._process = _spawn(argv, stdout=said, stderr=log)
        answer: bool | None = None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                if _session_ended(self._process.returncode):
                    raise _SessionEnded
                self._fail("ssh exited")
            answer = answer or _ping(self.path, deadline)
            if answer and ("-nNT" in argv or _READY in out.read_bytes()):
                return
            if answer is False:  # connected, then closed unanswered: the remote side refused
                time.sleep(0.1)  # for ssh to write why
                self._fail(f"the forward to {self.to.socket} was refused")
            time.sleep(0.02)
        self._fail(f"no forward within {TIMEOUT_S:g}s")

    def _fail(self, what: str) -> None:
        said = self._last_line()
        self._stop_process()
        message = f"ssh could not reach the docker engine at {self.to.url} ({what}): {said}"
        raise ProviderUnavailableError(message.rstrip(": "), op="connect")

    def _last_line(self) -> str:
        with contextlib.suppress(OSError):
            lines = (self.dir / "ssh.log").read_text(errors="replace").splitlines()
            return next((line.strip() for line in reversed(lines) if line.strip()), "")
        return ""

    def _stop_process(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(2)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def close(self) -> None:
        """Stop the forward; a later ``ensure`` starts it again. Its private directory stays this
        tunnel's until the interpreter exits (never removed and made again: another user could
        take the name in between)."""
        with self._lock:
            if self._foreign:
                return
            self._stop_process()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


def _session_ended(code: int) -> bool:
    """Whether ssh ended because its remote command did (its exit status, 0-254), rather than by
    its own failure or a lost connection (255) or a signal (negative)."""
    return 0 <= code < 255


def _ping(path: str, deadline: float) -> bool | None:
    """``True`` when the socket answers ``/_ping`` over HTTP, ``False`` when it accepted and closed
    unanswered, ``None`` while nothing listens there yet."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            sock.connect(path)
        except OSError:
            return None
        try:
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            return sock.recv(64).startswith(b"HTTP/")
        except OSError:
            return False


def _spawn(argv: list[str], **streams: Any) -> subprocess.Popen[bytes]:
    """``argv`` started by the one spawner thread, which lives as long as this process: the child
    asks the kernel for SIGTERM when its parent thread ends (PR_SET_PDEATHSIG is tied to the
    thread that forked, so a worker thread, which may end any time, cannot be that parent)."""
    global _spawner
    with _tunnels_lock:
        if _spawner is None:
            _spawner = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="praisonai-ssh")
        spawner = _spawner
    return spawner.submit(_popen, argv, streams).result()


def _popen(argv: list[str], streams: dict[str, Any]) -> subprocess.Popen[bytes]:
    prctl = _prctl()  # looked up here: the forked child should only call it

    def die_with_parent() -> None:  # in the child, before ssh runs (Linux only)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        **streams,
        start_new_session=True,  # a terminal's Ctrl-C is ours to handle, then we stop it
        preexec_fn=die_with_parent,
    )


def _prctl() -> Any:
    """libc's ``prctl``, or ``None`` where there is none (not Linux)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PR_SET_PDEATHSIG = 1
_spawner: concurrent.futures.ThreadPoolExecutor | None = None
_tunnels: dict[Target, Tunnel] = {}
_tunnels_lock = threading.Lock()


def client(to: Target) -> Any:
    """docker-py's ``APIClient`` for the engine at ``to``, over its tunnel (started here, blocking);
    each request first makes sure the tunnel runs. Release it with :func:`release`."""
    with _tunnels_lock:
        if to not in _tunnels:
            _tunnels[to] = Tunnel(to)
        tunnel = _tunnels[to]
        tunnel.users += 1
    try:
        tunnel.ensure()  # before the client asks the engine its version: its own sentence
        return _client_class()(tunnel, base_url=f"unix://{tunnel.path}", max_pool_size=64)
    except BaseException:
        release(to)
        raise


def release(to: Target) -> None:
    """One client of ``to`` fewer; the last one stops its tunnel."""
    with _tunnels_lock:
        tunnel = _tunnels.get(to)
        if tunnel is None or tunnel.users == 0:
            return
        tunnel.users -= 1
        if tunnel.users == 0:
            tunnel.close()


@atexit.register
def _close_all() -> None:
    with _tunnels_lock:
        for tunnel in _tunnels.values():
            tunnel.close()
            shutil.rmtree(tunnel.dir, ignore_errors=True)
        _tunnels.clear()


def _forked() -> None:
    """In a forked child: the parent's tunnels stay the parent's (its exit must not stop them, nor
    may a restart here take their socket); the child's own pools start their own."""
    global _tunnels_lock, _spawner
    _tunnels_lock = threading.Lock()
    _spawner = None  # its thread is the parent's
    for tunnel in _tunnels.values():
        tunnel._foreign = True
        tunnel._lock = threading.Lock()
    _tunnels.clear()


os.register_at_fork(after_in_child=_forked)


def _client_class() -> Any:
    """An ``APIClient`` whose every request (``requests.Session.request``, public) first makes sure
    its tunnel runs. Made on first use: docker-py is imported lazily."""
    global _Client
    if _Client is None:
        import docker

        class TunnelClient(docker.APIClient):  # type: ignore[misc]  # docker-py is untyped
            def __init__(self, tunnel: Tunnel, **kwargs: Any) -> None:
                self.tunnel = tunnel  # before the constructor's own version request
                super().__init__(**kwargs)

            def request(self, *args: Any, **kwargs: Any) -> Any:
                self.tunnel.ensure()
                return super().request(*args, **kwargs)

        _Client = TunnelClient
    return _Client


_Client: Any = None
