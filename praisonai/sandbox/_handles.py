"""The blocking handles ``Sandbox`` returns — a background process, a shell session, a terminal —
each the typed twin of its async handle, every call run on praisonai's portal loop."""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Literal, TypeVar

from praisonai import _limits, _portal

if TYPE_CHECKING:  # annotations only: keeps ``from praisonai import Sandbox`` light
    from praisonai._types import ProcessInfo, SessionResult
    from praisonai.compute.abilities.pty import Pty
    from praisonai.runtime.session import ShellSession
    from praisonai.sandbox._process import AsyncProcess

H = TypeVar("H", bound="_Closing")


class Process:
    """A background process in an instance (``Sandbox.start``); find it again from anywhere with
    its ``id`` (``Sandbox.process``). The blocking twin of ``AsyncProcess``."""

    def __init__(self, inner: AsyncProcess) -> None:
        self._inner = inner

    @property
    def id(self) -> str:
        return self._inner.id

    @property
    def instance_id(self) -> str:
        return self._inner.instance_id

    @property
    def info(self) -> ProcessInfo:
        """Its state when last asked (``status``, ``wait``)."""
        return self._inner.info

    def status(self) -> ProcessInfo:
        """Fresh state: running, exited (with ``exit_code``) or lost."""
        return _portal.call(self._inner.status)

    def logs(
        self, stream: Literal["stdout", "stderr"] = "stdout", *, offset: int = 0, limit: int | None = None
    ) -> bytes:
        """Its output from byte ``offset`` — poll with a growing offset to follow it."""
        return _portal.call(lambda: self._inner.logs(stream, offset=offset, limit=limit))

    def wait(self, timeout: float | None = None) -> ProcessInfo:
        """Wait for it to end (at most ``timeout`` seconds) and return its state."""
        return _portal.call(self._inner.wait, timeout)

    def kill(self) -> None:
        """Kill it and everything it started."""
        _portal.call(self._inner.kill)

    def __repr__(self) -> str:
        return repr(self._inner)


class _Closing:
    """A handle that closes when its ``with`` block ends, also on an exception."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: H) -> H:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Session(_Closing):
    """A persistent shell in one instance (``Sandbox.session``): the working directory, variables
    and functions carry from one ``run`` to the next; a context manager (closing on exit). The
    blocking twin of ``ShellSession``."""

    def __init__(self, inner: ShellSession) -> None:
        self._inner = inner

    @property
    def running(self) -> bool:
        """Whether a command started by ``run`` is still running (it returned on ``idle_timeout``)."""
        return self._inner.running

    def run(
        self,
        command: str,
        *,
        timeout: float | None = _limits.DEFAULT_EXEC_TIMEOUT_S,
        idle_timeout: float | None = None,
        max_output: int = _limits.DEFAULT_MAX_OUTPUT_BYTES,
    ) -> SessionResult:
        """Run ``command`` in the shell; see ``ShellSession.run``."""
        return _portal.call(
            lambda: self._inner.run(
                command, timeout=timeout, idle_timeout=idle_timeout, max_output=max_output
            )
        )

    def read(
        self, *, timeout: float | None = _limits.DEFAULT_EXEC_TIMEOUT_S, idle_timeout: float | None = None
    ) -> SessionResult:
        """More output of the running command, until it ends or is quiet for ``idle_timeout``."""
        return _portal.call(lambda: self._inner.read(timeout=timeout, idle_timeout=idle_timeout))

    def send(self, text: str | bytes) -> None:
        """Write ``text`` to the running command's stdin."""
        _portal.call(self._inner.send, text)

    def interrupt(self, *, timeout: float = 5.0) -> SessionResult:
        """SIGINT to the running command, like Ctrl-C; its result (exit code 130 when it dies)."""
        return _portal.call(lambda: self._inner.interrupt(timeout=timeout))

    def close(self) -> None:
        """End the shell and everything it started."""
        _portal.call(self._inner.close)

    def __repr__(self) -> str:
        return repr(self._inner)


class Terminal(_Closing):
    """An interactive terminal in an instance (``Sandbox.pty``): write, read, resize, wait; a
    context manager (closing on exit) and an iterator over output chunks. ``close`` kills the
    whole process tree it started. The blocking twin of ``Pty``."""

    def __init__(self, inner: Pty) -> None:
        self._inner = inner

    def write(self, data: bytes) -> None:
        """Send keystrokes (raw bytes: ``b"\\x03"`` is Ctrl-C)."""
        _portal.call(self._inner.write, data)

    def read(self) -> bytes:
        """The next chunk of output; ``b""`` once the terminal closed."""
        return _portal.call(self._inner.read)

    def resize(self, cols: int, rows: int) -> None:
        _portal.call(self._inner.resize, cols, rows)

    def wait(self) -> int:
        """Wait for the terminal's program to end; its exit code."""
        return _portal.call(self._inner.wait)

    def close(self) -> None:
        """Close the terminal, killing everything it started. Idempotent."""
        _portal.call(self._inner.close)

    def __iter__(self) -> Iterator[bytes]:
        while chunk := self.read():
            yield chunk

    def __repr__(self) -> str:
        return repr(self._inner)
