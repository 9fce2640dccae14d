"""envd, the in-sandbox daemon: its ``process.Process`` Connect service and its ``/files`` route.

The Connect service is served by the e2b wheel's own generated server stub
(``e2b.envd.process.process_connect.ProcessWSGIApplication``), so the wire encoding is the
vendor's; only the behaviour behind it is ours.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from email.parser import BytesParser
from email.policy import HTTP
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from e2b.envd.process import process_pb as pb
from protobuf import Oneof

from fakes.e2b._pty import PtyProc
from fakes.e2b._sandboxes import Proc, container_exec

if TYPE_CHECKING:
    from fakes.e2b import E2BFake, FakeSandbox

_KEEPALIVE_S = 1.0


class ProcessService:
    """``process.Process`` over the sandboxes of one :class:`E2BFake`."""

    def __init__(self, fake: E2BFake) -> None:
        self.fake = fake

    def _sandbox(self, ctx: Any) -> FakeSandbox:
        sandbox_id = ctx.request_headers.get("e2b-sandbox-id", "")
        sandbox = self.fake.running(sandbox_id)
        if sandbox is None:  # what the proxy answers for a dead sandbox: the SDK maps it
            raise ConnectError(Code.UNAVAILABLE, f"The sandbox {sandbox_id} was not found")
        return sandbox

    def _proc(self, ctx: Any, selector: Any) -> Proc | PtyProc:
        sandbox = self._sandbox(ctx)
        pid = selector.selector.value if selector and selector.selector else None
        proc = sandbox.procs.get(pid) if isinstance(pid, int) else None
        if proc is None or proc.exit_code is not None:
            raise ConnectError(Code.NOT_FOUND, f"process with pid {pid} not found")
        return proc

    def start(self, request: Any, ctx: Any) -> Iterator[Any]:
        sandbox = self._sandbox(ctx)
        config = request.process
        envs = {**sandbox.envs, **config.envs}  # envd gives every process the sandbox's env
        proc: Proc | PtyProc
        if request.pty is not None:  # on a terminal: its size is the Start's
            size = (request.pty.size.cols, request.pty.size.rows) if request.pty.size else (80, 24)
            proc = PtyProc(sandbox.container, config.cmd, list(config.args), envs, config.cwd or None, size)
        else:
            proc = Proc(
                sandbox.container,
                config.cmd,
                list(config.args),
                envs,
                config.cwd or None,
                bool(request.stdin),
            )
        sandbox.procs[proc.pid] = proc
        sandbox.touch()
        yield pb.StartResponse(event=_started(proc.pid))
        yield from self._follow(proc, pb.StartResponse, ctx.timeout_ms)

    def connect(self, request: Any, ctx: Any) -> Iterator[Any]:
        proc = self._proc(ctx, request.process)
        yield pb.ConnectResponse(event=_started(proc.pid))
        yield from self._follow(proc, pb.ConnectResponse, ctx.timeout_ms)

    def _follow(self, proc: Proc | PtyProc, wrap: Any, timeout_ms: float | None) -> Iterator[Any]:
        """Output events until the process ends. At the call's deadline (the SDK's ``timeout``,
        sent as ``Connect-Timeout-Ms``) the stream ends with DEADLINE_EXCEEDED and the process
        keeps running, as envd's does; a client that goes away stops this generator, never the
        process."""
        deadline = None if not timeout_ms else time.monotonic() + timeout_ms / 1000
        reader = object()
        try:
            yield from self._stream(proc, wrap, deadline, reader)
        finally:  # the client went away or the stream ended: what it had may be dropped
            with proc.cond:
                proc.readers.pop(reader, None)
                proc.cond.notify_all()  # a pump waiting on this reader goes on

    def _stream(
        self, proc: Proc | PtyProc, wrap: Any, deadline: float | None, reader: object
    ) -> Iterator[Any]:
        while True:
            if deadline is not None and time.monotonic() >= deadline:
                raise ConnectError(Code.DEADLINE_EXCEEDED, "context deadline exceeded")
            with proc.cond:
                if proc.caught_up(reader) and proc.exit_code is None:
                    left = _KEEPALIVE_S if deadline is None else max(0.0, deadline - time.monotonic())
                    proc.cond.wait(min(_KEEPALIVE_S, left))
                pending, code = proc.read(reader)
            for name, chunk in pending:
                data = pb.ProcessEvent.DataEvent(output=_oneof(name, chunk))
                yield wrap(event=pb.ProcessEvent(event=_oneof("data", data)))
            if code is not None:
                signalled = code == 137
                end = pb.ProcessEvent.EndEvent(
                    exit_code=-1 if signalled else code,
                    exited=not signalled,
                    status="signal: killed" if signalled else f"exit status {code}",
                    error="signal: killed" if signalled else None,
                )
                yield wrap(event=pb.ProcessEvent(event=_oneof("end", end)))
                return
            if not pending:
                yield wrap(event=pb.ProcessEvent(event=_oneof("keepalive", pb.ProcessEvent.KeepAlive())))

    def list(self, request: Any, ctx: Any) -> Any:
        sandbox = self._sandbox(ctx)
        alive = [p for p in sandbox.procs.values() if p.exit_code is None]
        return pb.ListResponse(
            processes=[
                pb.ProcessInfo(
                    config=pb.ProcessConfig(cmd=p.cmd, args=p.args, envs=p.envs, cwd=p.cwd), pid=p.pid
                )
                for p in alive
            ]
        )

    def send_input(self, request: Any, ctx: Any) -> Any:
        """Input for a terminal goes as ``pty``, for a pipe as ``stdin``; the other kind is refused
        (FAILED_PRECONDITION, assumed), as is input after the pipe was closed."""
        proc = self._proc(ctx, request.process)
        given = request.input.input if request.input else None
        if given is None or (given.field == "pty") != proc.pty or not proc.send(given.value):
            raise ConnectError(Code.FAILED_PRECONDITION, "stdin not enabled or closed")
        return pb.SendInputResponse()

    def close_stdin(self, request: Any, ctx: Any) -> Any:
        self._proc(ctx, request.process).close_stdin()
        return pb.CloseStdinResponse()

    def send_signal(self, request: Any, ctx: Any) -> Any:
        self._proc(ctx, request.process).kill()
        return pb.SendSignalResponse()

    def update(self, request: Any, ctx: Any) -> Any:
        """Resize a terminal (``pty.size``); a process without one is refused (assumed)."""
        proc = self._proc(ctx, request.process)
        size = request.pty.size if request.pty else None
        if not isinstance(proc, PtyProc) or size is None:
            raise ConnectError(Code.FAILED_PRECONDITION, f"process {proc.pid} has no terminal")
        proc.resize(size.cols, size.rows)
        return pb.UpdateResponse()

    def stream_input(self, request: Any, ctx: Any) -> Any:
        raise ConnectError(Code.UNIMPLEMENTED, "the e2b fake has no stream_input (use send_input)")


def _oneof(field: str, value: object) -> Any:
    """A protobuf oneof value (typed loosely: the stubs want a literal field name)."""
    return Oneof(field, value)


def _started(pid: int) -> Any:
    return pb.ProcessEvent(event=_oneof("start", pb.ProcessEvent.StartEvent(pid=pid)))


def _error(status: str, message: str) -> tuple[str, bytes, str]:
    body = json.dumps({"message": message, "code": int(status.split()[0])}).encode()
    return status, body, "application/json"


def files(fake: E2BFake, environ: dict[str, Any]) -> tuple[str, bytes, str]:
    """envd's ``GET /files`` (raw bytes) and ``POST /files`` (multipart or octet-stream):
    ``(status, body, content type)``."""
    sandbox = fake.running(environ.get("HTTP_E2B_SANDBOX_ID", ""))
    if sandbox is None:
        return _error("502 Bad Gateway", "sandbox not found")
    sandbox.touch()
    query = parse_qs(environ.get("QUERY_STRING", ""))
    path = query.get("path", [""])[0]
    if not path.startswith("/"):
        path = f"/home/user/{path}"
    if environ["REQUEST_METHOD"] == "GET":
        done = container_exec(sandbox.container, ["sh", "-c", 'test -f "$0" && exec cat -- "$0"', path])
        if done.returncode != 0:
            return _error("404 Not Found", f"path '{path}' does not exist")
        return "200 OK", done.stdout, "application/octet-stream"
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    kind = environ.get("CONTENT_TYPE", "")
    if kind.startswith("multipart/"):
        message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {kind}\r\n\r\n".encode() + body)
        part = next(iter(message.iter_parts()))
        body = part.get_payload(decode=True) or b""
    script = 'mkdir -p "$(dirname "$0")" && cat > "$0"'
    cut = fake.cut_uploads_at
    # envd opens the path with O_TRUNC and copies the body in as it comes: a transfer that breaks
    # off leaves what had come, and envd answers 500 ("error writing file")
    done = container_exec(sandbox.container, ["sh", "-c", script, path], body if cut is None else body[:cut])
    if cut is not None and len(body) > cut:
        return _error("500 Internal Server Error", "error writing file: unexpected EOF")
    if done.returncode != 0:
        message_text = done.stderr.decode(errors="replace").strip()
        return _error("400 Bad Request", message_text)
    name = path.rsplit("/", 1)[-1]
    return "200 OK", json.dumps([{"name": name, "type": "file", "path": path}]).encode(), "application/json"
