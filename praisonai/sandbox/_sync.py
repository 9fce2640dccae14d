"""Sandbox: the same API as AsyncSandbox, blocking, over the one long-lived portal loop."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from praisonai import _portal
from praisonai._limits import PTY_DEFAULT_COLS, PTY_DEFAULT_ROWS
from praisonai._types import UNSET, ExecResult, InstanceInfo, OutputChunk, OutputSink, Unset
from praisonai.sandbox._async import AsyncSandbox
from praisonai.sandbox._classonly import ClassOnly
from praisonai.sandbox._handles import Process, Session, Terminal

if TYPE_CHECKING:  # annotations only: keeps ``from praisonai import Sandbox`` light
    from praisonai.compute.abilities.snapshots import SnapshotInfo
    from praisonai.compute.base import ComputeProvider
    from praisonai.compute.workspace import Change, Packed
    from praisonai.sandbox._files import Files
    from praisonai.sandbox.provisioning import ProvisionPlan


class Sandbox:
    """Blocking twin of :class:`AsyncSandbox`; every method runs on praisonai's portal loop.

    Safe to call from plain threads and from code inside another running event loop (which is
    blocked for the call). An owned sandbox still open at interpreter exit is shut down then.
    """

    def __init__(self, inner: AsyncSandbox) -> None:
        self._inner = inner
        _portal.close_at_exit(inner)

    @classmethod
    def create(
        cls,
        compute: object = None,
        config: object = None,
        *,
        environment: str | os.PathLike[str] | bool | None = None,
        from_snapshot: SnapshotInfo | str | None = None,
        **fields: Any,
    ) -> Sandbox:
        """Provision a new instance; see :meth:`AsyncSandbox.create` (same arguments, same
        environment file precedence; ``from_snapshot``: its files are that snapshot's)."""
        inner = _portal.call(
            lambda: AsyncSandbox.create(
                compute, config, environment=environment, from_snapshot=from_snapshot, **fields
            )
        )
        return cls(inner)

    @classmethod
    def from_plan(cls, plan: ProvisionPlan, *, claim: bool = True) -> Sandbox:
        """Provision what :func:`praisonai.sandbox.provisioning.plan` chose (or claim a warm
        instance of it); see :meth:`AsyncSandbox.from_plan`."""
        return cls(_portal.call(lambda: AsyncSandbox.from_plan(plan, claim=claim)))

    @classmethod
    def connect(cls, instance_id: str, compute: object = None) -> Sandbox:
        """Attach to an existing instance by id (resuming a paused one); see :meth:`AsyncSandbox.connect`."""
        return cls(_portal.call(AsyncSandbox.connect, instance_id, compute))

    @ClassOnly
    @staticmethod
    def run(
        command: str | Sequence[str],
        compute: object = None,
        config: object = None,
        *,
        environment: str | os.PathLike[str] | bool | None = None,
        timeout: float | Unset | None = UNSET,
        max_output: int | None = None,
        on_output: OutputSink | None = None,
        stdin: bytes | str | None = None,
        check: bool = False,
        **fields: Any,
    ) -> ExecResult:
        """Run one command in a fresh instance and remove it; see :meth:`AsyncSandbox.run`."""
        return _portal.call(
            lambda: AsyncSandbox.run(
                command,
                compute,
                config,
                environment=environment,
                timeout=timeout,
                max_output=max_output,
                on_output=on_output,
                stdin=stdin,
                check=check,
                **fields,
            )
        )

    @property
    def id(self) -> str:
        """The instance's id (what ``praisonai compute ps`` shows)."""
        return self._inner.id

    @property
    def info(self) -> InstanceInfo:
        """What the provider said about the instance when it was made or connected."""
        return self._inner.info

    @property
    def provider(self) -> ComputeProvider:
        """The provider that reaches the instance."""
        return self._inner.provider

    @property
    def plan(self) -> ProvisionPlan | None:
        """How the instance was made (``None`` when connected); see :attr:`AsyncSandbox.plan`."""
        return self._inner.plan

    @property
    def closed(self) -> bool:
        """Whether this handle was closed."""
        return self._inner.closed

    def exec(
        self,
        command: str | Sequence[str],
        *,
        timeout: float | Unset | None = UNSET,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = False,
        max_output: int | None = None,
        on_output: OutputSink | None = None,
        stdin: bytes | str | None = None,
        privileged: bool = False,
    ) -> ExecResult:
        """Run a command and wait for its result; see :meth:`AsyncSandbox.exec`."""
        return _portal.call(
            lambda: self._inner.exec(
                command,
                timeout=timeout,
                cwd=cwd,
                env=env,
                check=check,
                max_output=max_output,
                on_output=on_output,
                stdin=stdin,
                privileged=privileged,
            )
        )

    def stream(
        self,
        command: str | Sequence[str],
        *,
        timeout: float | Unset | None = UNSET,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | str | None = None,
    ) -> Iterator[OutputChunk | ExecResult]:
        """Yield output chunks as they come, then the result: :meth:`AsyncSandbox.stream`
        iterated through the portal. Closing the generator (``close()``, or dropping it after a
        ``break``) kills the command."""
        # made here (it binds to the portal loop when first iterated there), so that a closed
        # sandbox raises at the call, as the async face does
        items = self._inner.stream(command, timeout=timeout, cwd=cwd, env=env, stdin=stdin)
        return _portal.iterate(items)

    def start(self, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None) -> Process:
        """Start a background process; returns at once with its handle."""
        return Process(_portal.call(lambda: self._inner.start(command, cwd=cwd, env=env)))

    def processes(self) -> list[Process]:
        """Every background process of the instance."""
        return [Process(p) for p in _portal.call(self._inner.processes)]

    def process(self, process_id: str) -> Process:
        """Reattach to a background process by id (also one another process started)."""
        return Process(_portal.call(self._inner.process, process_id))

    def pty(
        self,
        command: str | Sequence[str] | None = None,
        *,
        cols: int = PTY_DEFAULT_COLS,
        rows: int = PTY_DEFAULT_ROWS,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Terminal:
        """An interactive terminal (write, read, resize, wait, close); see :meth:`AsyncSandbox.pty`."""
        return Terminal(
            _portal.call(lambda: self._inner.pty(command, cols=cols, rows=rows, cwd=cwd, env=env))
        )

    def session(self, *, cwd: str | None = None) -> Session:
        """A persistent shell session (run, send, read, interrupt, close)."""
        return Session(_portal.call(lambda: self._inner.session(cwd=cwd)))

    @property
    def files(self) -> Files:
        """The file API shaped as E2B's (blocking): see :class:`praisonai.sandbox._files.Files`."""
        from praisonai.sandbox._files import Files

        return Files(self._inner.files)

    def read_file(self, path: str) -> bytes:
        """The file's bytes (``FileNotFoundError`` when missing); see :meth:`AsyncSandbox.read_file`."""
        return _portal.call(self._inner.read_file, path)

    def write_file(self, path: str, data: bytes | str) -> None:
        """Write bytes (or UTF-8 text) exactly; see :meth:`AsyncSandbox.write_file`."""
        _portal.call(self._inner.write_file, path, data)

    def upload(self, local_path: str | os.PathLike[str], remote_path: str) -> None:
        """Copy a local file or directory into the instance; see :meth:`AsyncSandbox.upload`."""
        _portal.call(self._inner.upload, local_path, remote_path)

    def download(self, remote_path: str, local_path: str | os.PathLike[str]) -> None:
        """Copy a file or directory out of the instance; see :meth:`AsyncSandbox.download`."""
        _portal.call(self._inner.download, remote_path, local_path)

    def upload_workspace(self, local_path: str | os.PathLike[str], remote_dir: str | None = None) -> Packed:
        """Upload a local tree, ``.gitignore`` rules applied; see :meth:`AsyncSandbox.upload_workspace`."""
        return _portal.call(self._inner.upload_workspace, local_path, remote_dir)

    def clone_repo(self, repo: str, *, token_env: str | None = None, remote_dir: str | None = None) -> None:
        """``git clone`` a repository inside the instance; see :meth:`AsyncSandbox.clone_repo`."""
        _portal.call(lambda: self._inner.clone_repo(repo, token_env=token_env, remote_dir=remote_dir))

    def diff(self, remote_dir: str | None = None) -> str:
        """The workspace's changes as a ``git diff`` patch; see :meth:`AsyncSandbox.diff`."""
        return _portal.call(self._inner.diff, remote_dir)

    def download_changes(
        self, local_path: str | os.PathLike[str], remote_dir: str | None = None
    ) -> tuple[Change, ...]:
        """Copy the changed files out; see :meth:`AsyncSandbox.download_changes`."""
        return _portal.call(self._inner.download_changes, local_path, remote_dir)

    def expose(self, port: int) -> str:
        """A URL reaching ``port`` inside the instance from this host; see :meth:`AsyncSandbox.expose`."""
        return _portal.call(self._inner.expose, port)

    def status(self) -> InstanceInfo:
        """The instance's current state, fresh from the provider."""
        return _portal.call(self._inner.status)

    def pause(self) -> InstanceInfo:
        """Stop the instance keeping its files; see :meth:`AsyncSandbox.pause`."""
        return _portal.call(self._inner.pause)

    def resume(self) -> InstanceInfo:
        """Bring the paused instance back under the same id; see :meth:`AsyncSandbox.resume`."""
        return _portal.call(self._inner.resume)

    def snapshot(self, name: str | None = None) -> SnapshotInfo:
        """Save the instance's files while it keeps running; see :meth:`AsyncSandbox.snapshot`."""
        return _portal.call(self._inner.snapshot, name)

    def restore(self, snapshot: SnapshotInfo | str) -> InstanceInfo:
        """Roll the instance back to ``snapshot`` under the same id where the provider can; see
        :meth:`AsyncSandbox.restore`."""
        return _portal.call(self._inner.restore, snapshot)

    def fork(self, n: int) -> list[Sandbox]:
        """Snapshot the instance and make ``n`` new ones from it, concurrently; see
        :meth:`AsyncSandbox.fork`."""
        return [Sandbox(inner) for inner in _portal.call(self._inner.fork, n)]

    def shutdown(self) -> None:
        """Remove the instance now, whoever created it, and close this handle."""
        _portal.call(self._inner.shutdown)
        _portal.forget_at_exit(self._inner)

    def close(self) -> None:
        """Shut the instance down if this handle owns it, else let go; idempotent."""
        _portal.call(self._inner.close)
        _portal.forget_at_exit(self._inner)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return repr(self._inner).replace("AsyncSandbox", "Sandbox", 1)
