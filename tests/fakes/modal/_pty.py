"""The fake's terminal execs: a ``TaskExecStartRequest`` with ``pty_info`` runs its command on a
real pseudo-terminal in the container, as Modal's worker does: a ``docker exec`` with a tty
(runc allocates it and makes the command its session leader) through the docker API (docker-py:
the CLI attaches no tty without one of its own), sized from ``winsz_cols``/``winsz_rows`` and with
``TERM`` from ``env_term``. Its output is the exec's stdout (stderr merged into it, stderr empty),
what is written to its stdin is typed into the terminal; an EOF on stdin closes nothing (a
terminal has no end of input). Modal has no call resizing a running exec, nor has this fake.

:class:`TtyProc` looks like the ``asyncio.subprocess.Process`` a plain exec has (``stdin``,
``stdout``, ``stderr``, ``wait``), so the rest of the fake serves both alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

import docker as docker_py

_POLL_S = 0.05  # how often wait asks the engine whether the exec ended
#: Records the pid (the worker's kill at ``timeout_secs`` finds it), sets the size asked for
#: before the command starts, then becomes it.
_START = (
    'echo $$ > "/tmp/.modal-exec-$0"; '
    '[ "$1" -gt 0 ] && [ "$2" -gt 0 ] && stty cols "$1" rows "$2" 2>/dev/null; shift 2; exec "$@"'
)


class _Input:
    """The terminal's input as a ``StreamWriter`` is used here; ``close`` (stdin EOF) is a no-op."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    def write(self, data: bytes) -> None:
        self._writer.write(data)

    async def drain(self) -> None:
        await self._writer.drain()

    def close(self) -> None:
        """Nothing: a program on a terminal reads EOF when ^D is typed, not when input ends."""


class TtyProc:
    """``argv`` on a tty in ``container``; see the module docstring."""

    stderr = None

    def __init__(
        self,
        client: Any,
        exec_id: str,
        stream: Any,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ):
        self._client, self._exec_id, self._stream, self._writer = client, exec_id, stream, writer
        self.stdout = reader
        self.stdin = _Input(writer)

    async def wait(self) -> int:
        """The exec's exit code (137 when its container went under it)."""
        try:
            while True:
                state = await asyncio.to_thread(self._client.api.exec_inspect, self._exec_id)
                if not state.get("Running"):
                    break
                await asyncio.sleep(_POLL_S)
            code = state.get("ExitCode")
        except docker_py.errors.APIError:
            code = None
        finally:
            with contextlib.suppress(Exception):
                self._writer.close()
                await self._writer.wait_closed()
            with contextlib.suppress(Exception):
                self._stream.close()
            self._client.close()
        return 137 if code is None else int(code)


async def start_tty(
    container: str, exec_id: str, argv: list[str], workdir: str | None, env: dict[str, str], pty_info: Any
) -> TtyProc:
    """Start ``argv`` on a tty of ``pty_info``'s size (see the module docstring)."""
    if pty_info.env_term:
        env = {"TERM": pty_info.env_term, **env}
    size = [str(pty_info.winsz_cols), str(pty_info.winsz_rows)]
    full = ["sh", "-c", _START, exec_id, *size, *argv]

    def start() -> tuple[Any, str, Any, socket.socket]:
        client = docker_py.from_env()
        api = client.api
        created = api.exec_create(container, full, stdin=True, tty=True, environment=env, workdir=workdir)
        stream = api.exec_start(created["Id"], socket=True, tty=True)
        return client, created["Id"], stream, getattr(stream, "_sock", stream)

    client, docker_exec, stream, sock = await asyncio.to_thread(start)
    reader, writer = await asyncio.open_connection(sock=sock)
    return TtyProc(client, docker_exec, stream, reader, writer)
