"""An instance's main channel: the exec helper its container started on its own main stdin
(``watchdog.main_command``), opened by attaching (~1 ms) instead of a ``docker exec`` (~50 ms).

At most once per instance, by the process that owns it: the creator, on its first channel after
``provision`` returned (provision's own steps use exec channels), or the process that adopted it
with the key its creator handed off (the helper's nonce, sent as the first line once attached;
the container's command carries only its digest, which ``adopt`` checks a key against, so no
image committed from it and no process listing holds the key). The container is made with
``StdinOnce``: when that client disconnects (or dies), the engine closes the stdin, and the
helper stops its jobs and ends, as an exec helper does. Every other channel is a ``docker
exec``; so is this one when the attach fails. The key is never printed or put in a message.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from collections.abc import Callable
from typing import Any

import anyio

from praisonai import _limits
from praisonai._errors import ChannelClosedError, ConfigError, InstanceNotFoundError
from praisonai._ledger import Ledger
from praisonai.compute.lifecycle import check_home, owner_tag
from praisonai.compute.providers.docker import _attach
from praisonai.compute.providers.docker._client import container_name, sdk
from praisonai.compute.providers.docker._users import user_of
from praisonai.compute.watchdog import HELPER_ENDED
from praisonai.runtime.channel import HELPER, Channel, new_nonce
from praisonai.runtime.transport import Transport

#: Where the nonce's digest sits in the container's command (``watchdog.main_command``'s argv).
DIGEST_AT = 6
#: Where the watchdog's notices go inside the instance (its stdout is the helper's stream).
WATCHDOG_LOG = "/tmp/.praisonai-watchdog.log"


def new_key() -> str:
    """A fresh nonce for the helper on a new container's main stdin (the request nonces' form)."""
    return new_nonce()


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def command(watchdog: list[str], spool: str, nonce: str, user: str | None) -> list[str]:
    """A new container's main command: ``watchdog`` and, on the main stdin, the helper that will
    take ``nonce`` (only its digest is in the command), whose commands run as ``user``
    (``compute.separation``)."""
    from praisonai.compute.watchdog import main_command

    return main_command(watchdog, HELPER, spool, digest(nonce), WATCHDOG_LOG, user)


class MainKeys:
    """Which instances' main channels this process may still open, and with which nonce.

    A key is ``made`` with the container, ``armed`` once provision returned (or ``adopt``ed), and
    ``taken`` by the first channel, or ``handed`` off to another process: each only once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made: dict[str, str] = {}
        self._armed: dict[str, str] = {}
        self._adopted: set[str] = set()  # the digests of the keys adopted: each is one use

    def made(self, instance_id: str, nonce: str) -> None:
        with self._lock:
            self._made[instance_id] = nonce

    def arm(self, instance_id: str) -> None:
        with self._lock:
            nonce = self._made.pop(instance_id, None)
            if nonce is not None:
                self._armed[instance_id] = nonce

    def adopt(self, instance_id: str, key: str) -> bool:
        """Arm an adopted key; ``False`` when this process adopted it before (it is used)."""
        with self._lock:
            if digest(key) in self._adopted:
                return False
            self._adopted.add(digest(key))
            self._armed[instance_id] = key
            return True

    def rearm(self, instance_id: str, key: str) -> None:
        """A fresh key for an instance whose helper starts again (a resumed container)."""
        with self._lock:
            self._armed[instance_id] = key

    def hand(self, instance_id: str) -> str | None:
        """The key, given away: this process will not open that channel itself."""
        with self._lock:
            self._made.pop(instance_id, None)
            return self._armed.pop(instance_id, None)

    def take(self, instance_id: str) -> str | None:
        """The key for the instance's first channel, once; none before provision returned (its
        own steps use exec channels)."""
        with self._lock:
            return self._armed.pop(instance_id, None)

    def drop(self, instance_id: str) -> None:
        self.hand(instance_id)


def check_key(inspected: dict[str, Any], instance_id: str, key: str) -> str:
    """The container's working dir, once ``key`` is its main channel's nonce.

    Raises:
        ConfigError: it is not (or the container has no main channel).
    """
    argv = (inspected.get("Config") or {}).get("Cmd") or []
    kept = argv[DIGEST_AT] if len(argv) > DIGEST_AT and argv[:1] == ["/bin/sh"] else ""
    if not kept or not hmac.compare_digest(kept.encode(), digest(key).encode()):
        raise ConfigError(
            f"the key given to adopt docker instance {instance_id} is not its main channel's; "
            "pass the key handoff_key returned for this instance",
            op="adopt",
        )
    return str((inspected.get("Config") or {}).get("WorkingDir") or "/")


def check_owner(instance_id: str) -> None:
    """That this process claimed ``instance_id``: the ledger names it as the instance's owner (a
    claim does so in the transaction that takes the key out of the ledger).

    Raises:
        ConfigError: another process claimed it, or nobody did yet.
        InstanceNotFoundError: the ledger has no such instance.
    """
    entry = Ledger.default().get(instance_id)
    if entry is None:
        raise InstanceNotFoundError(f"no docker instance {instance_id} in this home's ledger", op="adopt")
    if entry.state == "warm":
        raise ConfigError(
            f"docker instance {instance_id} waits in a warm pool, claimed by nobody: claim it "
            "(Sandbox.create, or praisonai.compute.warm.claim) instead of adopting it",
            op="adopt",
        )
    if entry.owner != owner_tag():
        raise ConfigError(used_key(instance_id), op="adopt")


def used_key(instance_id: str) -> str:
    return (
        f"the handoff key of docker instance {instance_id} is used: another process claimed the "
        "instance and owns its main channel; claim a warm instance of your own"
    )


def attach(
    api: Callable[[], Any], socket_path: str | None, container: str, nonce: str, end_secret: str
) -> tuple[Any, bytes]:
    """The attached socket (raw over a local engine's unix socket; through docker-py's
    ``attach_socket`` otherwise) and its first bytes; the helper's nonce and the secret its
    waiter will say its end with sent (``go_line``).

    Raises:
        InstanceNotFoundError: the container is gone or stopped.
        OSError: any other failure to attach.
    """
    if socket_path is not None:
        sock, initial = _attach.attach_unix(socket_path, container, _limits.MAIN_CHANNEL_HELLO_S)
    else:
        docker = sdk()

        params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        try:
            stream = api().attach_socket(container, params=params)
        except docker.errors.NotFound:
            raise InstanceNotFoundError(f"no docker container {container}", op="exec") from None
        except docker.errors.APIError as exc:
            raise ConnectionError(f"docker refused the attach: {exc.status_code}") from None
        sock, initial = getattr(stream, "_sock", stream), b""
        sock.settimeout(None)
    try:
        sock.sendall(_attach.go_line(nonce, end_secret))
    except OSError:
        sock.close()
        raise
    return sock, initial


async def open_channel(
    connect: Callable[[str], tuple[Any, bytes]], alive: Callable[[], bool], spool: str, nonce: str
) -> Channel | None:
    """The main channel, or ``None`` when it cannot be opened (refused, already used by another
    process, no hello in time): the caller opens an exec channel instead. ``connect(end_secret)``
    attaches and sends the go line.

    Raises:
        InstanceNotFoundError: the container is gone.
    """
    from praisonai.compute._threads import run_blocking

    # The end of the channel is said by a line a command cannot write (watchdog.main_command):
    # a fresh secret per attach, in memory here and in the helper's waiter only.
    end_secret = secrets.token_hex(16)
    try:
        sock, initial = await run_blocking(lambda: connect(end_secret))
    except InstanceNotFoundError:
        raise
    except (OSError, ValueError):
        return None
    transport = _attach.AttachTransport(sock, initial, alive)

    def opened(argv: list[str]) -> Transport:
        return transport

    try:
        with anyio.fail_after(_limits.MAIN_CHANNEL_HELLO_S):
            return await Channel.open(opened, spool, nonce=nonce, ended=f"{HELPER_ENDED} {end_secret}")
    except (TimeoutError, ChannelClosedError):
        transport.close()  # its helper never answered: gone with an earlier client
        return None


class MainChannels:
    """A ``DockerEngine``'s main channels: adopted, handed off and opened as an instance's first
    channel (see the module docstring). Built from the engine's keys (``MainKeys``), its client
    (``connect``) and, on a local engine, its unix socket (``socket_path``, else ``None``)."""

    def __init__(self, *, keys: MainKeys, connect: Callable[[], Any], socket_path: str | None) -> None:
        self._keys, self._connect, self._socket = keys, connect, socket_path

    def adopt(self, instance_id: str, key: str) -> tuple[str, str | None]:
        """The container's working dir and command user, once ``key`` is adopted for the
        instance's main channel.

        A key is one use, and only the claimer's: it is refused unless the ledger names this
        process as the instance's owner (the claim that took the key out of the ledger did), and
        refused once this process adopted it already, so no second process attaches to the main
        channel (its hang-up would end the owner's helper and the commands running there).

        Blocking (one engine call, ~1 ms on a local engine, and one ledger read): the key is
        checked against the container's command.

        Raises:
            ConfigError: ``key`` is not this instance's, or it is used (another process claimed
                the instance, or this one adopted it already).
            InstanceNotFoundError: no such container, or no such instance in the ledger.
        """
        inspected = self.inspect_now(container_name(instance_id))
        check_home(instance_id, (inspected.get("Config") or {}).get("Labels") or {}, "adopt")
        workdir = check_key(inspected, instance_id, key)
        check_owner(instance_id)
        if not self._keys.adopt(instance_id, key):
            raise ConfigError(used_key(instance_id), op="adopt")
        return workdir, user_of(inspected)

    def inspect_now(self, container: str) -> dict[str, Any]:
        """The container's inspection (blocking): raw over a local engine's socket, else docker-py's."""
        if self._socket is not None:
            return _attach.inspect_unix(self._socket, container, _limits.MAIN_CHANNEL_HELLO_S)
        docker = sdk()

        try:
            return dict(self._connect().inspect_container(container))
        except docker.errors.NotFound:
            raise InstanceNotFoundError(f"no docker container {container}", op="adopt") from None

    async def open(self, instance_id: str, spool: str) -> Channel | None:
        """The instance's main channel when this process may open it; ``None`` when it may not,
        or the attach failed (the caller opens an exec channel then)."""
        nonce = self._keys.take(instance_id)
        if nonce is None:
            return None
        name = container_name(instance_id)
        pid: list[int] = []
        channel = await open_channel(
            lambda end_secret: attach(self._connect, self._socket, name, nonce, end_secret),
            lambda: self._helper_alive(name, pid),
            spool,
            nonce,
        )
        if channel is not None:
            pid.append(channel.helper_pid)
        return channel

    def _helper_alive(self, container: str, pid: list[int]) -> bool:
        """Whether the main helper (process ``pid[0]``, once known) still runs (blocking: an
        exec, asked only when a reply is late)."""
        inspected = self.inspect_now(container)
        if not (inspected.get("State") or {}).get("Running"):
            return False
        if not pid:
            return True
        api = self._connect()
        exec_id = api.exec_create(container, ["/bin/sh", "-c", 'kill -0 "$1"', "sh", str(pid[0])])["Id"]
        api.exec_start(exec_id)
        return bool(api.exec_inspect(exec_id).get("ExitCode") == 0)
