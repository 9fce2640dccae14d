"""A terminal in an SSH instance (``Capability.PTY``): a session channel with a pty (sshd's
``pty-req``), resized by ``window-change``. It runs as the instance's commands do (the same
user, clean environment and instance marker); close kills, on the host, every process carrying
its own marker (also those that left its session)."""

from __future__ import annotations

import contextlib
import secrets
import shlex
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import anyio
import anyio.to_thread

from praisonai._errors import PraisonAIError
from praisonai.compute.abilities.pty import KILL_MARKED_SH, Pty, env_lines
from praisonai.compute.providers.ssh import _files

if TYPE_CHECKING:
    from praisonai.compute.providers.ssh._link import HostLink

_CHUNK = 64 * 1024


class SSHPty(Pty):
    """``command`` (a shell command line for the host) on a pty of ``cols`` x ``rows``; ``marker``
    (``NAME=token``) is in the environment of everything it starts."""

    def __init__(self, link: HostLink, command: str, *, term: str, cols: int, rows: int, marker: str) -> None:
        self._link, self._marker = link, marker
        self._channel = link.open_session()
        try:
            self._channel.get_pty(term=term, width=cols, height=rows)
            self._channel.exec_command(command)
        except BaseException:
            self._channel.close()
            raise
        self._closed = False

    async def _send(self, data: bytes) -> None:
        if not self._closed:
            await anyio.to_thread.run_sync(self._channel.sendall, data)

    async def _receive(self) -> bytes:
        if self._closed:
            return b""
        try:
            return bytes(await anyio.to_thread.run_sync(self._channel.recv, _CHUNK, abandon_on_cancel=True))
        except (OSError, EOFError):  # the connection died
            return b""

    async def resize(self, cols: int, rows: int) -> None:
        if not self._closed:
            with contextlib.suppress(OSError, EOFError):  # ended meanwhile: no size to set
                await anyio.to_thread.run_sync(lambda: self._channel.resize_pty(width=cols, height=rows))

    async def wait(self) -> int:
        return int(await anyio.to_thread.run_sync(self._channel.recv_exit_status, abandon_on_cancel=True))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        kill = shlex.join(["sh", "-c", KILL_MARKED_SH, "sh", self._marker])
        with (
            anyio.CancelScope(shield=True),
            contextlib.suppress(PraisonAIError, OSError, EOFError),
        ):  # host gone
            await anyio.to_thread.run_sync(self._link.run, kill)
        self._channel.close()


#: Sources the terminal's env file (private, in the instance's meta directory), removes it, then
#: runs the rest: the env's values never appear on a command line.
_START = 'set -a && . "$0" && . "$1" && rm -f -- "$1" && set +a && cd -- "$2" && shift 2 && exec "$@"'


class Place(Protocol):
    """Where an instance lives on its host, as a terminal needs it (the provider's place)."""

    @property
    def link(self) -> HostLink: ...
    @property
    def meta(self) -> str: ...
    def clean_env(self) -> list[str]: ...


PlaceT = TypeVar("PlaceT", bound=Place)


class SSHTerminals(Generic[PlaceT]):
    """Terminals in a provider's SSH instances (``Terminals``), from its collaborators: ``awake``
    gives where an instance lives (resumed when paused), ``host_path`` maps an instance path
    onto its host (refusing anything outside the workspace)."""

    def __init__(
        self, awake: Callable[[str], Awaitable[PlaceT]], host_path: Callable[[PlaceT, str], str]
    ) -> None:
        self._awake, self._host_path = awake, host_path

    async def open(
        self,
        instance_id: str,
        command: list[str] | None,
        cols: int,
        rows: int,
        cwd: str | None,
        env: Mapping[str, str],
    ) -> SSHPty:
        """``command`` (``None``: bash, else sh, interactive) on a pty in ``cwd``, with the
        instance's clean env (``NAME=value`` words: no secrets), its bound env and ``env``
        (through a 0600 file, sourced and removed before the program starts)."""
        place = await self._awake(instance_id)
        link, meta, where = place.link, place.meta, self._host_path(place, cwd or ".")
        token = secrets.token_hex(16)
        marker = f"PRAISONAI_PTY={token}"
        env_file = f"{meta}/pty-{token}.env"
        text = env_lines(env)
        await anyio.to_thread.run_sync(_files.write, link, env_file, text, "the terminal's env", meta)
        program = command or ["sh", "-c", 'exec "$(command -v bash || echo /bin/sh)" -i']
        term = env.get("TERM", "xterm")
        words = [
            "env",
            "-i",
            *place.clean_env(),
            marker,
            f"TERM={term}",
            "sh",
            "-c",
            _START,
            f"{meta}/env",
            env_file,
            where,
        ]
        line = "exec " + shlex.join([*words, *program])
        return await anyio.to_thread.run_sync(
            lambda: SSHPty(link, line, term=term, cols=cols, rows=rows, marker=marker)
        )
