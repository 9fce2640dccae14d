"""A terminal in a Modal sandbox (``Capability.PTY``): the SDK's own ``sb.exec(..., pty=True)``,
what ``modal shell`` uses: the worker runs the command on a pseudo-terminal (``PTYInfo`` in the
``TaskExecStartRequest``), typed keys go in through the exec's stdin (``TaskExecStdinWrite``) and
the terminal's output (stderr merged into it) comes back on its stdout (``TaskExecStdioRead``).

The command runs as the instance's commands do: its user, the sandbox's env, the env bound by
``bind_env`` (the spool's env file; the call's own env still wins) and the call's env, which
travels in the exec request's body, never on a command line. A start wrapper sets the size asked
for before the program starts (``pty=True`` sizes the terminal after the caller's own, and a
resize after the start races a short program) and ``exec``s it, so its exit code is the exec's.

Modal's API cannot resize a running exec (``PTYInfo`` is sent once, at the start; there is no
call for a new window size), so :meth:`ModalPty.resize` sets it from inside the sandbox: one
command through the helper channel runs ``stty -F`` on the terminal's device, found from the
terminal's marked processes; the kernel then sends the program SIGWINCH, as a native resize does.

Every process the terminal starts carries ``PRAISONAI_PTY=<token>`` in its environment: close
kills, inside the sandbox, every process carrying it (also those that left its session), once.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from praisonai import _limits
from praisonai._errors import PraisonAIError
from praisonai._types import ExecRequest
from praisonai.compute.abilities.pty import BOUND_START, KILL_MARKED_SH, PTY_MARKER, StreamedPty, env_lines
from praisonai.compute.providers.modal._files import absolute
from praisonai.compute.providers.modal._sdk import translated

#: ``sh -c RESIZE sh MARKER COLS ROWS``: the terminal device of a marked process, resized.
_RESIZE = (
    'for p in $(grep -lzx -- "$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do '
    "for f in 0 1 2; do t=$(readlink /proc/$p/fd/$f 2>/dev/null); "
    'case $t in /dev/pts/*) exec stty -F "$t" cols "$2" rows "$3";; esac; done; done; true'
)
#: ``None`` as a command: bash where the image has it, else sh, interactive.
_SHELL = ["/bin/sh", "-c", 'exec "$(command -v bash || echo /bin/sh)" -i']

#: Runs a shell line in the sandbox through the provider's helper channel.
Run = Callable[[str], Awaitable[object]]


class ModalPty(StreamedPty):
    """One ``sb.exec(pty=True)`` process; ``run`` runs the resize and the kill in the sandbox."""

    def __init__(self, process: Any, marker: str, run: Run) -> None:
        super().__init__()
        self._process, self._marker, self._run = process, marker, run
        self._lock = anyio.Lock()  # write + drain share one buffer in the SDK
        self._reader = asyncio.ensure_future(self._read())
        self._watcher = asyncio.ensure_future(self._watch())

    async def _read(self) -> None:
        try:
            with contextlib.suppress(Exception):  # a vanished exec ends the stream; wait() says why
                async for chunk in self._process.stdout:
                    if chunk:
                        await self.take(chunk)
        finally:
            self._sink.close()  # read() returns b"" once the output taken so far is read

    async def _watch(self) -> None:
        try:
            with translated("pty"):
                code = int(await self._process.wait.aio())
        except PraisonAIError as exc:
            self._ended_with(None, exc)
        except Exception as exc:  # the SDK's own errors beyond the translated ones
            self._ended_with(None, PraisonAIError(f"the Modal terminal broke: {exc}", op="pty"))
        else:
            self._ended_with(code)

    async def _send(self, data: bytes) -> None:
        if not self._live:
            return  # typed into a terminal that ended: nobody reads it
        async with self._lock:
            with translated("pty"):
                self._process.stdin.write(data)
                await self._process.stdin.drain.aio()

    async def resize(self, cols: int, rows: int) -> None:
        """From inside the sandbox (see the module docstring): Modal has no resize call."""
        if not self._live:
            return
        with contextlib.suppress(PraisonAIError):  # it ended meanwhile: no size to set
            await self._run(shlex.join(["sh", "-c", _RESIZE, "sh", self._marker, str(cols), str(rows)]))

    async def _kill(self) -> None:
        await self._run(shlex.join(["sh", "-c", KILL_MARKED_SH, "sh", self._marker]))

    async def _release(self) -> None:
        self._reader.cancel()
        self._watcher.cancel()
        await asyncio.gather(self._reader, self._watcher, return_exceptions=True)


class ModalTerminals:
    """Terminals in a provider's Modal sandboxes (``Terminals``), from its collaborators:
    ``awake`` gives an instance's sandbox (resumed when paused), ``workdir`` its working dir,
    ``spool`` the helper's spool (the bound env is its ``env`` file), and ``execute`` runs a
    command in it through the helper channel (a terminal's resize and kill)."""

    def __init__(
        self,
        *,
        awake: Callable[[str], Awaitable[Any]],
        workdir: Callable[[str], str],
        spool: Callable[[str], str],
        execute: Callable[[str, ExecRequest], Awaitable[object]],
    ) -> None:
        self._awake, self._workdir, self._spool, self._execute = awake, workdir, spool, execute

    async def open(
        self,
        instance_id: str,
        command: list[str] | None,
        cols: int,
        rows: int,
        cwd: str | None,
        env: Mapping[str, str],
    ) -> ModalPty:
        """``command`` (``None``: an interactive shell) on a terminal of ``cols`` x ``rows`` in
        the instance's sandbox, in ``cwd`` (relative to its working dir), with ``env`` added."""
        sb = await self._awake(instance_id)
        where = absolute(cwd or ".", self._workdir(instance_id))
        env_lines(env)  # a name that is no identifier is refused in one sentence
        marker = f"{PTY_MARKER}={secrets.token_hex(16)}"
        names = " ".join(env)
        envs = {"TERM": "xterm", **env, "PRAISONAI_PTY_KEEP": names, PTY_MARKER: marker.split("=", 1)[1]}
        start = ["/bin/sh", "-c", BOUND_START, "sh", str(cols), str(rows), f"{self._spool(instance_id)}/env"]
        with translated("open_pty"):
            process = await sb.exec.aio(
                *start, *(command or _SHELL), pty=True, env=envs, workdir=where, text=False
            )

        async def run(line: str) -> object:
            return await self._execute(instance_id, ExecRequest(command=line, timeout=_limits.KILL_GRACE_S))

        return ModalPty(process, marker, run)
