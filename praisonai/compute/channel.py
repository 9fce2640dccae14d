"""The channel-backed provider: a bidirectional byte stream into an instance becomes everything else.

A provider that can start a process inside an instance with stdin/stdout/stderr attached (docker
exec, an SSH channel, a local pipe) implements :meth:`ChannelMixin._transport` and
:meth:`ChannelMixin._channel_path`; the mixin starts the POSIX-sh helper
(``praisonai.runtime``) over that stream, keeps one channel per instance (``_channels``), and
turns it into exec with streaming and whole-file reads and writes, and into the ``processes``
(background processes, ``bind_env``) and ``sessions`` parts it holds. A provider overrides any of
those with a native call, or holds a part of its own, where it has a better one (local spawns its
commands directly; ssh writes over SFTP; E2B reads process output through envd). Upload and
download stay the provider's own (an archive API, SFTP, a copy).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import shlex
from abc import abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Literal

from praisonai import _limits
from praisonai._errors import ExecError, UnsupportedFeatureError
from praisonai._types import Capability, ExecRequest, ExecResult, ProcessInfo
from praisonai.compute import _activity
from praisonai.compute.abilities import part
from praisonai.compute.base import ComputeProvider
from praisonai.compute.files import FileTree, ShellFiles
from praisonai.compute.separation import hand_over
from praisonai.runtime.channel import Channel
from praisonai.runtime.pool import ChannelPool
from praisonai.runtime.session import ShellSession
from praisonai.runtime.transport import Transport


class ChannelMixin(ComputeProvider):
    """Exec, processes, sessions, ``bind_env`` and files through the instance's helper.

    A provider subclasses it (``class DockerEngine(ChannelMixin, ComputeProvider)``) and implements
    ``_transport`` (and ``_channel_path``, which the default ``_read``, ``_write`` and
    ``_channel_cwd`` use); it then holds the ``processes`` and ``sessions`` parts below, whose
    capabilities follow.
    """

    #: Whether a mount at the working dir is the instance's own volume (a pod's emptyDir or
    #: claim), handed to the commands' uid as the rest is, rather than maybe a host's directory.
    own_volumes = False

    # ---- what the provider supplies ----------------------------------------------------------

    @abstractmethod
    def _transport(self, instance_id: str, argv: list[str]) -> Transport:
        """Start ``argv`` inside the instance with stdin/stdout/stderr attached (blocking)."""

    def _session_transport(self, instance_id: str, argv: list[str]) -> Transport:
        """Start a session's shell ``argv`` (blocking); by default as any other transport."""
        return self._transport(instance_id, argv)

    @functools.cached_property
    def file_tree(self) -> FileTree:
        """The generic files part, naming paths as the channel does (``_channel_path``)."""
        return ShellFiles(self.execute, target=self._channel_path)

    async def _channel_path(self, instance_id: str, path: str) -> str:
        """``path`` as the user wrote it (relative to the instance's working dir, or absolute),
        as an absolute path inside the instance."""
        raise UnsupportedFeatureError(f"the {self.name} provider maps no paths for its channel", op="exec")

    async def _channel_cwd(self, instance_id: str, cwd: str | None) -> str:
        """``cwd`` as an absolute path inside the instance (default: its working dir)."""
        return await self._channel_path(instance_id, cwd or ".")

    def _spool(self, instance_id: str) -> str:
        """Where the helper keeps spooled output inside the instance."""
        return "/tmp/.praisonai"

    async def _session_places(self, instance_id: str, cwd: str | None) -> tuple[str, str]:
        """Where a session's shell starts (``cwd`` as ``_channel_cwd`` makes it) and the bound-env
        file it reads (``env`` in the spool, by which session.sh also finds the spool), as its
        shell sees them: by default as the helper does."""
        return await self._channel_cwd(instance_id, cwd), f"{self._spool(instance_id)}/env"

    async def _command_user(self, instance_id: str) -> str | None:
        """``"UID:GID"`` that the instance's commands, sessions and file requests run as, apart
        from its helper (``compute.separation``), or ``None``: they share the helper's user.
        Default: None."""
        return None

    async def _after_setup(self, instance_id: str) -> None:
        """What packages and setup (root's) made in the working dir is the commands' uid's."""
        await self._hand_over(instance_id, await self._channel_cwd(instance_id, None), "provision")

    async def _hand_over(self, instance_id: str, where: str, op: str) -> None:
        """What root owns under ``where`` becomes the commands' uid's (``separation.hand_over``;
        a mount there keeps its owners unless :attr:`own_volumes`)."""
        user = await self._command_user(instance_id)
        if user is not None:
            await hand_over(self, instance_id, where, user, op, own_volume=self.own_volumes)

    async def _channel_exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        """``_exec`` through the instance's helper: for providers whose commands all use it."""
        resolved = dataclasses.replace(request, cwd=await self._channel_cwd(instance_id, request.cwd))
        return await self._channels.run(instance_id, lambda channel: channel.exec(resolved))

    async def _channel_read(self, instance_id: str, target: str, shown: str) -> bytes:
        """``_read`` through the instance's helper (``cat``: a stream, no per-chunk requests)."""
        limit = _limits.MAX_READ_BYTES
        data = await self._channels.run(
            instance_id, lambda channel: channel.read_file(target, 0, limit + 1, user=True)
        )
        if len(data) > limit:
            raise ValueError(f"{shown} is larger than {limit} bytes; use download")
        return data

    async def _open_channel(self, instance_id: str) -> Channel:
        """Start the instance's helper (a provider that must look the instance up first extends this)."""
        return await Channel.open(
            functools.partial(self._transport, instance_id),
            self._spool(instance_id),
            user=await self._command_user(instance_id),
        )

    @property
    def _channels(self) -> ChannelPool:
        pool: ChannelPool | None = self.__dict__.get("_channel_pool")
        if pool is None:
            pool = self.__dict__["_channel_pool"] = ChannelPool(self._open_channel)
        return pool

    # ---- the contract's primitives, through the channel -----------------------------------

    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        return await self._channel_exec(instance_id, request)

    async def _read(self, instance_id: str, path: str) -> bytes:
        return await self._channel_read(instance_id, await self._channel_path(instance_id, path), path)

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        target = await self._channel_path(instance_id, path)
        await self._channels.run(instance_id, lambda channel: channel.write_file(target, data, user=True))

    async def _ping(self, instance_id: str) -> None:
        """Show the instance activity it cannot see — a transfer that bypassed its helper (docker's
        archive API) — so an instance that stops itself when idle (docker's watchdog) counts it.
        Only over a channel that is open already: opening one costs more than the ping is worth."""
        channel = self._channels.peek(instance_id)
        if channel is not None:
            await channel.post("__p_ping")

    # ---- background processes, bound env and sessions: the helper's parts --------------------

    @part(Capability.PROCESSES)
    def process_table(self) -> ChannelProcesses:
        """The helper's jobs, spooled inside the instance."""
        return ChannelProcesses(self._channels, self._channel_cwd)

    @part(Capability.SESSIONS)
    def sessions(self) -> ChannelSessions:
        """A shell per session, started where ``_session_places`` says by ``_session_transport``."""
        return ChannelSessions(self._channels, self._session_places, self._session_transport)


class ChannelProcesses:
    """Background processes and bound env through the instance's helper (``runtime``): its jobs
    spool their output inside the instance, and every later command it starts reads the env it
    binds. Built from the provider's channel pool and how it names a working dir (``cwd``)."""

    def __init__(self, channels: ChannelPool, cwd: Callable[[str, str | None], Awaitable[str]]) -> None:
        self._channels, self._cwd = channels, cwd

    async def start(
        self, instance_id: str, command: str, cwd: str | None, env: Mapping[str, str]
    ) -> ProcessInfo:
        where = await self._cwd(instance_id, cwd)
        return await self._channels.run(instance_id, lambda ch: ch.start(command, cwd=where, env=env))

    async def started(self, instance_id: str, only: str | None = None) -> list[ProcessInfo]:
        return await self._channels.run(instance_id, lambda ch: ch.processes(only))

    async def output(
        self, instance_id: str, process_id: str, stream: Literal["out", "err"], offset: int, limit: int | None
    ) -> bytes:
        return await self._channels.run(
            instance_id, lambda ch: ch.read_file(ch.process_file(process_id, stream), offset, limit)
        )

    async def kill(self, instance_id: str, process_id: str) -> None:
        await self._channels.run(instance_id, lambda ch: ch.kill_process(process_id))

    async def bind_env(self, instance_id: str, env: Mapping[str, str]) -> None:
        """Values travel length-framed to the helper, never on a command line."""
        text = "".join(f"{name}={shlex.quote(value)}\n" for name, value in env.items()).encode()
        await self._channels.run(instance_id, lambda ch: ch.bind_env(text))


class ChannelSessions:
    """Shell sessions beside the instance's helper: each a shell of its own (``transport``),
    started where ``places`` says and reading the bound env from there, signalled and killed
    through the helper. Every command, input, output and interrupt is the instance's activity."""

    def __init__(
        self,
        channels: ChannelPool,
        places: Callable[[str, str | None], Awaitable[tuple[str, str]]],
        transport: Callable[[str, list[str]], Transport],
    ) -> None:
        self._channels, self._places, self._transport = channels, places, transport

    async def open(self, instance_id: str, cwd: str | None) -> ShellSession:
        where, env_file = await self._places(instance_id, cwd)
        channels = self._channels

        async def signal_group(pgid: int, name: str) -> None:
            _activity.touch(instance_id)
            await channels.run(instance_id, lambda ch: ch.request("__p_signal", str(pgid), name))

        async def kill_tree(pid: int, marker: str) -> None:
            _activity.touch(instance_id)
            status, _ = await channels.run(
                instance_id, lambda ch: ch.request("__p_killtree", marker, str(pid))
            )
            if status != "0":
                raise ExecError(f"could not kill the timed-out session command: {status}", op="exec")

        def open_transport(argv: list[str]) -> Transport:
            return _activity.StampedTransport(self._transport(instance_id, argv), instance_id)

        return ShellSession(open_transport, signal_group, where, env_file, kill_tree=kill_tree)


@contextlib.asynccontextmanager
async def bound_env_left_out(channels: ChannelPool, instance_id: str, path: str) -> AsyncIterator[None]:
    """The instance's bound-env file (``path``, in its helper's spool) empty for the block, so a
    snapshot of its filesystem taken inside holds no bound value; afterwards what it held is put
    back before whatever a ``bind_env`` appended meanwhile. A helper that starts inside the block
    reads no bound env (a vendor without a freeze cannot close that window)."""
    held = await channels.run(instance_id, lambda ch: _bound(ch, path))
    if held:
        await channels.run(instance_id, lambda ch: ch.write_file(path, b""))
    try:
        yield
    finally:
        if held:
            await channels.run(instance_id, lambda ch: _put_back(ch, path, held))


async def _bound(channel: Channel, path: str) -> bytes:
    """The spool file's bytes; empty when there is none (nothing was bound)."""
    try:
        return await channel.read_file(path)
    except FileNotFoundError:
        return b""


async def _put_back(channel: Channel, path: str, held: bytes) -> None:
    """``held`` back in the file, before what a ``bind_env`` appended meanwhile (read just now)."""
    await channel.write_file(path, held + await _bound(channel, path))
