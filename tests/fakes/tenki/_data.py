"""The data plane of the Tenki fake: ``SandboxSessionDataPlaneService.Run`` (the bidi stream behind
``AsyncSandbox.exec``/``start``), ``Stat`` (the SDK's readiness probe) and ``ReadFile``/``WriteFile``
(paths inside ``/home/tenki`` only, as Tenki's fs API), on the wheel's stubs.

One ``docker exec`` per Run: stdin frames go to its stdin, its stdout and stderr come back as
frames (bytes), the exit as ``RunExit``. The guest's timeout is the fake's clock: SIGTERM to the
command's process group, SIGKILL after ``GRACE_S``, then ``timed_out=True, reason="timeout"`` with
the output so far. A stream the client drops kills the command (no reattach).
"""

from __future__ import annotations

import importlib
import posixpath
import queue
import threading
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
    from collections.abc import Iterator

    from fakes.tenki import TenkiFake

GRACE_S = 2.0
_SIGNALS = {"SIG_TERM": "TERM", "SIG_KILL": "KILL", "SIG_INT": "INT", "SIG_HUP": "HUP"}
_NAMES = {143: "terminated", 137: "killed", 130: "interrupt", 129: "hangup"}


class DataPlane(pb_grpc.SandboxSessionDataPlaneServiceServicer):  # type: ignore[misc]
    def __init__(self, fake: TenkiFake) -> None:
        self.fake = fake

    def _session(self, sid: str, context: Any) -> dict[str, Any]:
        got = dict(context.invocation_metadata()).get("x-tenki-session-cert")
        if got != f"cred-{sid}":
            _sandboxes.abort(context, grpc.StatusCode.UNAUTHENTICATED, "invalid session credential")
        box = self.fake.sessions.get(sid)
        if box is None:
            _sandboxes.abort(context, grpc.StatusCode.NOT_FOUND, "session not found")
        if box["state"] != "RUNNING":
            _sandboxes.abort(context, grpc.StatusCode.FAILED_PRECONDITION, "session terminated")
        return box

    def Stat(self, request: Any, context: Any) -> Any:
        self.fake.count("Stat")
        box = self._session(request.request.session_id, context)
        path = request.request.path
        done = docker.docker("exec", box["_container"], "test", "-e", path, timeout=30)
        exists = done.returncode == 0
        return pb.SandboxSessionDataPlaneServiceStatResponse(response=pb.StatResponse(exists=exists))

    def _fs_path(self, path: str, context: Any) -> str:
        """Tenki's fs rule: paths are relative to the workdir, absolute ones must stay inside it."""
        full = posixpath.normpath(posixpath.join(_sandboxes.HOME, path))
        if full != _sandboxes.HOME and not full.startswith(_sandboxes.HOME + "/"):
            _sandboxes.abort(context, grpc.StatusCode.INVALID_ARGUMENT, f"path {path} is outside the workdir")
        return full

    def WriteFile(self, request: Any, context: Any) -> Any:
        self.fake.count("WriteFile")
        req = request.request
        box = self._session(req.session_id, context)
        script = 'mkdir -p -- "$(dirname -- "$0")" && cat > "$0"'
        path = self._fs_path(req.path, context)
        docker.docker("exec", "-i", box["_container"], "sh", "-c", script, path, data=bytes(req.content))
        return pb.SandboxSessionDataPlaneServiceWriteFileResponse(
            response=pb.WriteFileResponse(path=req.path, size_bytes=len(req.content))
        )

    def ReadFile(self, request: Any, context: Any) -> Any:
        self.fake.count("ReadFile")
        req = request.request
        box = self._session(req.session_id, context)
        path = self._fs_path(req.path, context)
        done = docker.docker("exec", box["_container"], "sh", "-c", '[ -f "$0" ] && cat -- "$0"', path)
        if done.returncode != 0:
            _sandboxes.abort(
                context, grpc.StatusCode.NOT_FOUND, f"open {req.path}: no such file or directory"
            )
        response = pb.ReadFileResponse(path=req.path, content=done.stdout)
        return pb.SandboxSessionDataPlaneServiceReadFileResponse(response=response)

    def Run(self, request_iterator: Iterator[Any], context: Any) -> Iterator[Any]:
        self.fake.count("Run")
        start = next(request_iterator).frame.start
        box = self._session(start.session_id, context)
        self.fake.argvs.append(list(start.cmd))
        self.fake.privileged.append(bool(start.privileged))
        run = _Run(box["_container"], start, context)
        yield _frame(started=pb.RunStarted(pid=run.proc.pid))
        threading.Thread(target=run.feed, args=(request_iterator, self.fake), daemon=True).start()
        yield from run.output()
        yield _frame(exit=run.exit())


def _frame(**kw: Any) -> Any:
    return pb.SandboxSessionDataPlaneServiceRunResponse(frame=pb.RunResponse(**kw))


class _Run:
    """One command: its docker exec, its readers, its clock."""

    def __init__(self, container: str, start: Any, context: Any) -> None:
        self.container, self.run_id = container, uuid.uuid4().hex
        cwd = start.cwd or _sandboxes.HOME
        if not cwd.startswith("/"):
            cwd = f"{_sandboxes.HOME}/{cwd}"
        self.proc = _sandboxes.run(container, self.run_id, list(start.cmd), cwd, dict(start.env))
        self.started = time.monotonic()
        self.chunks: queue.Queue[tuple[str, bytes] | None] = queue.Queue()
        self.timed_out = False
        self.done = threading.Event()
        for name, pipe in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            threading.Thread(target=self._read, args=(name, pipe), daemon=True).start()
        if start.timeout_ms:
            threading.Thread(target=self._clock, args=(start.timeout_ms / 1000,), daemon=True).start()
        context.add_callback(self._dropped)

    def _read(self, name: str, pipe: Any) -> None:
        while chunk := pipe.read(65536):
            self.chunks.put((name, chunk))
        self.chunks.put(None)

    def _clock(self, limit: float) -> None:
        if self.done.wait(limit):
            return
        self.timed_out = True
        _sandboxes.signal_group(self.container, self.run_id, "TERM")
        if not self.done.wait(GRACE_S):
            _sandboxes.signal_group(self.container, self.run_id, "KILL")

    def _dropped(self) -> None:
        if not self.done.is_set():  # the stream ended before the command: the platform kills it
            _sandboxes.signal_group(self.container, self.run_id, "TERM")
            if not self.done.wait(GRACE_S):
                _sandboxes.signal_group(self.container, self.run_id, "KILL")

    def feed(self, requests: Iterator[Any], fake: TenkiFake) -> None:
        assert self.proc.stdin is not None
        cut = False
        try:
            for wrapped in requests:
                frame = wrapped.frame
                if frame.stdin and not cut:
                    data, budget = frame.stdin, fake.stdin_budget
                    if budget is not None:  # a stream cut mid-transfer: the command reads EOF
                        cut, data = len(data) > budget, data[:budget]
                        fake.stdin_budget = None if cut else budget - len(data)
                    self.proc.stdin.write(data)
                    if cut:
                        self.proc.stdin.close()
                if frame.stdin_close and not cut:
                    self.proc.stdin.close()
                if frame.HasField("signal"):
                    name = pb.RunSignal.Sig.Name(frame.signal.signal)
                    _sandboxes.signal_group(self.container, self.run_id, _SIGNALS.get(name, "KILL"))
        except (OSError, ValueError, grpc.RpcError):
            pass  # the command ended (its stdin is closed) or the client went away

    def output(self) -> Iterator[Any]:
        ended = 0
        while ended < 2:
            item = self.chunks.get()
            if item is None:
                ended += 1
            else:
                yield _frame(**{item[0]: item[1]})

    def exit(self) -> Any:
        code = self.proc.wait()
        self.done.set()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        # The command's pid file stays (a few bytes in the container's /tmp): one more docker exec
        # per command would double the fake's load when hundreds run at once.
        took = int((time.monotonic() - self.started) * 1000)
        if code == _sandboxes.NO_CWD_EXIT:  # [guess] the guest's spawn failure: no status, ENOENT
            return pb.RunExit(exit_code=-1, errno=2, reason="start_failed: chdir: no such file or directory")
        signal = _NAMES.get(code, "") if code > 128 else ""
        reason = "timeout" if self.timed_out else ("signal" if signal else "")
        errno = 0
        return pb.RunExit(
            exit_code=code,
            signal=signal,
            timed_out=self.timed_out,
            duration_ms=took,
            reason=reason,
            errno=errno,
        )
