"""The fake's pty processes: a Start request with a ``pty`` runs its command on a real
pseudo-terminal in the container, as envd does: a ``docker exec`` with a tty (runc allocates it
and makes the command its session leader), its output one stream (``DataEvent.pty``), input
written to the terminal, and ``Update`` resizing it (the exec resize API: the program gets
SIGWINCH)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping
from typing import Any

import docker as docker_py  # the docker SDK: an exec with a tty, and its resize

from fakes.e2b._sandboxes import Output, container_exec

_CHUNK = 65536
_POLL_S = 0.05  # how often the reaper asks the engine whether the exec ended

#: Prints the pid (the exec's session leader, what ``kill(pid)`` names), sets the size the Start
#: asked for (docker-py's exec takes no initial size, and a resize after start races the
#: program), then becomes the command.
_START = 'echo $$; stty cols "$1" rows "$2" 2>/dev/null; shift 2; exec "$@"'


class PtyProc(Output):
    """``cmd args`` on a ``cols`` x ``rows`` terminal in ``container``, with ``envs`` and ``cwd``."""

    pty = True

    def __init__(
        self,
        container: str,
        cmd: str,
        args: list[str],
        envs: Mapping[str, str],
        cwd: str | None,
        size: tuple[int, int],
    ) -> None:
        super().__init__()
        self.container, self.cmd, self.args, self.envs, self.cwd = container, cmd, args, dict(envs), cwd or ""
        self._client = docker_py.from_env()
        api = self._client.api
        argv = ["/bin/sh", "-c", _START, "sh", str(size[0]), str(size[1]), cmd, *args]
        self._exec_id = api.exec_create(
            container, argv, stdin=True, tty=True, environment=self.envs, workdir=cwd or None
        )["Id"]
        self._stream = api.exec_start(self._exec_id, socket=True, tty=True)
        self._sock: Any = getattr(self._stream, "_sock", self._stream)
        first = b""
        while b"\n" not in first and (chunk := self._sock.recv(_CHUNK)):
            first += chunk
        line, _, rest = first.partition(b"\n")
        self.pid = int(line.strip() or 0)
        if rest:
            self.append("pty", rest)
        self._lock = threading.Lock()  # envd writes one input at a time, in arrival order
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        with contextlib.suppress(OSError):
            while chunk := self._sock.recv(_CHUNK):
                self.append("pty", chunk)
        code = self._exit_code()
        with contextlib.suppress(OSError):
            self._sock.close()
            self._stream.close()
        self._client.close()
        self.ended(137 if code is None else code)

    def _exit_code(self) -> int | None:
        """The exec's exit code once it ended; ``None`` when its container went (killed with it)."""
        try:
            while (state := self._client.api.exec_inspect(self._exec_id)).get("Running"):
                time.sleep(_POLL_S)
        except docker_py.errors.APIError:  # the sandbox was killed under it
            return None
        code = state.get("ExitCode")
        return None if code is None else int(code)

    def send(self, data: bytes) -> bool:
        """Type ``data`` into the terminal; False once the program has ended."""
        with self._lock:
            if self.exit_code is not None:
                return False
            with contextlib.suppress(OSError):
                self._sock.sendall(data)
            return True

    def close_stdin(self) -> None:
        """Nothing: a terminal has no end of input (a program reads EOF when ^D is typed)."""

    def resize(self, cols: int, rows: int) -> None:
        self._client.api.exec_resize(self._exec_id, height=rows, width=cols)

    def kill(self) -> None:
        """SIGKILL the program's whole process group inside the container."""
        container_exec(self.container, ["kill", "-KILL", "--", f"-{self.pid}"])
