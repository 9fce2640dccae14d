"""A provider written against the contract alone: the shape of one with a native exec.

``FakeProvider`` implements only the primitives of :class:`~praisonai.compute.base.ComputeProvider`
(no channel mixin, no helper): an instance is a directory on this host, a command is a real
``sh -c`` subprocess, a snapshot is a copy of the workspace. It is what a vendor provider whose SDK
runs commands (E2B ``commands.run``, Daytona ``process.exec``) looks like, with the SDK calls
replaced by local ones, and it runs the conformance checks that apply to it in unit tests. Not a
sandbox: commands run as this user on this host (with a clean environment).

On disk, under ``root`` (default ``$PRAISONAI_HOME/fake``)::

    <instance-id>/instance.json   working dir, env (mode 0600), created, labels
    <instance-id>/workspace/      what commands and file operations see as /workspace
    <instance-id>/pgids/          one empty file per running command's process group
    .snapshots/<tag>/             a saved workspace (a capture)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from praisonai import _limits
from praisonai._errors import InstanceNotFoundError, PathNotFoundError, PathOutsideWorkspaceError
from praisonai._home import praisonai_home
from praisonai._output import OutputBuffer, exec_result
from praisonai._types import (
    Capability,
    ExecRequest,
    ExecResult,
    InstanceInfo,
    InstanceStatus,
    Stdin,
    stdin_chunks,
)
from praisonai.compute.abilities import Capturer, SnapshotRef, part
from praisonai.compute.base import SYSTEM_PATH, ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.options import ProviderOptions

_VIRTUAL = PurePosixPath("/workspace")  # the path commands and files use for the workspace
_SNAPSHOTS = ".snapshots"
#: A provider's ``_create``: ``(instance_id, cfg, labels)``.
Create = Callable[[str, ComputeConfig, dict[str, str]], Awaitable[InstanceInfo]]


class FakeOptions(ProviderOptions):
    """``FakeProvider``'s options: where its instances live (default ``$PRAISONAI_HOME/fake``)."""

    type: Literal["fake"] = "fake"
    root: str | None = None


class FakeProvider(ComputeProvider):
    """Instances are directories under ``root``; see the module docstring."""

    name = "fake"
    options_model = FakeOptions

    def __init__(self, *, root: str | os.PathLike[str] | None = None) -> None:
        self._root = Path(root).absolute() if root is not None else None

    @property
    def options(self) -> FakeOptions:
        return FakeOptions(root=None if self._root is None else str(self._root))

    @property
    def root(self) -> Path:
        return self._root or praisonai_home() / "fake"

    @part(Capability.CAPTURE)
    def capturer(self) -> FakeCapturer:
        """A capture is a copy of the workspace."""
        return FakeCapturer(root=lambda: self.root, create=self._create)

    # ---- instances ---------------------------------------------------------------------------

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        place = self.root / instance_id
        (place / "workspace").mkdir(parents=True)
        (place / "pgids").mkdir()
        record = {"env": dict(cfg.env), "created_at": time.time(), "labels": labels}
        fd = os.open(place / "instance.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(record, f)
        return self._info(instance_id, record)

    async def _destroy(self, instance_id: str) -> bool:
        place = self.root / instance_id
        if not (place / "instance.json").is_file():
            return False
        for entry in (place / "pgids").glob("*"):
            _kill_group(int(entry.name))
        await anyio.to_thread.run_sync(shutil.rmtree, place, True)
        return True

    async def _status(self, instance_id: str) -> InstanceInfo:
        return self._info(instance_id, self._record(instance_id))

    async def _list(self) -> list[InstanceInfo]:
        found = []
        for meta in sorted(self.root.glob("*/instance.json")):
            with contextlib.suppress(InstanceNotFoundError):  # removed while we looked
                found.append(await self._status(meta.parent.name))
        return found

    def _record(self, instance_id: str) -> dict[str, Any]:
        try:
            record: dict[str, Any] = json.loads((self.root / instance_id / "instance.json").read_text())
        except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
            raise InstanceNotFoundError(f"no fake instance {instance_id!r}", op="lookup") from None
        return record

    def _info(self, instance_id: str, record: dict[str, Any]) -> InstanceInfo:
        workspace = self.root / instance_id / "workspace"
        return InstanceInfo(
            instance_id=instance_id,
            provider=self.name,
            status=InstanceStatus.RUNNING,
            endpoint=f"fake://{workspace}",
            created_at=float(record["created_at"]),
            labels=dict(record["labels"]),
            metadata={"workspace": str(workspace)},
        )

    # ---- exec: a real subprocess in its own process group ------------------------------------

    async def _exec(self, instance_id: str, request: ExecRequest) -> ExecResult:
        record = self._record(instance_id)
        cwd = self._host_path(instance_id, request.cwd or ".")
        if not cwd.is_dir():
            raise PathNotFoundError(f"working directory {request.cwd} does not exist", op="exec")
        home = str(self.root / instance_id / "workspace")
        env = {"PATH": SYSTEM_PATH, "HOME": home, "LANG": "C.UTF-8", **record["env"], **request.env}
        out, err = OutputBuffer(request.max_output), OutputBuffer(request.max_output)
        process = await anyio.open_process(
            ["/bin/sh", "-c", "--", request.command],  # "--": a command may start with "-"
            stdin=subprocess.DEVNULL if request.stdin is None else subprocess.PIPE,
            cwd=str(cwd),
            env=env,
            start_new_session=True,  # its own process group: a timeout kills the whole tree
        )
        pgid = self.root / instance_id / "pgids" / str(process.pid)
        pgid.touch()
        timed_out = False
        try:
            assert process.stdout is not None and process.stderr is not None
            async with anyio.create_task_group() as tasks:
                if process.stdin is not None:
                    tasks.start_soon(_feed, process.stdin, request.stdin or b"")
                done = [anyio.Event(), anyio.Event()]
                tasks.start_soon(_pump, process.stdout, out, "stdout", request, done[0])
                tasks.start_soon(_pump, process.stderr, err, "stderr", request, done[1])
                with anyio.move_on_after(request.timeout) as deadline:
                    await process.wait()
                    for event in done:
                        await event.wait()
                if deadline.cancelled_caught:
                    timed_out = True
                    _kill_group(process.pid)
                    with anyio.move_on_after(_limits.KILL_GRACE_S):  # a child that left the group
                        for event in done:
                            await event.wait()
                tasks.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    _kill_group(process.pid)
                await process.wait()
                await process.aclose()
            pgid.unlink(missing_ok=True)
        status = process.returncode if process.returncode is not None else -1
        return exec_result(128 - status if status < 0 else status, out, err, timed_out=timed_out)

    # ---- files ---------------------------------------------------------------------------------

    async def _read(self, instance_id: str, path: str) -> bytes:
        host = self._host_path(instance_id, path)
        if not host.exists():
            raise PathNotFoundError(f"no such file in the instance: {path}", op="read_file")
        if host.stat().st_size > _limits.MAX_READ_BYTES:
            raise ValueError(f"{path} is larger than {_limits.MAX_READ_BYTES} bytes; use download")
        return await anyio.Path(host).read_bytes()

    async def _write(self, instance_id: str, path: str, data: bytes) -> None:
        host = self._host_path(instance_id, path)
        host.parent.mkdir(parents=True, exist_ok=True)
        await anyio.Path(host).write_bytes(data)

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        await anyio.to_thread.run_sync(_copy, local, self._host_path(instance_id, remote))

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        host = self._host_path(instance_id, remote)
        if not host.exists():
            raise PathNotFoundError(f"no such file or directory in the instance: {remote}", op="download")
        await anyio.to_thread.run_sync(_copy, host, local)

    def _host_path(self, instance_id: str, path: str) -> Path:
        """``path`` (relative to the workspace, or absolute under /workspace) on this host;
        anything that resolves outside the workspace is refused."""
        self._record(instance_id)  # an unknown instance is InstanceNotFoundError, not a path error
        workspace = (self.root / instance_id / "workspace").resolve()
        wanted = PurePosixPath(path)
        if wanted.is_absolute():
            if wanted != _VIRTUAL and _VIRTUAL not in wanted.parents:
                raise PathOutsideWorkspaceError(f"{path} is outside the instance workspace", op="path")
            wanted = wanted.relative_to(_VIRTUAL)
        real = Path(os.path.realpath(workspace / wanted))
        if real != workspace and workspace not in real.parents:
            raise PathOutsideWorkspaceError(f"{path} is outside the instance workspace", op="path")
        return real


class FakeCapturer(Capturer):
    """``FakeProvider``'s captures: a capture is a copy of an instance's workspace under
    ``root()/.snapshots``; a new instance is ``create``d, then the copy put in its workspace.
    Listed and pruned by nobody (the protocol's defaults)."""

    def __init__(self, *, root: Callable[[], Path], create: Create) -> None:
        self._root, self._create = root, create

    async def find(self, tag: str) -> SnapshotRef | None:
        saved = self._root() / _SNAPSHOTS / tag
        return SnapshotRef("fake", tag, saved.stat().st_mtime) if saved.is_dir() else None

    async def save(self, instance_id: str, tag: str, cfg: ComputeConfig) -> SnapshotRef:
        # The env lives in instance.json, not in the workspace: nothing of it is saved.
        target = self._root() / _SNAPSHOTS / tag
        partial = target.with_name(f".{tag}.{uuid.uuid4().hex}")  # whole or not at all
        await anyio.to_thread.run_sync(_copy, self._root() / instance_id / "workspace", partial)
        os.replace(partial, target)
        return SnapshotRef("fake", tag, time.time())

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot: SnapshotRef
    ) -> InstanceInfo:
        info = await self._create(instance_id, cfg, labels)
        saved = self._root() / _SNAPSHOTS / snapshot.ref
        await anyio.to_thread.run_sync(_copy, saved, self._root() / instance_id / "workspace")
        return info


async def _pump(
    stream: ByteReceiveStream,
    buffer: OutputBuffer,
    name: Literal["stdout", "stderr"],
    request: ExecRequest,
    done: anyio.Event,
) -> None:
    """Copy one pipe into its capped buffer and the caller's sink until end-of-file."""
    try:
        async for chunk in stream:
            buffer.write(chunk)
            if request.on_output is not None:
                request.on_output(name, chunk)
    finally:
        done.set()


async def _feed(stdin: ByteSendStream, data: Stdin) -> None:
    """Write the command's stdin as it comes, then close it; a command that stops reading is fine."""
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        async for chunk in stdin_chunks(data):
            await stdin.send(chunk)
    await stdin.aclose()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _copy(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
