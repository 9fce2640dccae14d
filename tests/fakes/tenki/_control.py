"""The control plane of the Tenki fake: ``tenki.sandbox.v1.SandboxService`` (the RPCs the SDK's
create, get, list, terminate, extend, credential and snapshot calls use), on the wheel's stubs."""

from __future__ import annotations

import importlib
import time
import uuid
from typing import TYPE_CHECKING, Any

import grpc  # type: ignore[import-untyped]

from fakes import docker
from fakes.tenki import _sandboxes

# The wheel's generated modules (the SDK's own wire): private to the SDK, and untyped.
pb: Any = importlib.import_module("tenki_sandbox._internal.proto.tenki.sandbox.v1.sandbox_pb2")
pb_grpc: Any = importlib.import_module("tenki_sandbox._internal.proto.tenki.sandbox.v1.sandbox_pb2_grpc")

if TYPE_CHECKING:
    from fakes.tenki import TenkiFake

_CPU = (1, 128)
_MEMORY = (128, 524288)


class Control(pb_grpc.SandboxServiceServicer):  # type: ignore[misc]
    def __init__(self, fake: TenkiFake) -> None:
        self.fake = fake

    def CreateSession(self, request: Any, context: Any) -> Any:
        fake = self.fake
        fake.enter("CreateSession", context)
        if request.cpu_cores and not _CPU[0] <= request.cpu_cores <= _CPU[1]:
            _sandboxes.abort(context, grpc.StatusCode.INVALID_ARGUMENT, "cpu_cores out of range")
        if request.memory_mb and (not _MEMORY[0] <= request.memory_mb <= _MEMORY[1] or request.memory_mb % 2):
            _sandboxes.abort(context, grpc.StatusCode.INVALID_ARGUMENT, "memory_mb is invalid")
        image = docker.IMAGE
        if request.snapshot_id:
            snap = fake.snapshots.get(request.snapshot_id)
            if snap is None:
                _sandboxes.abort(
                    context, grpc.StatusCode.NOT_FOUND, f"snapshot {request.snapshot_id} not found"
                )
            image = snap["_image"]
        sid = f"sbx-{uuid.uuid4().hex[:16]}"
        env = dict(request.env)
        container = _sandboxes.start(
            f"tenki-fake-{fake.fake_id}-{sid[4:12]}",
            fake.fake_id,
            env,
            network_none=not request.allow_outbound,
            image=image,
        )
        now = time.time()
        limit = request.max_duration.seconds + request.max_duration.nanos / 1e9
        box: dict[str, Any] = {
            "id": sid,
            "name": request.name,
            "state": "RUNNING",
            "tags": list(request.tags),
            "metadata": dict(request.metadata),
            "env": env,
            "cpu_cores": request.cpu_cores or 2,
            "memory_mb": request.memory_mb or 4096,
            "disk_size_gb": request.disk_size_gb or 5,
            "outbound": request.allow_outbound,
            "inbound": request.allow_inbound,
            "allow_domains": list(request.egress.allow_domains),
            "allow_cidrs": list(request.egress.allow_cidrs),
            "snapshot_id": request.snapshot_id,
            "idle_timeout_minutes": request.idle_timeout_minutes,
            "sticky": request.sticky,
            "created": now,
            "timeout_at": now + limit if limit > 0 else None,
            "_container": container,
        }
        with fake.lock:
            fake.sessions[sid] = box
        return fake.answer(
            "CreateSession",
            pb.CreateSessionResponse(session=self.session(box), **self.data_plane(sid)),
            context,
        )

    def data_plane(self, sid: str) -> dict[str, Any]:
        credential = pb.SessionCredential(credential=f"cred-{sid}")
        credential.expires_at.FromSeconds(int(time.time()) + 3600)
        return {
            "data_plane_endpoint": self.fake.base_url,
            "credential": credential,
            "route_status": pb.DATA_PLANE_ROUTE_STATUS_VERIFIED,
        }

    def session(self, box: dict[str, Any]) -> Any:
        out = pb.SandboxSession(
            id=box["id"],
            name=box["name"],
            state=pb.SessionState.Value(f"SESSION_STATE_{box['state']}"),
            owner_type="SERVICE",
            owner_id="self",
            workspace_id="ws-fake",
            inbound_enabled=box["inbound"],
            outbound_enabled=box["outbound"],
            cpu_cores=box["cpu_cores"],
            memory_mb=box["memory_mb"],
            disk_size_gb=box["disk_size_gb"],
            metadata=box["metadata"],
            tags=box["tags"],
            snapshot_id=box["snapshot_id"],
            sticky=box["sticky"],
            egress=pb.SessionEgressPolicy(allow_domains=box["allow_domains"], allow_cidrs=box["allow_cidrs"]),
        )
        out.created_at.FromSeconds(int(box["created"]))
        if box["timeout_at"] is not None:
            out.timeout_at.FromNanoseconds(int(box["timeout_at"] * 1e9))
        return out

    def _box(self, sid: str, context: Any) -> dict[str, Any]:
        box = self.fake.sessions.get(sid)
        if box is None:
            _sandboxes.abort(context, grpc.StatusCode.NOT_FOUND, f"session not found: {sid}")
        return box

    def GetSession(self, request: Any, context: Any) -> Any:
        self.fake.enter("GetSession", context)
        box = self._box(request.session_id, context)
        return self.fake.answer("GetSession", pb.GetSessionResponse(session=self.session(box)), context)

    def CreateSessionCredential(self, request: Any, context: Any) -> Any:
        self.fake.enter("CreateSessionCredential", context)
        box = self._box(request.session_id, context)
        if box["state"] != "RUNNING":
            _sandboxes.abort(context, grpc.StatusCode.FAILED_PRECONDITION, "session terminated")
        return pb.CreateSessionCredentialResponse(**self.data_plane(box["id"]))

    def ListWorkspaceSandboxes(self, request: Any, context: Any) -> Any:
        self.fake.enter("ListWorkspaceSandboxes", context)
        wanted = set(request.tags)  # every tag must be present; metadata is not a filter at all
        with self.fake.lock:
            boxes = [b for b in self.fake.sessions.values() if wanted <= set(b["tags"])]
        if not request.include_terminated:
            boxes = [b for b in boxes if b["state"] != "TERMINATED"]
        response = pb.ListWorkspaceSandboxesResponse(sessions=[self.session(b) for b in boxes])
        return self.fake.answer("ListWorkspaceSandboxes", response, context)

    def TerminateSession(self, request: Any, context: Any) -> Any:
        self.fake.enter("TerminateSession", context)
        box = self._box(request.session_id, context)
        if box["state"] == "TERMINATED":
            _sandboxes.abort(context, grpc.StatusCode.FAILED_PRECONDITION, "session already terminated")
        self.fake.terminate(box)
        response = pb.TerminateSessionResponse(session=self.session(box))
        return self.fake.answer("TerminateSession", response, context)

    def PauseSession(self, request: Any, context: Any) -> Any:
        """``docker pause`` (memory and disk kept, as Tenki's memory snapshot keeps them); PAUSED
        at once, so the SDK's synchronous ``pause()`` never waits. A paused one stays paused."""
        self.fake.enter("PauseSession", context)
        box = self._box(request.session_id, context)
        if box["state"] == "RUNNING":
            _sandboxes.freeze(box["_container"], frozen=True)
            box["state"] = "PAUSED"
        elif box["state"] != "PAUSED":
            _sandboxes.abort(context, grpc.StatusCode.FAILED_PRECONDITION, f"session is {box['state']}")
        return self.fake.answer("PauseSession", pb.PauseSessionResponse(session=self.session(box)), context)

    def ResumeSession(self, request: Any, context: Any) -> Any:
        """``docker unpause``, then ``/tmp`` emptied, as Tenki clears it on resume."""
        self.fake.enter("ResumeSession", context)
        box = self._box(request.session_id, context)
        if box["state"] != "PAUSED":
            _sandboxes.abort(context, grpc.StatusCode.FAILED_PRECONDITION, f"session is {box['state']}")
        _sandboxes.freeze(box["_container"], frozen=False)
        _sandboxes.clear_tmp(box["_container"])
        box["state"] = "RUNNING"
        return self.fake.answer("ResumeSession", pb.ResumeSessionResponse(session=self.session(box)), context)

    def ExtendSession(self, request: Any, context: Any) -> Any:
        self.fake.enter("ExtendSession", context)
        box = self._box(request.session_id, context)
        extra = request.additional_duration.seconds + request.additional_duration.nanos / 1e9
        box["timeout_at"] = (box["timeout_at"] or time.time()) + extra
        return pb.ExtendSessionResponse(session=self.session(box))

    def CreateSnapshot(self, request: Any, context: Any) -> Any:
        fake = self.fake
        fake.enter("CreateSnapshot", context)
        box = self._box(request.session_id, context)
        snap_id = f"snap-{uuid.uuid4().hex[:16]}"
        image = f"praisonai-tenki-fake-{fake.fake_id}:{snap_id}"
        _sandboxes.commit(box["_container"], image)  # ready at once (the real one is asynchronous)
        snap = {"id": snap_id, "session_id": box["id"], "name": request.name, "_image": image}
        with fake.lock:
            fake.snapshots[snap_id] = snap
        return pb.CreateSnapshotResponse(snapshot=self.snapshot(snap))

    def snapshot(self, snap: dict[str, Any]) -> Any:
        out = pb.Snapshot(
            id=snap["id"],
            session_id=snap["session_id"],
            workspace_id="ws-fake",
            state=pb.SNAPSHOT_STATE_READY,
            type=pb.SNAPSHOT_TYPE_USER,
        )
        if snap["name"]:
            out.name = snap["name"]
        return out

    def GetSnapshot(self, request: Any, context: Any) -> Any:
        self.fake.enter("GetSnapshot", context)
        snap = self.fake.snapshots.get(request.snapshot_id)
        if snap is None:
            _sandboxes.abort(context, grpc.StatusCode.NOT_FOUND, f"snapshot {request.snapshot_id} not found")
        return pb.GetSnapshotResponse(snapshot=self.snapshot(snap))

    def ListWorkspaceSnapshots(self, request: Any, context: Any) -> Any:
        self.fake.enter("ListWorkspaceSnapshots", context)
        with self.fake.lock:
            snaps = [self.snapshot(s) for s in self.fake.snapshots.values()]
        return pb.ListWorkspaceSnapshotsResponse(snapshots=snaps)
