"""A session over a transport whose ``send`` returns only after the reply has come back (E2B:
each send is an HTTP round trip, while output arrives on another stream): ``read()`` must still
continue the command that ``run()`` returned running, not a queued command that took the shell
in the meantime."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import anyio

from praisonai._types import SessionResult
from praisonai.runtime.session import ShellSession
from praisonai.runtime.transport import ProcessTransport

_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


class SlowAckTransport(ProcessTransport):
    """Input reaches the shell at once; the sender hears back only later."""

    def send(self, data: bytes) -> None:
        super().send(data)
        if data == b"typed\n":
            time.sleep(0.5)  # the command ends, and the queued one starts, before send returns


def test_read_continues_the_command_run_returned_running(tmp_path: Path) -> None:
    async def signal_group(pgid: int, name: str) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, getattr(signal, f"SIG{name}"))

    def open_transport(argv: list[str]) -> ProcessTransport:
        return SlowAckTransport(argv, env={**_ENV, "HOME": str(tmp_path)}, cwd=str(tmp_path))

    async def kill_tree(pid: int, marker: str) -> None:  # no command here times out
        await signal_group(pid, "KILL")

    async def main() -> None:
        session = ShellSession(open_transport, signal_group, str(tmp_path), kill_tree=kill_tree)
        later: list[SessionResult] = []
        try:
            quiet = await session.run("read line; echo got $line", idle_timeout=0.3)
            assert quiet.running, quiet
            async with anyio.create_task_group() as tg:

                async def queued() -> None:
                    later.append(await session.run("echo second", timeout=30))

                tg.start_soon(queued)
                await anyio.sleep(0.1)
                await session.send("typed\n")
                first = await session.read(timeout=30)
            assert (first.stdout, first.exit_code) == ("got typed\n", 0), first
            assert later[0].stdout == "second\n", later
        finally:
            await session.close()

    anyio.run(main)
