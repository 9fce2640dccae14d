"""A terminal in an E2B instance (``Capability.PTY``): the SDK's own ``sandbox.pty``, which
starts a process on a pseudo-terminal through envd (a ``Start`` with a ``pty``), types into it
(``send_stdin``), resizes it (``resize``: envd's ``Update``) and streams its output as bytes.

The SDK's ``pty.create`` always runs ``/bin/bash -i -l`` and takes no command. The program is
started by that bash itself, through ``PROMPT_COMMAND``, which an interactive bash runs after its
startup files and before its first prompt (so before it reads any input): it unsets itself, enters
the working directory, loads the env bound by ``bind_env`` (the call's env still wins, as for
exec) and ``exec``s the program, which keeps the pid envd reports and whose exit code envd sends.
Without a command that bash, a login shell, is the terminal's shell. So the terminal runs as
E2B's commands do: the sandbox's default user under ``bash -l``, with the sandbox's env and the
instance's bound env. A template whose startup files set ``PROMPT_COMMAND`` themselves would
override it (E2B's templates do not).

Every process the terminal starts carries its marker (``PRAISONAI_PTY=<token>``) in its
environment; close kills, inside the sandbox, every process carrying it (also those that left
its session), then the program by pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from praisonai import _limits
from praisonai._errors import PraisonAIError
from praisonai.compute.abilities.pty import KILL_MARKED_SH, PTY_MARKER, StreamedPty
from praisonai.compute.providers.e2b._errors import translated
from praisonai.compute.providers.e2b._exec import bound_env


class E2BPty(StreamedPty):
    """An envd process on a terminal in ``sandbox``: its output comes through :meth:`take` (the
    SDK's ``on_data``), its handle (an ``AsyncCommandHandle`` of ``sandbox.pty``) from
    :meth:`start`. ``marker`` is in the environment of everything it starts, and ``on_use``
    runs on every input and output (the provider renews the sandbox from it)."""

    def __init__(self, sandbox: Any, marker: str, on_use: Callable[[], None]) -> None:
        super().__init__()
        self._sandbox, self._marker, self._on_use = sandbox, marker, on_use
        self._handle: Any = None
        self._watcher: asyncio.Future[None] | None = None

    async def start(self, size: tuple[int, int], envs: dict[str, str]) -> None:
        """Start the terminal's bash on a terminal of ``size`` (cols, rows) with ``envs`` (sent in
        envd's request body, never on a command line). The SDK's handle follows envd's stream in
        an asyncio task of its own; the watcher turns its end into an exit code and the end of
        the output."""
        from e2b.sandbox.commands.command_handle import PtySize

        try:
            with translated("open_pty"):
                # timeout=0: the stream has no deadline (the SDK's default would end it at 60 s)
                self._handle = await self._sandbox.pty.create(
                    PtySize(rows=size[1], cols=size[0]), on_data=self.take, envs=envs, timeout=0
                )
        except BaseException:
            self._output.close()
            raise
        self._watcher = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        import e2b

        code: int | None = None
        try:
            with translated("pty"):
                try:
                    code = (await self._handle.wait()).exit_code
                except e2b.CommandExitException as exc:  # a non-zero exit: the SDK raises it
                    code = exc.exit_code
        except PraisonAIError as exc:  # the stream broke: wait() reports it
            self._ended_with(None, exc)
        else:  # envd reports a kill by signal as -1: taken as SIGKILL's 137
            self._ended_with(code if code is None or code >= 0 else 128 + 9)
        finally:
            self._sink.close()  # read() returns b"" once the output taken so far is read

    async def _send(self, data: bytes) -> None:
        if not self._live:
            return  # typed into a terminal that ended: nobody reads it
        self._on_use()
        with translated("pty"):
            await self._sandbox.pty.send_stdin(self._handle.pid, data)

    async def _receive(self) -> bytes:
        chunk = await super()._receive()
        if chunk:
            self._on_use()
        return chunk

    async def resize(self, cols: int, rows: int) -> None:
        from e2b.sandbox.commands.command_handle import PtySize

        if not self._live:
            return
        with contextlib.suppress(PraisonAIError), translated("pty"):  # it ended meanwhile: no size
            await self._sandbox.pty.resize(self._handle.pid, PtySize(rows=rows, cols=cols))

    async def _kill(self) -> None:
        """Every process carrying the marker (run as the sandbox's commands run), then the pid."""
        import e2b

        kill = shlex.join(["sh", "-c", KILL_MARKED_SH, "sh", self._marker])
        with translated("pty"):
            with contextlib.suppress(e2b.CommandExitException):
                await self._sandbox.commands.run(kill, timeout=_limits.KILL_GRACE_S)
            if not self._ended.is_set():
                await self._sandbox.pty.kill(self._handle.pid)

    async def _release(self) -> None:
        await self._handle.disconnect()
        if self._watcher is not None:
            self._watcher.cancel()


def start_line(argv: list[str] | None, cwd: str, env_file: str, names: list[str]) -> str:
    """The ``PROMPT_COMMAND`` starting the terminal's program (see the module docstring): a
    missing ``cwd`` or a program that cannot be run ends the terminal (status 1, 126 or 127) with
    bash's message on it, rather than leaving a shell in its place."""
    enter = f"unset PROMPT_COMMAND; cd -- {shlex.quote(cwd)} || exit 1; {bound_env(env_file, names)}"
    return enter if argv is None else f"{enter}exec {shlex.join(argv)}; exit $?"


class E2BTerminals:
    """Terminals in a provider's E2B sandboxes (``Terminals``), from its collaborators:
    ``sandbox`` gives an instance's connected ``e2b.AsyncSandbox``, ``path`` resolves a path
    against its working dir, ``env_file`` names its bound env's file, and ``renewal`` gives what
    renews it on a terminal's every input and output."""

    def __init__(
        self,
        *,
        sandbox: Callable[[str], Awaitable[Any]],
        path: Callable[[str, str], str],
        env_file: Callable[[str], str],
        renewal: Callable[[str], Callable[[], None]],
    ) -> None:
        self._sandbox, self._path, self._env_file, self._renewal = sandbox, path, env_file, renewal

    async def open(
        self,
        instance_id: str,
        command: list[str] | None,
        cols: int,
        rows: int,
        cwd: str | None,
        env: Mapping[str, str],
    ) -> E2BPty:
        """``command`` (``None``: the login shell) on a terminal of ``cols`` x ``rows`` in the
        instance's sandbox, in ``cwd``, with ``env`` added and the bound env."""
        sandbox, path = await self._sandbox(instance_id), self._path(instance_id, cwd or ".")
        marker = f"{PTY_MARKER}={secrets.token_hex(16)}"
        envs = {
            "TERM": "xterm",
            **env,
            "PROMPT_COMMAND": start_line(command, path, self._env_file(instance_id), list(env)),
            PTY_MARKER: marker.split("=", 1)[1],
        }
        pty = E2BPty(sandbox, marker, self._renewal(instance_id))
        await pty.start((cols, rows), envs)
        return pty
