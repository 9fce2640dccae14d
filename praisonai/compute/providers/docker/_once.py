"""One-shot runs (``docker run --rm``): a ``DockerEngine``'s :class:`DockerLauncher`, and the
container's plumbing: attached to and awaited before it starts, so that none of its output and not
its exit status is lost, even when it ends at once and the engine removes it (``auto_remove``)
before a later request could reach it. Blocking calls (run them in a thread), and the wait for the
command's end or its deadline."""

from __future__ import annotations

import contextlib
import math
import socket
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio

from praisonai import _limits
from praisonai._output import exec_result
from praisonai._types import ExecRequest, ExecResult, Stdin, stdin_chunks
from praisonai.compute._threads import run_blocking
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.docker import _egress, _runtime
from praisonai.compute.providers.docker._client import EngineCall, container_name, start_errors
from praisonai.compute.providers.docker._exec import read_frames
from praisonai.compute.providers.docker._options import DockerOptions

# sh -c ONCE name SECONDS COMMAND: run COMMAND as this shell's own process (exec keeps the pid),
# with a deadline of its own: at SECONDS the pid is killed, docker-init (PID 1) then exits and the
# engine removes the container. Only a backstop for a client that died: the client kills at its
# timeout first. The sleeper holds none of the attached streams.
_ONCE = '(sleep "$1"; kill -KILL $$) </dev/null >/dev/null 2>&1 & exec /bin/sh -c "$2"'


def once_command(command: str, deadline_s: float | None) -> list[str]:
    """The container command that runs the shell line ``command``, killed after ``deadline_s``
    seconds (``None``: never) even when no client is left to kill it."""
    if deadline_s is None:
        return ["/bin/sh", "-c", command]
    return ["/bin/sh", "-c", _ONCE, "praisonai-once", str(max(1, round(deadline_s))), command]


class AttachedRun:
    """A created container, attached (stdout, stderr, and stdin when it has input) and awaited
    (until it is removed) before anyone starts it."""

    def __init__(self, api: Any, container: str, *, stdin: bool) -> None:
        import docker

        params = {"stdout": 1, "stderr": 1, "stream": 1, "stdin": int(stdin)}
        stream = api.attach_socket(container, params=params)
        self._sock: socket.socket = getattr(stream, "_sock", stream)
        self._sock.settimeout(None)  # a quiet command is normal; docker-py's request timeout must not apply
        url = f"{api.base_url}/v{api.api_version}/containers/{container}/wait"
        # The engine answers the headers once the wait is registered, the body once the container
        # is removed: with the headers in, no exit (or removal) can come before the wait.
        self._wait = api.post(url, params={"condition": "removed"}, stream=True, timeout=None)
        try:
            self._wait.raise_for_status()
        except Exception as exc:
            self.close()
            raise docker.errors.create_api_error_from_http_exception(exc) from None

    def finish(self, request: ExecRequest) -> int:
        """Deliver the output to ``request.on_output`` until the container ends, and return its
        exit status once the engine has removed it (``feed`` gives the input meanwhile)."""
        sink = request.on_output or (lambda name, data: None)
        try:
            read_frames(self._sock, lambda data: sink("stdout", data), lambda data: sink("stderr", data))
        finally:
            # Also when the sink failed (our reader went away, ``| head``): an attach stream left
            # open and unread holds the engine's copy of the output, and with it the container's
            # removal, forever.
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)  # wakes a feed blocked on input nobody reads
                self._sock.close()
        try:
            return int(self._wait.json().get("StatusCode", -1))
        finally:
            self._wait.close()

    async def feed(self, stdin: Stdin) -> None:
        """Give the command ``stdin`` as it comes, then end its input (the engine closes the
        command's stdin); a command that ended without reading it all is fine."""
        with contextlib.suppress(OSError):
            async for chunk in stdin_chunks(stdin):
                await run_blocking(self._sock.sendall, chunk)
            self._sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        """Let go of the streams (the wait too, when it was not read)."""
        with contextlib.suppress(OSError):
            self._sock.close()
        wait = getattr(self, "_wait", None)
        if wait is not None:
            wait.close()


async def finish_by_deadline(
    run: AttachedRun, request: ExecRequest, remove: Callable[[], Awaitable[object]]
) -> ExecResult:
    """The started ``run``'s result; at ``request.timeout``, or when this call is cancelled,
    ``remove`` (the container) ends the command first. The output went to ``request.on_output``."""
    finished = timed_out = False

    async def remove_at_deadline() -> None:
        nonlocal timed_out
        try:
            await anyio.sleep(math.inf if request.timeout is None else request.timeout)
            timed_out = True
        finally:
            if not finished:  # the deadline, or this call was cancelled: the command ends now
                with anyio.CancelScope(shield=True):
                    await remove()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(remove_at_deadline)
        if request.stdin is not None:
            tasks.start_soon(run.feed, request.stdin)
        status = await run_blocking(run.finish, request)
        finished = True
        tasks.cancel_scope.cancel()
    return exec_result(status, timed_out=timed_out)


class NewContainer(Protocol):
    """The engine's creation (not start) of a hardened container (``DockerEngine._new_container``)."""

    async def __call__(
        self,
        instance_id: str,
        cfg: ComputeConfig,
        labels: dict[str, str],
        command: list[str],
        image: str,
        *,
        stdin: bool = False,
        env: dict[str, str] | None = None,
    ) -> None: ...


class DockerLauncher:
    """A ``DockerEngine``'s one-shot runs (``abilities.run_once.Launcher``): the command is the
    container's own process, no idle container, no exec helper, no forced removal of a running
    container. Built from the engine's blocking ``call``, its client (``connect``), its container
    creation and removal, and its options (default image, runtime)."""

    def __init__(
        self,
        call: EngineCall,
        connect: Callable[[], Any],
        new_container: NewContainer,
        destroy: Callable[[str], Awaitable[bool]],
        options: DockerOptions,
    ) -> None:
        self._call, self._connect, self._options = call, connect, options
        self._new_container, self._destroy = new_container, destroy

    def serves(self, cfg: ComputeConfig) -> bool:
        """Not under gVisor (its kernel is checked first) nor an allowlist (its proxy outlives a run)."""
        runtime = _runtime.chosen(self._options.runtime, cfg)
        return runtime != "runsc" and _egress.allowlist(cfg) is None

    async def launch(
        self,
        instance_id: str,
        cfg: ComputeConfig,
        labels: dict[str, str],
        request: ExecRequest,
        on_start: Callable[[], None] | None,
    ) -> ExecResult:
        """The container is attached to and awaited before it starts; the engine removes it when
        the command ends, also when this client died (and a backstop deadline inside it ends the
        command then)."""
        name = container_name(instance_id)
        backstop = None if request.timeout is None else request.timeout + 2 * _limits.KILL_GRACE_S
        command = once_command(request.command, backstop)
        has_input = request.stdin is not None
        image = cfg.image or self._options.image
        with start_errors(image):
            await self._new_container(instance_id, cfg, labels, command, image, stdin=has_input, env=cfg.env)
            api = self._connect()
            run = await self._call(lambda: AttachedRun(api, name, stdin=has_input))
            try:
                await self._call(api.start, name)
            except BaseException:
                run.close()
                raise
        if on_start is not None:
            on_start()
        return await finish_by_deadline(run, request, lambda: self._destroy(instance_id))


#: A launch as ``Launcher.launch`` takes it: ``(instance_id, cfg, labels, request, on_start)``.
Launch = Callable[
    [str, ComputeConfig, dict[str, str], ExecRequest, Callable[[], None] | None], Awaitable[ExecResult]
]


class PoolLauncher:
    """A ``DockerPool``'s one-shot runs (``abilities.run_once.Launcher``): it ``serves`` what its
    hosts serve (they share the pool's runtime), and ``launch`` places each run on a host, whose
    own ``DockerLauncher`` starts it."""

    def __init__(self, *, serves: Callable[[ComputeConfig], bool], launch: Launch) -> None:
        self._serves, self._launch = serves, launch

    def serves(self, cfg: ComputeConfig) -> bool:
        return self._serves(cfg)

    async def launch(
        self,
        instance_id: str,
        cfg: ComputeConfig,
        labels: dict[str, str],
        request: ExecRequest,
        on_start: Callable[[], None] | None,
    ) -> ExecResult:
        return await self._launch(instance_id, cfg, labels, request, on_start)
