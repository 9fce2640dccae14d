"""Reaching one SSH host: its settings (what users write), host-key checking and authentication.

One function, :func:`connect`, turns an :class:`SSHHost` into an authenticated paramiko
``Transport`` within the host's ``connect_timeout``, or raises one clear error:
``ProviderUnavailableError`` (no answer), ``HostKeyError`` (unknown or changed host key) or
``AuthenticationError`` (every credential refused). paramiko is imported lazily.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from praisonai._errors import AuthenticationError, ConfigError, HostKeyError, ProviderUnavailableError
from praisonai._files import check_regular_file
from praisonai.compute.options import bounded

if TYPE_CHECKING:
    import paramiko

_DEFAULT_KEYS = ("id_ed25519", "id_ecdsa", "id_rsa")
_HOST_STRING = re.compile(r"^(?:(?P<user>[^@\s]+)@)?(?P<host>\[[^\]]+\]|[^:\s]+)(?::(?P<port>\d+))?$")


class SSHHost(BaseModel):
    """One host instances may be placed on. Frozen: it also keys the host's shared connection."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str
    port: int = Field(default=22, ge=1, le=65535)
    user: str = Field(default_factory=getpass.getuser)
    key_file: str | None = None
    """Private key to offer. Without one, the agent's keys and ~/.ssh/id_* are offered."""
    key_passphrase: SecretStr | None = None
    password: SecretStr | None = None
    """Password authentication happens only when a password is given here."""
    use_agent: bool = True
    known_hosts: str | None = None
    """known_hosts file to check the host key against (default ``~/.ssh/known_hosts``)."""
    host_key_policy: Literal["strict", "trust_on_first_use"] = "strict"
    """``strict``: the key must already be in known_hosts. ``trust_on_first_use``: an unknown
    host's key is recorded there; a key that differs from a recorded one is still refused."""
    jump: SSHHost | None = None
    """A bastion to reach this host through (an SSH ``direct-tcpip`` channel, like ``ssh -J``)."""
    root: str = ".praisonai/instances"
    """Where instance workspaces live on the host; relative to the login directory unless absolute."""
    connect_timeout: Annotated[float, bounded("connect_timeout")] = 10.0
    """Seconds for TCP connect, SSH handshake and authentication together."""
    start_timeout: Annotated[float, bounded("start_timeout")] = 30.0
    """Seconds for an instance's helper to start on the host: the login shell and its rc files
    run first (a slow start is not charged to a command's timeout; past this, one sentence
    naming the login shell)."""
    keepalive_s: Annotated[float, bounded("keepalive_s")] = 5.0
    """Seconds between liveness probes on each connection (0: no probes, and a silent host may
    hang a call until TCP gives up, many minutes later)."""
    keepalive_count: Annotated[int, bounded("keepalive_count")] = 2
    """A probe unanswered for ``keepalive_s x keepalive_count`` seconds marks the connection dead:
    it is closed, calls in flight fail (``ChannelClosedError``: the command may have run) and the
    next call connects anew. So a silent host is noticed within ``keepalive_s x (keepalive_count
    + 1)`` seconds: 15 s by default."""

    @classmethod
    def parse(cls, text: str, **defaults: Any) -> SSHHost:
        """``user@host:port`` (user and port optional, ``[v6]:port`` too) plus other fields."""
        match = _HOST_STRING.match(text.strip())
        if not match:
            raise ConfigError(f"cannot read SSH host {text!r}: expected user@host[:port]", op="config")
        fields = {k: v for k, v in match.groupdict().items() if v is not None}
        fields["host"] = fields["host"].strip("[]")
        return cls(**{**defaults, **fields})

    @property
    def label(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def known_hosts_name(self) -> str:
        """How known_hosts names this host: ``host`` on port 22, else ``[host]:port``."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"


def connect(host: SSHHost, via: paramiko.Transport | None = None) -> paramiko.Transport:
    """An authenticated transport to ``host`` (through ``via``, the jump host's, when given)."""
    import paramiko

    deadline = time.monotonic() + host.connect_timeout
    sock = _open_socket(host, via, deadline)
    transport = paramiko.Transport(sock)
    try:
        remaining = max(deadline - time.monotonic(), 0.01)
        transport.banner_timeout = transport.handshake_timeout = transport.auth_timeout = remaining
        known = _known_keys(host)
        _prefer_known_key_types(transport, known)
        try:
            transport.start_client(timeout=remaining)  # returns quietly at the timeout
            if not transport.initial_kex_done:
                raise paramiko.SSHException("no answer")
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise ProviderUnavailableError(
                f"{host.label} did not complete the SSH handshake within {host.connect_timeout:g} s: {exc}",
                op="connect",
            ) from None
        _check_host_key(host, transport.get_remote_server_key(), known)
        _authenticate(host, transport)
        return transport  # the caller probes its liveness (``_ssh_link``)
    except BaseException:
        transport.close()
        raise


def _open_socket(host: SSHHost, via: paramiko.Transport | None, deadline: float) -> Any:
    import paramiko

    timeout = max(deadline - time.monotonic(), 0.01)
    try:
        if via is not None:
            return _Tunnel(
                via.open_channel("direct-tcpip", (host.host, host.port), ("127.0.0.1", 0), timeout=timeout)
            )
        sock = socket.create_connection((host.host, host.port), timeout=timeout)
    except (OSError, paramiko.SSHException) as exc:
        through = f" through {host.jump.label}" if host.jump else ""
        raise ProviderUnavailableError(f"cannot reach {host.label}{through}: {exc}", op="connect") from None
    # Without TCP_NODELAY every small request waits for the peer's delayed ACK: ~40 ms a round trip.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _Tunnel:
    """The jump host's channel as the socket of the connection tunnelled through it.

    Ending a connection closes its socket: paramiko's thread does, and so does ``close()``. Over a
    carrier that has failed (its writes raise EOFError) that close would raise out of paramiko's
    thread, or out of whoever closed it, long after anyone could act on it; it is quiet here."""

    def __init__(self, channel: paramiko.Channel) -> None:
        self._channel = channel

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)

    def close(self) -> None:
        import paramiko

        with contextlib.suppress(paramiko.SSHException, EOFError, OSError):
            self._channel.close()


# ---- host keys -------------------------------------------------------------------------------


def _known_hosts_path(host: SSHHost) -> Path:
    return Path(host.known_hosts or "~/.ssh/known_hosts").expanduser()


def _known_keys(host: SSHHost) -> dict[str, paramiko.PKey]:
    """The keys known_hosts records for this host, by key type ({} when none or no file)."""
    import paramiko

    path = _known_hosts_path(host)
    if not path.is_file():
        if host.known_hosts and host.host_key_policy == "strict":
            raise ConfigError(f"known_hosts file {path} does not exist", op="connect")
        return {}
    keys = paramiko.HostKeys()
    try:
        keys.load(str(path))
    except (OSError, paramiko.SSHException) as exc:
        raise ConfigError(f"cannot read known_hosts file {path}: {exc}", op="connect") from None
    found = keys.lookup(host.known_hosts_name)
    return dict(found) if found is not None else {}


def _prefer_known_key_types(transport: paramiko.Transport, known: dict[str, paramiko.PKey]) -> None:
    """Ask for a host key of a type we hold, so a host with several keys is not a false mismatch."""
    if not known:
        return
    options = transport.get_security_options()
    wanted = [t for t in options.key_types if t in known or (t.startswith("rsa-sha2") and "ssh-rsa" in known)]
    options.key_types = wanted + [t for t in options.key_types if t not in wanted]


def _check_host_key(host: SSHHost, key: paramiko.PKey, known: dict[str, paramiko.PKey]) -> None:
    path = _known_hosts_path(host)
    shown = f"{key.get_name()} {key.fingerprint}"
    if not known:
        if host.host_key_policy == "trust_on_first_use":
            _record_key(path, host, key)
            return
        raise HostKeyError(
            f"{host.label} is not in {path} (it offered {shown}); add its key there "
            f"(ssh-keyscan -p {host.port} {host.host} >> {path}, after checking the fingerprint) "
            f"or pass host_key_policy='trust_on_first_use'",
            op="connect",
        )
    if known.get(key.get_name()) != key:
        raise HostKeyError(
            f"{host.label} offered {shown}, which does not match the key recorded in {path}; "
            f"refusing to connect (the host was reinstalled, or someone is intercepting the connection)",
            op="connect",
        )


def _record_key(path: Path, host: SSHHost, key: paramiko.PKey) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a") as f:  # one short append: atomic next to other writers
        f.write(f"{host.known_hosts_name} {key.get_name()} {key.get_base64()}\n")


# ---- authentication --------------------------------------------------------------------------


def _authenticate(host: SSHHost, transport: paramiko.Transport) -> None:
    """Offer the keys, then the password if one was given; fail listing everything tried."""
    import paramiko

    tried: list[str] = []
    for source, key in _candidate_keys(host):
        try:
            transport.auth_publickey(host.user, key)
            return
        except paramiko.BadAuthenticationType:
            break  # the server takes no keys at all
        except paramiko.AuthenticationException:
            tried.append(source)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise ProviderUnavailableError(
                f"{host.label} dropped the connection during authentication: {exc}", op="connect"
            ) from None
    if host.password is not None:
        try:
            transport.auth_password(host.user, host.password.get_secret_value())
            return
        except paramiko.AuthenticationException:
            tried.append("the password")
    raise AuthenticationError(
        f"{host.label} refused authentication as {host.user!r} "
        f"(tried: {', '.join(tried) or 'nothing: no key file, agent key or ~/.ssh/id_* key was found'})",
        op="connect",
    )


def _candidate_keys(host: SSHHost) -> list[tuple[str, Any]]:
    import paramiko

    passphrase = host.key_passphrase.get_secret_value() if host.key_passphrase else None
    if host.key_file:
        return [(f"key {host.key_file}", _load_key(Path(host.key_file).expanduser(), passphrase))]
    keys: list[tuple[str, Any]] = []
    if host.use_agent and os.environ.get("SSH_AUTH_SOCK"):
        keys += [(f"agent key {k.fingerprint}", k) for k in paramiko.Agent().get_keys()]
    for name in _DEFAULT_KEYS:
        path = Path.home() / ".ssh" / name
        if path.is_file():
            try:
                keys.append((f"key {path}", _load_key(path, passphrase)))
            except ConfigError:
                continue  # an encrypted default key without a passphrase is skipped, as ssh would ask
    return keys


def _load_key(path: Path, passphrase: str | None) -> Any:
    import paramiko

    try:
        check_regular_file(path, "SSH key file")  # paramiko opens it itself: a FIFO would block forever
        return paramiko.PKey.from_path(path, passphrase)
    except ConfigError:
        raise
    except FileNotFoundError:
        raise ConfigError(f"SSH key file {path} does not exist", op="connect") from None
    except paramiko.PasswordRequiredException:
        raise ConfigError(f"SSH key {path} is encrypted: pass key_passphrase", op="connect") from None
    except (OSError, ValueError, paramiko.SSHException) as exc:
        raise ConfigError(f"cannot load SSH key {path}: {exc}", op="connect") from None
