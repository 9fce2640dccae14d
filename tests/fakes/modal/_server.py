"""The gRPC services: Modal's control plane (``ModalClient``) and the task command router, both on
one loopback grpclib server. Only the methods the SDK's ``Sandbox`` uses are answered; every other
method fails ``UNIMPLEMENTED`` naming itself, so a gap shows up as one clear error."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
import time
from typing import Any

from grpclib import GRPCError, Status
from grpclib.server import Stream
from modal_proto import api_grpc, api_pb2
from modal_proto import task_command_router_grpc as tcr_grpc
from modal_proto import task_command_router_pb2 as tcr

from fakes import docker
from fakes.modal import _boxes, _tunnels
from fakes.modal._boxes import Box
from fakes.modal._dicts import DictMethods
from fakes.modal._images import ImageMethods
from fakes.modal._rpc import Counted, with_defaults

# google.protobuf's Empty as the generated module holds it (its stubs are not a dependency)
_EMPTY: Any = vars(api_pb2)["google_dot_protobuf_dot_empty__pb2"].Empty
_SUCCESS = api_pb2.GenericResult.GENERIC_STATUS_SUCCESS
ARG_MAX_BYTES = 65536  # modal/sandbox/_common.py; the worker enforces it too


def _jwt() -> str:
    def enc(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{enc({'alg': 'none'})}.{enc({'exp': int(time.time()) + 3600})}.fake"


class State:
    def __init__(self, url: str) -> None:
        self.url = url
        self.owner = secrets.token_hex(8)  # the value of this fake's container label
        self.apps: dict[str, str] = {}
        self.images: dict[str, str] = {}  # image id -> docker image
        #: snapshot images deleted while a container still used them: removed when the fake stops
        self.deleted_images: list[str] = []
        self.boxes: dict[str, Box] = {}
        self.dict_names: dict[tuple[str, str], str] = {}  # (environment, name) -> Dict id
        self.dicts: dict[str, dict[bytes, bytes]] = {}  # Dict id -> serialized key -> value
        self.calls: dict[str, int] = {}
        self.tls = _tunnels.Tls()  # the certificate of every encrypted tunnel
        #: set: exec stdin passes this many more bytes, then the stream is cut (the process reads
        #: EOF, later bytes are dropped), as a connection lost mid-transfer
        self.stdin_budget: int | None = None

    def box(self, sandbox_id: str) -> Box:
        if sandbox_id not in self.boxes:
            raise GRPCError(Status.NOT_FOUND, f"Sandbox {sandbox_id} not found")
        return self.boxes[sandbox_id]

    def by_task(self, task_id: str) -> Box:
        for box in self.boxes.values():
            if box.task_id == task_id:
                if box.status:
                    raise GRPCError(Status.NOT_FOUND, f"Task {task_id} has finished")
                return box
        raise GRPCError(Status.NOT_FOUND, f"Task {task_id} not found")

    async def finish(self, box: Box, status: str) -> None:
        if box.status:
            return
        box.status = status
        box.finished.set()
        _tunnels.close_tunnels(box)
        await docker.docker_async("rm", "-f", box.container)

    async def reap(self) -> None:
        """The scheduler: ``timeout`` is an absolute deadline, ``idle_timeout`` counts from the
        last exec activity (a running exec keeps the sandbox alive)."""
        while True:
            await asyncio.sleep(0.25)
            now = time.monotonic()
            for box in list(self.boxes.values()):
                if box.status:
                    continue
                if now >= box.deadline:
                    await self.finish(box, "timeout")
                elif box.idle_timeout and not box.busy() and now - box.last_active >= box.idle_timeout:
                    await self.finish(box, "idle")

    def result(self, box: Box) -> api_pb2.GenericResult:
        g = api_pb2.GenericResult
        if box.status == "timeout":
            return g(status=g.GENERIC_STATUS_TIMEOUT)
        if box.status in ("terminated", "idle"):
            return g(status=g.GENERIC_STATUS_TERMINATED)
        return g()


async def _recv(stream: Stream[Any, Any]) -> Any:
    msg = await stream.recv_message()
    if msg is None:
        raise GRPCError(Status.INVALID_ARGUMENT, "no request message")
    return msg


def _source_env(sources: Any) -> dict[str, str]:
    """Env given inline (``SecretSource.env``); named secrets are not modelled."""
    env: dict[str, str] = {}
    for src in sources:
        if src.HasField("env"):
            env.update(src.env.contents)
        elif src.secret_id:
            raise GRPCError(Status.UNIMPLEMENTED, "the Modal fake does not model named secrets")
    return env


class _Control(DictMethods, ImageMethods, api_grpc.ModalClientBase):
    def __init__(self, state: State) -> None:
        self.s = state

    async def _req(self, stream: Stream[Any, Any], name: str) -> Any:
        return await _recv(stream)  # counted by Counted

    async def ClientHello(self, stream: Stream[Any, Any]) -> None:
        await self._req(stream, "ClientHello")
        await stream.send_message(api_pb2.ClientHelloResponse())

    async def AuthTokenGet(self, stream: Stream[Any, Any]) -> None:
        await self._req(stream, "AuthTokenGet")
        await stream.send_message(api_pb2.AuthTokenGetResponse(token=_jwt()))

    async def AppGetOrCreate(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "AppGetOrCreate")
        app_id = self.s.apps.setdefault(req.app_name, _boxes.new_id("ap"))
        await stream.send_message(api_pb2.AppGetOrCreateResponse(app_id=app_id))

    async def EnvironmentGetOrCreate(self, stream: Stream[Any, Any]) -> None:
        await self._req(stream, "EnvironmentGetOrCreate")
        settings = api_pb2.EnvironmentSettings(image_builder_version="2025.06")
        meta = api_pb2.EnvironmentMetadata(name="main", settings=settings)
        await stream.send_message(
            api_pb2.EnvironmentGetOrCreateResponse(environment_id="en-fake", metadata=meta)
        )

    async def SandboxCreateV2(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "SandboxCreateV2")
        d = req.definition
        if d.name and any(
            b.name == d.name and b.app_id == req.app_id and not b.status for b in self.s.boxes.values()
        ):
            raise GRPCError(Status.ALREADY_EXISTS, f"Sandbox with name {d.name!r} already exists")
        if d.image_id not in self.s.images:
            raise GRPCError(Status.NOT_FOUND, f"Image {d.image_id} not found")
        env = dict(d.environment_variables.contents)
        env.update(_source_env(req.secret_sources))
        blocked = d.network_access.network_access_type == api_pb2.NetworkAccess.BLOCKED
        try:
            image = self.s.images[d.image_id]
            cid = await _boxes.start_container(image, env, d.workdir, blocked, self.s.owner)
        except RuntimeError as exc:
            raise GRPCError(Status.INTERNAL, str(exc)) from exc
        box = Box(
            sandbox_id=_boxes.new_id("sb"),
            task_id=_boxes.new_id("ta", "V"),
            container=cid,
            app_id=req.app_id,
            name=d.name,
            tags={t.tag_name: t.tag_value for t in req.tags},
            image_id=d.image_id,
            deadline=time.monotonic() + (d.timeout_secs or 300),
            idle_timeout=d.idle_timeout_secs or None,
        )
        box.env_keys = sorted(env)
        self.s.boxes[box.sandbox_id] = box
        try:
            await _tunnels.open_tunnels(box, d.open_ports.ports, self.s.tls)
        except (RuntimeError, OSError) as exc:
            await self.s.finish(box, "terminated")
            raise GRPCError(Status.INTERNAL, f"the fake opened no tunnel: {exc}") from exc
        box.definition = d  # type: ignore[attr-defined]  # kept for tests that inspect the call
        access = api_pb2.CommandRouterAccess(jwt=_jwt(), url=self.s.url)
        await stream.send_message(
            api_pb2.SandboxCreateV2Response(
                sandbox_id=box.sandbox_id, task_id=box.task_id, command_router_access=access
            )
        )

    async def SandboxGetCommandRouterAccess(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "SandboxGetCommandRouterAccess")
        if req.sandbox_id:
            self.s.box(req.sandbox_id)
        else:
            self.s.by_task(req.task_id)
        await stream.send_message(api_pb2.SandboxGetCommandRouterAccessResponse(jwt=_jwt(), url=self.s.url))

    async def SandboxGetTunnelsV2(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "SandboxGetTunnelsV2")
        box = self.s.box(req.sandbox_id)  # a finished sandbox answers its result, no tunnels
        result = self.s.result(box) if box.status else api_pb2.GenericResult(status=_SUCCESS)
        await stream.send_message(api_pb2.SandboxGetTunnelsResponse(result=result, tunnels=box.tunnels))

    async def SandboxGetTaskIdV2(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "SandboxGetTaskIdV2")
        box = self.s.box(req.sandbox_id)
        if box.status:
            await stream.send_message(api_pb2.SandboxGetTaskIdResponse(task_result=self.s.result(box)))
        else:
            await stream.send_message(api_pb2.SandboxGetTaskIdResponse(task_id=box.task_id))

    async def SandboxWaitV2(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "SandboxWaitV2")
        box = self.s.box(req.sandbox_id)
        if req.timeout:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(box.finished.wait(), req.timeout)
        await stream.send_message(api_pb2.SandboxWaitResponse(result=self.s.result(box)))

    async def SandboxTerminateV2(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "SandboxTerminateV2")
        await self.s.finish(self.s.box(req.sandbox_id), "terminated")
        await stream.send_message(api_pb2.SandboxTerminateResponse())

    async def SandboxListV2(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "SandboxListV2")
        want = {t.tag_name: t.tag_value for t in req.tags}
        infos = [
            api_pb2.SandboxInfo(
                id=b.sandbox_id,
                app_id=b.app_id,
                created_at=b.created_at,
                name=b.name,
                tags=[api_pb2.SandboxTag(tag_name=k, tag_value=v) for k, v in b.tags.items()],
            )
            for b in self.s.boxes.values()
            if not b.status
            and (not req.app_id or b.app_id == req.app_id)
            and want.items() <= b.tags.items()
            and (not req.before_timestamp or b.created_at < req.before_timestamp)
        ]
        await stream.send_message(api_pb2.SandboxListResponse(sandboxes=infos))

    async def SandboxTagsGetV2(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "SandboxTagsGetV2")
        tags = self.s.box(req.sandbox_id).tags
        pb = [api_pb2.SandboxTag(tag_name=k, tag_value=v) for k, v in tags.items()]
        await stream.send_message(api_pb2.SandboxTagsGetResponse(tags=pb))

    async def SandboxTagsSetV2(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "SandboxTagsSetV2")
        self.s.box(req.sandbox_id).tags = {t.tag_name: t.tag_value for t in req.tags}
        await stream.send_message(_EMPTY())


class _Router(tcr_grpc.TaskCommandRouterBase):
    def __init__(self, state: State) -> None:
        self.s = state

    def _exec(self, task_id: str, exec_id: str) -> tuple[Box, _boxes.Exec]:
        box = self.s.by_task(task_id)
        if exec_id not in box.execs:
            raise GRPCError(Status.NOT_FOUND, f"Exec {exec_id} not found")
        return box, box.execs[exec_id]

    async def TaskExecStart(self, stream: Stream[Any, Any]) -> None:
        req = await _recv(stream)
        box = self.s.by_task(req.task_id)
        if sum(len(str(a)) for a in req.command_args) > ARG_MAX_BYTES:
            raise GRPCError(Status.INVALID_ARGUMENT, "argument list too long")
        env = {e.key: e.value for e in req.env}
        env.update(_source_env(req.secret_sources))
        timeout = req.timeout_secs if req.HasField("timeout_secs") else None
        pty = req.pty_info if req.HasField("pty_info") else None
        ex = await _boxes.start_exec(box, list(req.command_args), req.workdir or None, env, timeout, pty)
        box.execs[req.exec_id] = box.execs.pop(ex.exec_id)
        await stream.send_message(tcr.TaskExecStartResponse())

    async def TaskExecStdioRead(self, stream: Stream[Any, Any]) -> None:
        req = await _recv(stream)
        _, ex = self._exec(req.task_id, req.exec_id)
        name = "err" if req.file_descriptor == tcr.TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR else "out"
        offset = req.offset
        if offset < ex.base[name]:
            raise GRPCError(Status.DATA_LOSS, "the Modal fake keeps no output already read")
        while True:
            buf = ex.err if name == "err" else ex.out
            start = offset - ex.base[name]
            if start < len(buf):
                data = bytes(buf[start : start + (1 << 20)])
                await stream.send_message(tcr.TaskExecStdioReadResponse(data=data))
                offset += len(data)
                del buf[: offset - ex.base[name]]
                ex.base[name] = offset
                ex.drained.set()
                continue
            if ex.done.is_set():
                return
            ex.grew.clear()
            await ex.grew.wait()

    async def _write(self, ex: _boxes.Exec, offset: int, data: bytes, eof: bool) -> None:
        proc_in = ex.proc.stdin
        assert proc_in is not None
        skip = max(0, ex.stdin_written - offset)
        budget = self.s.stdin_budget
        if budget is not None and len(data) - skip > budget and not ex.stdin_closed:
            data, eof, self.s.stdin_budget = data[: skip + budget], True, None
        elif budget is not None:
            self.s.stdin_budget = budget - max(0, len(data) - skip)
        if data[skip:] and not ex.stdin_closed:
            try:
                proc_in.write(data[skip:])
                await proc_in.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise GRPCError(Status.FAILED_PRECONDITION, "stdin closed: the process exited") from exc
            ex.stdin_written += len(data) - skip
        if eof and not ex.stdin_closed:
            ex.stdin_closed = True
            proc_in.close()

    async def TaskExecStdinWrite(self, stream: Stream[Any, Any]) -> None:
        req = await _recv(stream)
        _, ex = self._exec(req.task_id, req.exec_id)
        await self._write(ex, req.offset, req.data, req.eof)
        await stream.send_message(tcr.TaskExecStdinWriteResponse())

    async def TaskExecStdinWriteStream(self, stream: Stream[Any, Any]) -> None:
        ex: _boxes.Exec | None = None
        offset = 0
        async for msg in stream:
            if msg.HasField("start"):
                _, ex = self._exec(msg.start.task_id, msg.start.exec_id)
                offset = msg.start.offset
            elif ex is not None:
                await self._write(ex, offset, msg.data, msg.HasField("end"))
                offset += len(msg.data)
        await stream.send_message(tcr.TaskExecStdinWriteStreamResponse())

    async def TaskExecStdinStatus(self, stream: Stream[Any, Any]) -> None:
        req = await _recv(stream)
        _, ex = self._exec(req.task_id, req.exec_id)
        await stream.send_message(
            tcr.TaskExecStdinStatusResponse(num_bytes_written=ex.stdin_written, closed=ex.stdin_closed)
        )

    async def TaskExecWait(self, stream: Stream[Any, Any]) -> None:
        req = await _recv(stream)
        _, ex = self._exec(req.task_id, req.exec_id)
        await ex.done.wait()
        await stream.send_message(tcr.TaskExecWaitResponse(code=ex.code or 0))

    async def TaskSnapshotFilesystem(self, stream: Stream[Any, Any]) -> None:
        req = await _recv(stream)
        box = self.s.by_task(req.task_id)
        image_id = _boxes.new_id("im")
        ref = f"{_boxes.SNAPSHOT_REPOSITORY}:{image_id}"
        # the filesystem only: Modal's snapshot holds no sandbox env (docker commit would keep it)
        blank = [arg for key in box.env_keys for arg in ("--change", f"ENV {key}=")]
        rc, _, err = await docker.docker_async("commit", *blank, box.container, ref)
        if rc:
            raise GRPCError(Status.INTERNAL, err.decode(errors="replace").strip())
        self.s.images[image_id] = ref
        await stream.send_message(tcr.TaskSnapshotFilesystemResponse(image_id=image_id))

    async def TaskExecPoll(self, stream: Stream[Any, Any]) -> None:
        req = await _recv(stream)
        _, ex = self._exec(req.task_id, req.exec_id)
        resp = tcr.TaskExecPollResponse() if ex.code is None else tcr.TaskExecPollResponse(code=ex.code)
        await stream.send_message(resp)


def services(state: State) -> list[Any]:
    return [
        Counted(with_defaults(api_grpc.ModalClientBase, _Control)(state), state),
        Counted(with_defaults(tcr_grpc.TaskCommandRouterBase, _Router)(state), state),
    ]
