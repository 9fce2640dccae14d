"""Values praisonai passes and returns: frozen dataclasses and enums, no behaviour beyond reading."""

from __future__ import annotations

import enum
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from praisonai._limits import DEFAULT_EXEC_TIMEOUT_S, DEFAULT_MAX_OUTPUT_BYTES


class Unset(enum.Enum):
    """Sentinel type: "argument omitted, use the default" — distinct from ``None``."""

    UNSET = enum.auto()

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = Unset.UNSET


class InstanceStatus(str, enum.Enum):
    """Where an instance is in its life (the values of PraisonAI's ``InstanceStatus``)."""

    PROVISIONING = "provisioning"
    RUNNING = "running"
    IDLE = "idle"
    STOPPING = "stopping"
    STOPPED = "stopped"
    ERROR = "error"
    PAUSED = "paused"  # stopped with its filesystem kept; ``resume`` brings it back under its id


class Capability(str, enum.Enum):
    """Optional abilities a provider declares; a config asking for an undeclared one is rejected."""

    IMAGE = "image"  # runs a chosen image
    CPU_LIMIT = "cpu_limit"
    MEMORY_LIMIT = "memory_limit"
    GPU = "gpu"
    NETWORK_NONE = "network_none"  # can cut the instance off the network
    MOUNTS = "mounts"  # bind host paths into the instance
    PACKAGES = "packages"  # installs pip/apt/npm packages inside the instance
    ISOLATION = "isolation"  # the instance cannot see or change the host
    NETWORK_ALLOWLIST = "network_allowlist"  # only the listed hosts are reachable
    DISK_LIMIT = "disk_limit"
    CAPTURE = "capture"  # snapshots an instance after setup; later provisions start from it
    SELF_STOP = "self_stop"  # stops itself when idle or past its ttl, even when its client is gone
    PROCESSES = "processes"  # background processes (and bind_env where the channel mixin brings them)
    SESSIONS = "sessions"  # persistent shell sessions (the channel mixin brings them)
    RUNC = "runc"  # runs the instance as a plain OCI container on the host's kernel (runtime='runc')
    GVISOR = "gvisor"  # runs the instance under gVisor's user-space kernel, checked (runtime='runsc')
    PAUSE = "pause"  # pauses an instance keeping its filesystem and resumes it under the same id
    PORTS = "ports"  # exposes a port of the instance as a URL on this host's loopback (expose)
    PTY = "pty"  # opens an interactive terminal (a pseudo-terminal) in a running instance
    SNAPSHOT = "snapshot"  # saves a running instance's files; new instances start from them (fork)


_RESULT_KEYS: Final = ("stdout", "stderr", "exit_code")
_EXTRA_KEYS: Final = ("timed_out", "truncated", "duration_s")
#: ``timeout(1)``'s exit status for a command stopped at its deadline.
TIMEOUT_EXIT_CODE: Final = 124


class ExecResult(dict[str, Any]):
    """The outcome of one command: ``stdout``, ``stderr``, ``exit_code``, ``timed_out``,
    ``truncated``, ``duration_s`` and ``ok``, as attributes.

    ``exit_code`` is the command's status; a command killed by signal N reports 128+N, and one
    killed at its timeout reports 124 with ``timed_out=True`` (the convention of ``timeout(1)``).
    ``truncated`` says that the head and tail of an over-long stream were kept and the middle
    replaced by a marker line.

    It is also a read-only ``dict`` of ``stdout``, ``stderr`` and ``exit_code``: PraisonAI's SDK
    and its users read dicts (``r["exit_code"]``), and its SharedCompute checks
    ``isinstance(result, dict)``. Immutable: :meth:`replace` makes a changed copy.
    """

    __slots__ = ("duration_s", "timed_out", "truncated")
    timed_out: bool
    truncated: bool
    duration_s: float

    def __init__(
        self,
        stdout: str,
        stderr: str,
        exit_code: int,
        timed_out: bool = False,
        truncated: bool = False,
        duration_s: float = 0.0,
    ) -> None:
        super().__init__(stdout=stdout, stderr=stderr, exit_code=exit_code)
        object.__setattr__(self, "timed_out", timed_out)
        object.__setattr__(self, "truncated", truncated)
        object.__setattr__(self, "duration_s", duration_s)

    @property
    def stdout(self) -> str:
        return str(dict.__getitem__(self, "stdout"))

    @property
    def stderr(self) -> str:
        return str(dict.__getitem__(self, "stderr"))

    @property
    def exit_code(self) -> int:
        return int(dict.__getitem__(self, "exit_code"))

    @property
    def ok(self) -> bool:
        """True when the command exited 0 within its timeout."""
        return self.exit_code == 0 and not self.timed_out

    def replace(self, **changes: Any) -> ExecResult:
        """A copy with ``changes`` (any of the constructor's fields)."""
        return ExecResult(**{**self._fields(), **changes})

    def _fields(self) -> dict[str, Any]:
        extra = {"timed_out": self.timed_out, "truncated": self.truncated, "duration_s": self.duration_s}
        return {**dict(self), **extra}

    def __getitem__(self, key: str) -> Any:
        if key in _EXTRA_KEYS:
            return getattr(self, key)
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        """Dict-style read; unknown keys give ``default``."""
        try:
            return self[key]
        except KeyError:
            return default

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ExecResult):
            return self._fields() == other._fields()
        return dict.__eq__(self, other)

    __hash__ = None

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"ExecResult({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ExecResult is immutable (use .replace({name}=...))")

    def __reduce__(self) -> tuple[Any, ...]:
        return (ExecResult, tuple(self._fields().values()))

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("ExecResult is read-only (use .replace(...))")

    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only


#: Receives a command's output as it is produced: ("stdout" | "stderr", bytes).
OutputSink = Callable[[Literal["stdout", "stderr"], bytes], None]
_NO_ENV: Final[Mapping[str, str]] = MappingProxyType({})


#: A command's standard input: all of it, or its chunks as they come (``sandbox run -i`` streams a
#: pipe; the command reads each chunk as soon as it is sent and sees the end when the iterable
#: ends). It is consumed once: a command is never sent twice. Providers whose vendor takes stdin
#: whole (Daytona, Fly.io, a PraisonAI-protocol object) gather the chunks first (:func:`stdin_bytes`).
Stdin = bytes | AsyncIterable[bytes]


async def stdin_chunks(stdin: Stdin) -> AsyncIterator[bytes]:
    """``stdin``'s non-empty chunks in order, as they come (bytes are one chunk)."""
    if isinstance(stdin, bytes):
        if stdin:
            yield stdin
        return
    async for chunk in stdin:
        if chunk:
            yield bytes(chunk)


async def stdin_bytes(stdin: Stdin | None) -> bytes | None:
    """All of ``stdin``, for a vendor that takes a command's input whole: a stream is gathered
    to its end first."""
    if stdin is None:
        return None
    return b"".join([chunk async for chunk in stdin_chunks(stdin)])


@dataclass(frozen=True, slots=True)
class ExecRequest:
    """One command, every default resolved: made once (``ComputeProvider.execute`` validates it,
    or ``run_once``) and handed whole to the provider's ``_exec``, the channel and its job, or a
    process runner. A layer that must adapt a field (resolve ``cwd`` to a path in the instance,
    add the instance's base env) makes a copy with ``dataclasses.replace``, never a new parameter list.

    ``cwd`` ``None`` is the instance's working directory; ``timeout`` ``None`` is no limit;
    ``max_output`` bounds each stream (head and tail kept); ``stdin`` ``None`` closes stdin
    (``/dev/null``), bytes are all of it, an async iterable streams it (:data:`Stdin`);
    ``on_output`` receives output while the command runs.
    """

    command: str  # a shell line, for ``sh -c``
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: _NO_ENV)
    timeout: float | None = DEFAULT_EXEC_TIMEOUT_S
    max_output: int = DEFAULT_MAX_OUTPUT_BYTES
    on_output: OutputSink | None = None
    stdin: Stdin | None = None
    privileged: bool = False  # as the instance's own user (root on docker), not the commands' uid


@dataclass(frozen=True, slots=True)
class InstanceInfo:
    """One instance as a provider sees it. ``endpoint`` looks like ``docker://<container>``."""

    instance_id: str
    provider: str
    status: InstanceStatus = InstanceStatus.RUNNING
    endpoint: str = ""
    region: str = ""
    created_at: float = 0.0
    labels: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CaptureInfo:
    """A saved post-setup state of one definition; the next provision of it starts from here."""

    name: str  # a one-way tag of the capture key, safe to show
    provider: str
    image: str  # where the provider keeps it, e.g. "praisonai-capture:<name>" on docker
    definition: str  # the definition hash
    created_at: float
    last_used: float  # as recorded in this PRAISONAI_HOME; created_at when never used here
    size_bytes: int = 0


@dataclass(frozen=True, slots=True)
class OutputChunk:
    """A piece of a running command's output, as ``stream()`` yields it.

    ``skipped``: bytes of this stream dropped just before this chunk because the consumer fell
    behind by more than the stream's backlog (see ``praisonai.sandbox._stream``); 0 normally.
    """

    stream: Literal["stdout", "stderr"]
    data: bytes
    skipped: int = 0

    @property
    def text(self) -> str:
        """The bytes as UTF-8 (a multi-byte character cut between chunks shows as U+FFFD)."""
        return self.data.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """A background process in an instance. ``state`` is "running", "exited" or "lost" (it died
    with its instance, or was killed before it could record an exit code)."""

    process_id: str
    command: str
    cwd: str
    started_at: float
    state: Literal["running", "exited", "lost"]
    exit_code: int | None = None

    @property
    def running(self) -> bool:
        return self.state == "running"


@dataclass(frozen=True, slots=True)
class SessionResult:
    """What a session command printed since the last result, and whether it still runs.

    ``running=True`` (after an idle timeout) means ``exit_code`` is ``None`` and the command waits
    for ``send()``, ``read()`` or ``interrupt()``.
    """

    stdout: str
    stderr: str
    exit_code: int | None
    running: bool = False
    timed_out: bool = False
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True)
class FileEntry:
    """One file, directory or link in an instance, as ``lstat`` sees it (a link is reported as a
    link, never followed): ``type`` is ``'file'``, ``'dir'``, ``'symlink'`` or ``'other'``;
    ``mode`` the permission bits; ``mtime`` seconds since the epoch; ``symlink_target`` what a
    link points at (``None`` for anything else)."""

    name: str
    path: str
    type: str
    size: int
    mode: int
    mtime: float
    symlink_target: str | None = None
