"""The Daytona fake's PTY sessions: the daemon's ``/process/pty`` routes on a docker exec with a tty.

As the daemon (apps/daemon/pkg/toolbox/process/pty) does: ``create-connect`` (a WebSocket) starts
the sandbox's shell (the first of zsh, bash, sh) as ``-i -l`` on a pseudo-terminal of
``cols`` x ``rows`` in ``cwd`` (default ``/workspace``), with the container's env plus the envs
of the ``X-Daytona-Pty-Envs~<base64url JSON>`` subprotocol; it answers a text control message
``{"type": "control", "status": "connected"}``, relays the client's messages to the terminal's
input and its output as binary messages; when the shell ends it sends (to a client that offered
``X-Daytona-Pty-Exit-Control``) ``{"type": "control", "status": "exited", "exitCode": N}`` and
closes with 1000 (exit 0) or 1011 and the reason ``{"exitCode": N, "exitReason": ...}``.
``POST /process/pty/{id}/resize`` (``{"cols", "rows"}``) is the exec resize API; ``DELETE
/process/pty/{id}`` kills the shell and its descendants by parent pid (what left the tree, by
``setsid`` and a dead parent, survives, as under the daemon). A duplicate id is 409, an unknown
one 404, a missing cwd 500 "failed to start PTY session" (as the daemon's create does).
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from fakes._ws import TEXT, WebSocket, offered

EXIT_CONTROL = "X-Daytona-Pty-Exit-Control"
_ENVS = "X-Daytona-Pty-Envs~"
_PIDS = "/tmp/.daytona-fake-pty"  # the shell's pid per session, for the kill's tree walk
#: Sets the tty's size (docker's exec takes none), records the pid, then becomes the shell.
_START = (
    'stty cols "$1" rows "$2" 2>/dev/null; mkdir -p {pids} && echo $$ > {pids}/"$3"; '
    'for s in zsh bash sh; do command -v "$s" >/dev/null && exec "$s" -i -l; done'
)
#: SIGKILLs the tree under the recorded pid, leaves first, then the shell (the daemon's kill).
_KILL_TREE = (
    'tree() { for c in $(ps -o pid= --ppid "$1"); do tree "$c"; done; kill -9 "$1" 2>/dev/null; }; '
    'p=$(cat {pids}/"$1" 2>/dev/null) && tree "$p"; rm -f {pids}/"$1"; true'
)


def _api() -> Any:
    import docker

    return docker.APIClient(version="auto")


class Sessions:
    """The PTY sessions of every sandbox of one fake, by ``(container, session id)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[tuple[str, str], dict[str, Any]] = {}

    def connect(self, h: BaseHTTPRequestHandler, container: str, query: dict[str, str], cwd: str) -> None:
        """Serve ``create-connect`` on ``h`` until the shell ends or the client goes."""
        from fakes.daytona._wire import send_error

        sid, protocols = query.get("id", ""), offered(h)
        envs: dict[str, str] = {}
        for token in protocols:
            if token.startswith(_ENVS):
                encoded = token[len(_ENVS) :]
                envs = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
        if max(int(query.get("cols", 80)), int(query.get("rows", 24))) > 1000:
            return send_error(h, 400, "invalid value for cols - must be less than 1000")
        with self._lock:
            if not sid or (container, sid) in self._live:
                return send_error(h, 409 if sid else 400, f"PTY session {sid!r} already exists")
            session = {"id": sid, "cols": int(query.get("cols", 80)), "rows": int(query.get("rows", 24))}
            self._live[(container, sid)] = session
        try:
            self._serve(h, container, session, cwd, envs, EXIT_CONTROL in protocols)
        finally:
            with self._lock:
                self._live.pop((container, sid), None)

    def _serve(
        self,
        h: BaseHTTPRequestHandler,
        container: str,
        session: dict[str, Any],
        cwd: str,
        envs: dict[str, str],
        exit_control: bool,
    ) -> None:
        api = _api()
        start = _START.replace("{pids}", _PIDS)
        argv = ["sh", "-c", start, "sh", str(session["cols"]), str(session["rows"]), session["id"]]
        session.update(api=api, cwd=cwd, envs=envs, created=time.time())
        session["exec"] = api.exec_create(
            container, argv, stdin=True, tty=True, environment=envs, workdir=cwd
        )["Id"]
        raw = api.exec_start(session["exec"], socket=True, tty=True)
        sock: socket.socket = getattr(raw, "_sock", raw)
        ws = WebSocket(h, EXIT_CONTROL if exit_control else "")
        ws.send(json.dumps({"type": "control", "status": "connected"}).encode(), TEXT)
        threading.Thread(target=_relay_out, args=(sock, ws, api, session, exit_control), daemon=True).start()
        try:
            while (message := ws.recv()) is not None:
                with contextlib.suppress(OSError):
                    sock.sendall(message[1])
        finally:
            with contextlib.suppress(OSError):
                sock.close()
                raw.close()
            api.close()

    def resize(self, container: str, sid: str, cols: int, rows: int) -> dict[str, Any] | None:
        """The session's info after the resize; ``None``: no such session."""
        with self._lock:
            session = self._live.get((container, sid))
        if session is None or "exec" not in session:
            return None
        session["api"].exec_resize(session["exec"], height=rows, width=cols)
        session.update(cols=cols, rows=rows)
        return info(session)

    def kill(self, container: str, sid: str) -> bool:
        with self._lock:
            found = (container, sid) in self._live
        if found:
            with contextlib.closing(_api()) as api:
                argv = ["sh", "-c", _KILL_TREE.replace("{pids}", _PIDS), "sh", sid]
                api.exec_start(api.exec_create(container, argv)["Id"])
        return found


def info(session: dict[str, Any]) -> dict[str, Any]:
    """The session as the toolbox's ``PtySessionInfo``."""
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(session["created"]))
    return {
        "id": session["id"],
        "active": True,
        "cols": session["cols"],
        "rows": session["rows"],
        "cwd": session["cwd"],
        "envs": session["envs"],
        "createdAt": created,
        "lazyStart": False,
    }


def _relay_out(sock: socket.socket, ws: WebSocket, api: Any, session: dict[str, Any], control: bool) -> None:
    """The terminal's output to the client; at its end the exit code, as the daemon reports it."""
    with contextlib.suppress(OSError):
        while data := sock.recv(1 << 16):
            ws.send(data)
    code = _exit_code(api, session["exec"])
    if control:
        ws.send(json.dumps({"type": "control", "status": "exited", "exitCode": code}).encode(), TEXT)
    reason = json.dumps({"exitCode": code, "exitReason": _reason(code)}) if code else ""
    ws.close(1000 if code == 0 else 1011, reason)
    threading.Timer(5.0, ws.abort).start()  # a client that never answers the close is cut off


def _reason(code: int) -> str:
    """The daemon's words for a non-zero exit in the close frame."""
    named = {130: "Ctrl+C", 137: "SIGKILL", 143: "SIGTERM"}
    return named.get(code) or (f"signal {code - 128}" if code > 128 else "non-zero exit")


def _exit_code(api: Any, exec_id: str) -> int:
    for _ in range(200):  # the tty's end can come a moment before the engine records the exit
        state = api.exec_inspect(exec_id)
        if not state.get("Running") and state.get("ExitCode") is not None:
            return int(state["ExitCode"])
        time.sleep(0.05)
    return -1
