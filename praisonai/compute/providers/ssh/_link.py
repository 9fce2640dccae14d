"""The live side of one SSH host: pooled connections, SFTP sessions, and channel transports.

A :class:`HostLink` is shared by every provider in the process that names the same host. It
keeps one authenticated connection open (more when sshd's ``MaxSessions`` refuses another
channel on it), reconnects when a connection has dropped, and lends out reused SFTP sessions.
All methods block; the provider calls them from worker threads.

A connection whose host falls silent (a network partition, a frozen host) is noticed by probing:
every ``keepalive_s`` a request the server must answer, and a probe unanswered for ``keepalive_s
x keepalive_count`` closes the connection. That ends its channels, so every call in flight on it
fails at once (``ChannelClosedError`` for a command that may have run) instead of waiting for
TCP to give up, and the next call connects again (``ProviderUnavailableError``: cannot reach).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from praisonai._errors import ExecError, ProviderUnavailableError
from praisonai.compute.providers.ssh._connect import SSHHost, connect
from praisonai.runtime.transport import Receiver, Transport

if TYPE_CHECKING:
    import paramiko

log = logging.getLogger("praisonai.ssh")

_OPEN_TIMEOUT_S = 10.0
#: The liveness probe: a global request with want-reply, which an SSH server must answer (OpenSSH
#: answers this one with "failure", which is as good an answer as any).
_PROBE = "keepalive@openssh.com"
_SFTP_IDLE_MAX = 4  # SFTP sessions kept for reuse per host; busier moments open more


class HostLink:
    """Connections to one host; see the module docstring."""

    def __init__(self, host: SSHHost, jump: HostLink | None) -> None:
        self.host = host
        self._jump = jump
        self._transports: list[paramiko.Transport] = []
        self._sftp_idle: list[paramiko.SFTPClient] = []
        self._connecting = threading.Lock()  # one connect at a time; guards _transports
        self._lock = threading.Lock()  # guards _sftp_idle (never held across the network)
        self.root = ""  # the instances root as an absolute path, once resolved
        self.shell_runs = False  # a host command ran through the login shell once
        self._shell = ""  # the login shell, once read
        self._tunnelled: list[HostLink] = []  # links whose connections go through this one's
        if jump is not None:
            jump._tunnelled.append(self)

    def transports(self) -> list[paramiko.Transport]:
        """The open connections, connecting (or reconnecting) when there is none."""
        with self._connecting:
            self._transports = [t for t in self._transports if t.is_active()]
            if not self._transports:
                self._transports.append(self._connect())
            return list(self._transports)

    def _connect(self) -> paramiko.Transport:
        via = self._jump.transports()[0] if self._jump is not None else None
        transport = connect(self.host, via)
        watch_liveness(transport, self.host, self._close_dead)
        return transport

    def _close_dead(self, transport: paramiko.Transport) -> None:
        """Close a connection that stopped answering: the connections tunnelled through this
        link's first (each would close its channel on a carrier already gone), then it."""
        for tunnelled in list(self._tunnelled):
            for inner in list(tunnelled._transports):  # a copy: no lock waits on a connect in flight
                close_quietly(inner)
        close_quietly(transport)

    def open_session(self) -> paramiko.Channel:
        """A new session channel: on an existing connection, or a new one when all refuse."""
        import paramiko

        for transport in self.transports():
            try:
                return transport.open_session(timeout=_OPEN_TIMEOUT_S)
            except paramiko.ChannelException:
                continue  # sshd's MaxSessions (default 10) is reached on this connection
            except (paramiko.SSHException, EOFError, OSError):
                continue  # it died just now; transports() drops it next time
        with self._connecting:
            transport = self._connect()
            self._transports.append(transport)
        try:
            return transport.open_session(timeout=_OPEN_TIMEOUT_S)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise ProviderUnavailableError(
                f"{self.host.label} refused a new channel: {exc}", op="exec"
            ) from None

    def run(self, command: str, timeout: float = 60.0) -> tuple[int, bytes, bytes]:
        """Run one command through the login shell; (exit status, stdout, stderr). For host-level
        work (placement, shutdown) where no instance helper exists.

        Stdin is closed at once (an rc file that reads it gets the end, not a hang) and what the
        login shell and its rc files print before the command (a banner, a MOTD) is cut off at a
        marker the command prints first. A shell that never runs it (``/bin/false``, nologin) is
        ``ProviderUnavailableError`` naming the login shell."""
        marker = f"praisonai-begins-{secrets.token_hex(8)}\n".encode()
        said = marker.decode().strip()
        # the stderr marker through sh: csh and fish spell ">&2" otherwise
        framed = f"printf '%s\\n' {said}; sh -c 'printf \"%s\\n\" {said} >&2'; {command}"
        status, out, err = self._run_raw(framed, timeout)
        if marker not in out:
            raise ProviderUnavailableError(
                f"{self.host.label} ran no command: {self.shell_said(status, err)}", op="exec"
            )
        return status, out.split(marker, 1)[1], err.split(marker, 1)[-1]

    def shell_said(self, status: int, err: bytes) -> str:
        """Why the login shell ran nothing, for an error message: the shell, its status, its word."""
        last = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return (
            f"the login shell {self.login_shell()} of {self.host.user!r} exited {status} ({last[0][:200]}); "
            f"give the user a POSIX login shell (chsh -s /bin/sh {self.host.user})"
        )

    def login_shell(self) -> str:
        """The user's login shell as the host's /etc/passwd names it (read over SFTP, which no
        login shell runs), or a description when it cannot be read."""
        if not self._shell:
            try:
                with self.sftp() as sftp, sftp.open("/etc/passwd", "rb") as f:
                    lines = f.read().decode(errors="replace").splitlines()
                found = [line.split(":")[6] for line in lines if line.startswith(f"{self.host.user}:")]
                self._shell = found[0] if found and len(found[0]) < 200 else ""
                self._shell = self._shell or "(not listed in /etc/passwd)"
            except (OSError, ProviderUnavailableError, IndexError):
                self._shell = "(unknown: /etc/passwd could not be read)"
        return self._shell

    def _run_raw(self, command: str, timeout: float) -> tuple[int, bytes, bytes]:
        import paramiko

        channel = self.open_session()
        try:
            channel.settimeout(timeout)
            channel.exec_command(command)
            channel.shutdown_write()
            err = bytearray()
            reader = threading.Thread(target=lambda: err.extend(_read_all(channel.recv_stderr)), daemon=True)
            reader.start()
            out = _read_all(channel.recv)
            reader.join(timeout)
            status = channel.recv_exit_status()
            transport = channel.get_transport()
            if status == -1 and (transport is None or not transport.is_active()):
                raise ProviderUnavailableError(
                    f"the connection to {self.host.label} was lost during a host command", op="exec"
                )
            return status, out, bytes(err)
        except (TimeoutError, paramiko.SSHException, EOFError, OSError) as exc:
            raise ExecError(f"{self.host.label}: a host command failed: {exc}", op="exec") from None
        finally:
            channel.close()

    @contextlib.contextmanager
    def sftp(self) -> Iterator[paramiko.SFTPClient]:
        """A reused SFTP session for the duration of the block (one user at a time). SFTP answers
        such as FileNotFoundError pass through; a dead connection is ProviderUnavailableError."""
        import paramiko

        with self._lock:
            client = self._sftp_idle.pop() if self._sftp_idle else None
        if client is None or not _usable(client):
            channel = self.open_session()
            try:
                channel.invoke_subsystem("sftp")
                client = paramiko.SFTPClient(channel)
            except (paramiko.SSHException, EOFError, OSError) as exc:
                raise ProviderUnavailableError(
                    f"{self.host.label}: no SFTP session: {exc}", op="sftp"
                ) from None
        try:
            yield client
        except (paramiko.SSHException, EOFError, OSError) as exc:
            if _usable(client):
                self._give_back(client)
                raise
            client.close()
            raise ProviderUnavailableError(
                f"{self.host.label}: the connection dropped: {exc}", op="sftp"
            ) from None
        except BaseException:
            self._give_back(client)
            raise
        self._give_back(client)

    def _give_back(self, client: paramiko.SFTPClient) -> None:
        with self._lock:
            if len(self._sftp_idle) < _SFTP_IDLE_MAX:
                self._sftp_idle.append(client)
                return
        client.close()


def watch_liveness(
    transport: paramiko.Transport, host: SSHHost, close: Callable[[paramiko.Transport], None]
) -> None:
    """Probe ``transport`` every ``host.keepalive_s`` from a daemon thread, and ``close`` it when
    a probe goes unanswered for ``keepalive_s x keepalive_count`` or cannot be sent (see the
    module docstring)."""
    if host.keepalive_s > 0:
        name = f"praisonai-ssh-liveness-{host.label}"
        threading.Thread(target=_heartbeat, args=(transport, host, close), name=name, daemon=True).start()


def close_quietly(transport: paramiko.Transport) -> None:
    """Close ``transport``; one whose socket already failed has nothing left to say."""
    import paramiko

    with contextlib.suppress(paramiko.SSHException, EOFError, OSError):
        transport.close()


def _heartbeat(
    transport: paramiko.Transport, host: SSHHost, close: Callable[[paramiko.Transport], None]
) -> None:
    silent_limit = host.keepalive_s * host.keepalive_count
    while transport.is_active():
        time.sleep(host.keepalive_s)
        # The probe runs in a thread of its own: sending may block on a full socket buffer.
        failed: list[bool] = []
        probe = threading.Thread(target=_probe, args=(transport, failed), daemon=True)
        probe.start()
        probe.join(silent_limit)
        if (probe.is_alive() or failed) and transport.is_active():
            log.warning(
                "%s did not answer for %g s (keepalive_s=%g x keepalive_count=%d): closing the connection",
                host.label,
                silent_limit,
                host.keepalive_s,
                host.keepalive_count,
            )
            close(transport)  # ends its channels: their readers see the end, and calls fail
            return


def _probe(transport: paramiko.Transport, failed: list[bool]) -> None:
    """Send one probe and wait for its answer (returns at once when the transport closes); a
    probe that could not be sent (its socket failed) appends to ``failed``."""
    import paramiko

    try:
        transport.global_request(_PROBE, wait=True)
    except (paramiko.SSHException, EOFError, OSError):
        failed.append(True)


def _usable(client: paramiko.SFTPClient) -> bool:
    channel = client.get_channel()
    transport = channel.get_transport() if channel is not None else None
    return channel is not None and not channel.closed and transport is not None and transport.is_active()


def _read_all(recv: Any) -> bytes:
    chunks = []
    while data := recv(1 << 16):
        chunks.append(data)
    return b"".join(chunks)


class SSHChannelTransport(Transport):
    """A command on the host, attached through one SSH session channel."""

    def __init__(self, channel: paramiko.Channel, command: str) -> None:
        self._channel = channel
        channel.exec_command(command)

    def _pump(self, on_stdout: Receiver, on_stderr: Receiver) -> None:
        # paramiko buffers the two streams apart: one blocking reader each
        errors = threading.Thread(
            target=self._drain, args=(self._channel.recv_stderr, on_stderr), daemon=True
        )
        errors.start()
        self._drain(self._channel.recv, on_stdout)
        errors.join()

    @staticmethod
    def _drain(recv: Any, sink: Receiver) -> None:
        while True:
            try:
                data = recv(1 << 16)
            except (OSError, EOFError):
                return
            if not data:
                return
            sink(data)

    def send(self, data: bytes) -> None:
        self._channel.sendall(data)  # OSError once the channel is closed

    def send_nowait(self, data: bytes) -> int:
        if len(data) > 8192 or not self._channel.send_ready():
            return 0
        try:
            return int(self._channel.send(data))
        except OSError:
            return 0  # send() reports it

    def alive(self) -> bool:
        transport = self._channel.get_transport()
        return not self._channel.exit_status_ready() and transport is not None and transport.is_active()

    def exit_code(self) -> int | None:
        return self._channel.exit_status if self._channel.exit_status_ready() else None

    def close(self) -> None:
        self._channel.close()
