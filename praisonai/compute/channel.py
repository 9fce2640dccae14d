"""The channel-backed provider: a bidirectional byte stream into an instance becomes everything else.

A provider that can start a process inside an instance with stdin/stdout/stderr attached (docker
exec, an SSH channel, a local pipe) implements :meth:`ChannelMixin._transport` and
:meth:`ChannelMixin._channel_path`; the mixin starts the POSIX-sh helper
(``praisonai.runtime``) over that stream, keeps one channel per instance (``_channels``), and
turns it into exec with streaming, background processes, shell sessions, ``bind_env`` and whole-file
reads and writes. A provider overrides any of those with a native call where it has a better one
(local spawns its commands directly; ssh writes over SFTP). Upload and download stay the
provider's own (an archive API, SFTP, a copy).
"""

from __future__ import annotations

import dataclasses
import functools
import shlex
from abc import abstractmethod
from collections.abc import Mapping
from typing import Literal

from praisonai import _limits
from praisonai._errors import ExecError, UnsupportedFeatureError
from praisonai._types import Capability, ExecRequest, ExecResult, ProcessInfo
from praisonai.compute import _activity
from praisonai.compute.base import ComputeProvider
from praisonai.compute.files import FileTree, ShellFiles
from praisonai.compute.requests import checked_env
from praisonai.compute.separation import hand_over
from praisonai.runtime import processes
from praisonai.runtime.channel import Channel
from praisonai.runtime.pool import ChannelPool
from praisonai.runtime.session import ShellSession
from praisonai.runtime.transport import Transport

#: What every channel-backed provider can do, to be part of its ``capabilities``.
CHANNEL_CAPABILITIES = frozenset({Capability.PROCESSES, Capability.SESSIONS})


class ChannelMixin(ComputeProvider):
    """Exec, processes, sessions, ``bind_env`` and files through the instance's helper.

    A provider subclasses it (``class DockerEngine(ChannelMixin, ComputeProvider)``), implements
    ``_transport`` (and ``_channel_path``, which the default ``_read``, ``_write`` and
    ``_channel_cwd`` use), and adds :data:`CHANNEL_CAPABILITIES` to its ``capabilities``.
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
    def files(self) -> FileTree:
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

    # ---- background processes, sessions, bound env -------------------------------------------

    async def start_process(
        self, instance_id: str, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> ProcessInfo:
        """Start ``command`` in the background and return at once. Its output is spooled inside
        the instance, so any process can read it, wait for it or kill it later by its id."""
        self._check_id(instance_id)
        _activity.touch(instance_id)
        where = await self._channel_cwd(instance_id, cwd)
        checked = checked_env(env or {})
        return await self._channels.run(instance_id, lambda ch: ch.start(command, cwd=where, env=checked))

    async def list_processes(self, instance_id: str) -> list[ProcessInfo]:
        """Every background process started in the instance, by any client."""
        self._check_id(instance_id)
        _activity.touch(instance_id)
        return await self._channels.run(instance_id, lambda ch: ch.processes())

    async def get_process(self, instance_id: str, process_id: str) -> ProcessInfo:
        """The background process's state (output, wait and kill look it up here first)."""
        self._check_id(instance_id)
        _activity.touch(instance_id)  # polling a process (wait_process) is activity too
        found = await self._channels.run(
            instance_id, lambda ch: ch.processes(processes.checked_id(process_id))
        )
        return processes.found_one(found, process_id, instance_id)

    async def read_process_output(
        self,
        instance_id: str,
        process_id: str,
        *,
        stream: Literal["stdout", "stderr"] = "stdout",
        offset: int = 0,
        limit: int | None = None,
    ) -> bytes:
        """The process's output from byte ``offset`` (at most ``limit`` bytes), while it runs or after."""
        await self.get_process(instance_id, process_id)
        name: Literal["out", "err"] = "out" if stream == "stdout" else "err"
        return await self._channels.run(
            instance_id,
            lambda ch: ch.read_file(ch.process_file(process_id, name), offset, limit),
        )

    async def kill_process(self, instance_id: str, process_id: str) -> None:
        """Kill the process and everything it started; idempotent."""
        await self.get_process(instance_id, process_id)
        await self._channels.run(instance_id, lambda ch: ch.kill_process(process_id))

    async def open_session(self, instance_id: str, *, cwd: str | None = None) -> ShellSession:
        """A persistent shell in the instance (cwd, variables and functions persist).

        Its traffic is activity: every command or input sent, output received and interrupt, and
        a command counts as long as it runs (here and, on docker, for the instance's watchdog)."""
        self._check_id(instance_id)
        _activity.touch(instance_id)
        where, env_file = await self._session_places(instance_id, cwd)

        async def signal_group(pgid: int, name: str) -> None:
            _activity.touch(instance_id)
            await self._channels.run(instance_id, lambda ch: ch.request("__p_signal", str(pgid), name))

        async def kill_tree(pid: int, marker: str) -> None:
            _activity.touch(instance_id)
            status, _ = await self._channels.run(
                instance_id, lambda ch: ch.request("__p_killtree", marker, str(pid))
            )
            if status != "0":
                raise ExecError(f"could not kill the timed-out session command: {status}", op="exec")

        def open_transport(argv: list[str]) -> Transport:
            return _activity.StampedTransport(self._session_transport(instance_id, argv), instance_id)

        session = ShellSession(open_transport, signal_group, where, env_file, kill_tree=kill_tree)
        _activity.watch_session(instance_id, session)
        return session

    async def bind_env(self, instance_id: str, env: Mapping[str, str]) -> None:
        """Add ``env`` to the environment of every later command in the instance — exec,
        background processes and sessions, from any process; a later binding overrides an
        earlier one name by name. For env that must not exist before the instance is handed out
        (the secrets of a warm pool's claimer). Values travel length-framed, never on a command line."""
        self._check_id(instance_id)
        checked = checked_env(env)
        text = "".join(f"{name}={shlex.quote(value)}\n" for name, value in checked.items()).encode()
        await self._channels.run(instance_id, lambda ch: ch.bind_env(text))
