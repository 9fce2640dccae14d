"""The fake's sandboxes: local docker containers, and the processes running in them."""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Mapping

from fakes import docker
from fakes.docker import IMAGE

LABEL = "praisonai.test.e2b-fake"  # every container the fake starts carries it (clean-up by label)


def start_container(sandbox_id: str, owner: str, image: str = IMAGE) -> str:
    """A container that idles; the sandbox's env is envd's (given to each process), not its own."""
    options = ["--rm", "--label", f"{LABEL}={owner}", "--name", f"e2bfake-{sandbox_id}"]
    return docker.run_detached(
        options, [image, "sh", "-c", "mkdir -p /workspace /home/user && exec sleep infinity"], {}
    )


def commit_container(container: str, tag: str, owner: str) -> None:
    docker.commit(container, tag, f"{LABEL}={owner}")


def freeze(container: str, *, frozen: bool) -> None:
    """``docker pause``/``unpause``: the container's processes and files kept, as E2B's pause keeps
    a sandbox's memory and filesystem."""
    done = docker.docker("pause" if frozen else "unpause", container)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip())


def container_exec(
    container: str, argv: list[str], data: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return docker.docker("exec", "-i", container, *argv, data=data or b"", timeout=None)


#: Bytes of output kept for readers that have not taken them yet before the pump waits.
_BACKLOG_BYTES = 4 * 1024 * 1024


class Output:
    """A process's output as events (``(stream name, chunk)``) that several readers follow, each
    at its own pace, and its exit code once it ended; :class:`Proc` and the fake's pty process
    (``_pty.PtyProc``) fill it."""

    pty = False  # a pseudo-terminal's process: input and resize go to its terminal

    def __init__(self) -> None:
        self.events: list[tuple[str, bytes]] = []  # (stream, chunk), in arrival order
        self.first = 0  # the number of events before events[0]: dropped, every reader had them
        self.readers: dict[object, int] = {}  # a reader → how many events it has had
        self.kept_bytes = 0  # of the events kept: while readers lag this much, the pump waits
        self.cond = threading.Condition()
        self.exit_code: int | None = None

    def append(self, name: str, chunk: bytes) -> None:
        """Keep an output chunk, waiting first while readers lag (back-pressure, as a stream has:
        output its readers have not taken yet waits in the pipe, not here; without readers it is
        kept, for one that connects later)."""
        with self.cond:
            while self.readers and self.kept_bytes > _BACKLOG_BYTES:
                self.cond.wait(1)
            self.events.append((name, chunk))
            self.kept_bytes += len(chunk)
            self.cond.notify_all()

    def ended(self, code: int) -> None:
        with self.cond:
            self.exit_code = code
            self.cond.notify_all()

    def caught_up(self, reader: object) -> bool:
        """(``cond`` held) Whether ``reader`` has had every event so far."""
        return self.readers.get(reader, self.first) == self.first + len(self.events)

    def read(self, reader: object) -> tuple[list[tuple[str, bytes]], int | None]:
        """(``cond`` held) The events ``reader`` has not had yet (a new reader: all still kept),
        and the exit code once it has had them all. What every reader has had is dropped, as envd
        streams output rather than keeping it: 100 MB of output would otherwise stay in the
        process that serves the fake, where the client's memory is measured."""
        pending = self.events[self.readers.get(reader, self.first) - self.first :]
        self.readers[reader] = self.first + len(self.events)
        oldest = min(self.readers.values())
        self.kept_bytes -= sum(len(chunk) for _, chunk in self.events[: oldest - self.first])
        del self.events[: oldest - self.first]
        self.first = oldest
        self.cond.notify_all()  # the pump may go on
        return pending, self.exit_code


class Proc(Output):
    """One command in a container, run as envd runs it (``/bin/bash -l -c``) in its own
    process group, whose pid is the in-container pid (what ``commands.kill(pid)`` names)."""

    def __init__(
        self, container: str, cmd: str, args: list[str], envs: Mapping[str, str], cwd: str | None, stdin: bool
    ) -> None:
        super().__init__()
        argv = ["exec", "-i"]
        if cwd:
            argv += ["-w", cwd]
        for key, value in envs.items():
            argv += ["-e", f"{key}={value}"]
        # "echo $$" first: the group leader's pid, then exec keeps it for the command itself.
        argv += [container, "/bin/sh", "-c", 'echo $$; exec "$0" "$@"', cmd, *args]
        self.container = container
        self.cmd, self.args, self.envs, self.cwd = cmd, args, dict(envs), cwd or ""
        self.popen = docker.popen(*argv)
        assert (
            self.popen.stdout is not None and self.popen.stderr is not None and self.popen.stdin is not None
        )
        self.pid = int(self.popen.stdout.readline().strip() or 0)
        self.stdin_open = stdin
        self._stdin_lock = threading.Lock()  # envd writes one input at a time, in arrival order
        if not stdin:
            self.popen.stdin.close()
        self._readers = [
            threading.Thread(target=self._pump, args=(name, pipe), daemon=True)
            for name, pipe in (("stdout", self.popen.stdout), ("stderr", self.popen.stderr))
        ]
        for reader in self._readers:
            reader.start()
        threading.Thread(target=self._reap, daemon=True).start()

    def _pump(self, name: str, pipe: object) -> None:
        read = pipe.read1  # type: ignore[attr-defined]
        while chunk := read(65536):
            self.append(name, chunk)

    def _reap(self) -> None:
        code = self.popen.wait()
        for reader in self._readers:
            reader.join()
        for pipe in (self.popen.stdout, self.popen.stderr):
            assert pipe is not None
            pipe.close()
        with self._stdin_lock, contextlib.suppress(OSError):  # a stdin nobody closed
            self.stdin_open = False
            assert self.popen.stdin is not None
            self.popen.stdin.close()
        self.ended(code)

    def send(self, data: bytes) -> bool:
        """Write to the command's stdin; False when it has none (started without, or closed)."""
        assert self.popen.stdin is not None
        with self._stdin_lock:
            if not self.stdin_open:
                return False
            with contextlib.suppress(BrokenPipeError, ValueError, OSError):
                self.popen.stdin.write(data)
                self.popen.stdin.flush()
            return True

    def close_stdin(self) -> None:
        assert self.popen.stdin is not None
        with self._stdin_lock, contextlib.suppress(BrokenPipeError, OSError):
            self.stdin_open = False
            self.popen.stdin.close()

    def kill(self) -> None:
        """SIGKILL the command's whole process group inside the container."""
        container_exec(self.container, ["kill", "-KILL", "--", f"-{self.pid}"])
