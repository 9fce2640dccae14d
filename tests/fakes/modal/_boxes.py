"""The fake's sandboxes: one docker container each, driven through the ``docker`` CLI, and the
execs running in them (output kept whole so a reader can resume from any offset)."""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from fakes import docker
from fakes.modal._pty import start_tty
from fakes.modal.fs_tools import FS_TOOLS, FS_TOOLS_PATH

LABEL = "praisonai.test.modal-fake"
_HIGH_WATER = 4 << 20
#: where ``snapshot_filesystem`` commits a sandbox (the fake removes these when it stops)
SNAPSHOT_REPOSITORY = "praisonai-modal-fake-snapshot"
#: What the worker answers when it runs a command: the real fs-tools binary lives there.
_PRELUDE = 'echo $$ > "/tmp/.modal-exec-$0"; exec "$@"'


@dataclass
class Exec:
    exec_id: str
    proc: Any  # an asyncio subprocess, or a terminal exec (_pty.TtyProc)
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    #: the stream offset of each buffer's first byte: what a reader has taken is dropped, so the
    #: fake's memory stays bounded (a re-read from before it is refused: DATA_LOSS)
    base: dict[str, int] = field(default_factory=lambda: {"out": 0, "err": 0})
    drained: asyncio.Event = field(default_factory=asyncio.Event)
    runner: asyncio.Future[None] | None = None
    stdin_written: int = 0
    stdin_closed: bool = False
    code: int | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    grew: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Box:
    sandbox_id: str
    task_id: str
    container: str
    app_id: str
    name: str
    tags: dict[str, str]
    image_id: str
    deadline: float
    idle_timeout: float | None
    created_at: float = field(default_factory=time.time)
    last_active: float = field(default_factory=time.monotonic)
    #: 124 timeout, 137 terminated (the SDK's own mapping of GenericResult), else None
    status: str | None = None
    execs: dict[str, Exec] = field(default_factory=dict)
    env_keys: list[str] = field(default_factory=list)
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    #: the tunnels of the ports declared at creation (``_tunnels``) and their listeners here
    tunnels: list[Any] = field(default_factory=list)
    listeners: list[asyncio.Server] = field(default_factory=list)

    def busy(self) -> bool:
        return any(e.code is None for e in self.execs.values())


def new_id(prefix: str, suffix: str = "") -> str:
    return f"{prefix}-fake{secrets.token_hex(8)}{suffix}"


async def start_container(
    image: str, env: dict[str, str], workdir: str, network_none: bool, owner: str
) -> str:
    """A sandbox's container, labelled ``LABEL=<owner>``: a fake removes its own containers only
    (fakes in other processes run beside it)."""
    args = ["run", "-d", "--label", f"{LABEL}={owner}", "--init"]
    if network_none:
        args += ["--network", "none"]
    for key, value in env.items():
        args += ["-e", f"{key}={value}"]
    if workdir:
        args += ["-w", workdir]
    rc, out, err = await docker.docker_async(*args, image, "sleep", "infinity")
    if rc:
        raise RuntimeError(err.decode(errors="replace").strip())
    cid = out.decode().strip()
    mk = f"mkdir -p {FS_TOOLS_PATH.rsplit('/', 1)[0]} && cat > {FS_TOOLS_PATH} && chmod 755 {FS_TOOLS_PATH}"
    await docker.docker_async("exec", "-i", cid, "sh", "-c", mk, data=FS_TOOLS.encode())
    return cid


async def _pump(stream: asyncio.StreamReader | None, buf: bytearray, ex: Exec) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        buf += chunk
        ex.grew.set()
        while len(buf) > _HIGH_WATER:  # back-pressure, as a pipe would give
            ex.drained.clear()
            await ex.drained.wait()


async def start_exec(
    box: Box,
    argv: list[str],
    workdir: str | None,
    env: dict[str, str],
    timeout: int | None,
    pty_info: Any = None,
) -> Exec:
    """``argv`` in the box; with ``pty_info`` on a real terminal (``_pty``)."""
    exec_id = new_id("ex")
    if pty_info is not None:
        proc: Any = await start_tty(box.container, exec_id, argv, workdir, env, pty_info)
        return _started(box, Exec(exec_id, proc), timeout)
    args = ["exec", "-i"]
    if workdir:
        args += ["-w", workdir]
    for key, value in env.items():
        args += ["-e", f"{key}={value}"]
    # setsid: the command leads its own process group, so a timeout kills all of it
    args += [box.container, "setsid", "-w", "sh", "-c", _PRELUDE, exec_id, *argv]
    return _started(box, Exec(exec_id, await docker.exec_async(*args)), timeout)


def _started(box: Box, ex: Exec, timeout: int | None) -> Exec:
    box.execs[ex.exec_id] = ex
    box.last_active = time.monotonic()
    ex.runner = asyncio.ensure_future(_run(box, ex, timeout))
    return ex


async def _run(box: Box, ex: Exec, timeout: int | None) -> None:
    pumps = asyncio.gather(_pump(ex.proc.stdout, ex.out, ex), _pump(ex.proc.stderr, ex.err, ex))
    try:
        await asyncio.wait_for(asyncio.shield(pumps), timeout or None)
    except asyncio.TimeoutError:  # the worker kills a command at its timeout_secs
        await kill_exec(box, ex)
    await pumps
    ex.code = await ex.proc.wait()
    box.last_active = time.monotonic()
    ex.done.set()
    ex.grew.set()


async def kill_exec(box: Box, ex: Exec) -> None:
    """The worker's kill at ``timeout_secs``: the command and every process below it (a command
    may start its own process group or session; the walk finds it all the same)."""
    script = (
        't() { for c in $(ps -o pid= --ppid "$1"); do t "$c"; done; kill -KILL "$1" 2>/dev/null; }; '
        f'p=$(cat /tmp/.modal-exec-{ex.exec_id} 2>/dev/null) && t "$p"; rm -f /tmp/.modal-exec-{ex.exec_id}'
    )
    await docker.docker_async("exec", box.container, "sh", "-c", script)
