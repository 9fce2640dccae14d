"""The workbench half of :class:`~praisonai.sandbox.AsyncSandbox`: the file API, a terminal, a
workspace in and its changes out, ports, pause and resume. Each method checks that the handle is
open and delegates to the provider (or ``praisonai.compute.workspace``)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from praisonai._limits import PTY_DEFAULT_COLS, PTY_DEFAULT_ROWS
from praisonai._types import InstanceInfo

# Import light, as _async: the machinery is imported when a method is first called.
if TYPE_CHECKING:
    from praisonai.compute.abilities.pty import Pty
    from praisonai.compute.abilities.snapshots import SnapshotInfo
    from praisonai.compute.base import ComputeProvider
    from praisonai.compute.workspace import Change, Packed
    from praisonai.sandbox._async import AsyncSandbox
    from praisonai.sandbox._files import AsyncFiles


class AsyncWorkbench:
    """What a coding agent's sandbox offers beyond exec and whole files."""

    provider: ComputeProvider
    info: InstanceInfo

    if TYPE_CHECKING:  # AsyncSandbox's

        @property
        def id(self) -> str: ...
        def _ensure_open(self) -> None: ...

    @property
    def files(self) -> AsyncFiles:
        """The file API shaped as E2B's: ``list``, ``exists``, ``stat``, ``remove``, ``rename``,
        ``mkdir``, ``read``, ``write`` (see :class:`praisonai.sandbox._files.AsyncFiles`)."""
        from praisonai.sandbox._files import AsyncFiles

        return AsyncFiles(cast("AsyncSandbox", self))

    async def pty(
        self,
        command: str | Sequence[str] | None = None,
        *,
        cols: int = PTY_DEFAULT_COLS,
        rows: int = PTY_DEFAULT_ROWS,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Pty:
        """An interactive terminal running ``command`` (``None``: a shell); see ``Pty``."""
        self._ensure_open()
        return await self.provider.open_pty(self.id, command=command, cols=cols, rows=rows, cwd=cwd, env=env)

    async def upload_workspace(
        self, local_path: str | os.PathLike[str], remote_dir: str | None = None
    ) -> Packed:
        """Upload a local tree into ``remote_dir`` (default: the working dir), ``.gitignore``
        honoured, links as links, streamed; record the baseline :meth:`diff` compares with."""
        from praisonai.compute import workspace

        self._ensure_open()
        return await workspace.upload_tree(workspace.Place(self.provider, self.id), local_path, remote_dir)

    async def clone_repo(
        self, repo: str, *, token_env: str | None = None, remote_dir: str | None = None
    ) -> None:
        """``git clone`` ``URL[@REF]`` inside the instance; the token is read from the variable
        ``token_env`` and never reaches a command line, the output or a record."""
        from praisonai.compute import workspace

        self._ensure_open()
        await workspace.clone(
            workspace.Place(self.provider, self.id),
            workspace.parse_repo(repo, token_env=token_env),
            remote_dir,
        )

    async def diff(self, remote_dir: str | None = None) -> str:
        """The workspace's changes since it was uploaded or cloned, as a ``git diff`` patch."""
        from praisonai.compute import workspace

        self._ensure_open()
        return await workspace.diff(workspace.Place(self.provider, self.id), remote_dir)

    async def download_changes(
        self, local_path: str | os.PathLike[str], remote_dir: str | None = None
    ) -> tuple[Change, ...]:
        """Copy the files changed since the upload or clone to ``local_path``; the changes."""
        from praisonai.compute import workspace

        self._ensure_open()
        return await workspace.download_changes(
            workspace.Place(self.provider, self.id), local_path, remote_dir
        )

    async def expose(self, port: int) -> str:
        """A URL that reaches ``port`` inside the instance from this host (e.g.
        ``http://127.0.0.1:49153``; a vendor's own link where it has one). A forward lives until
        this handle is closed or the instance shut down; the same port gives the same URL.

        Raises:
            UnsupportedFeatureError: the provider cannot expose ports (``Capability.PORTS``).
        """
        self._ensure_open()
        return await self.provider.expose(self.id, port)

    async def pause(self) -> InstanceInfo:
        """Stop the instance keeping its files (its processes end); :meth:`resume`, or the next
        call on it, brings it back under the same id. Idempotent.

        Raises:
            UnsupportedFeatureError: the provider cannot pause (``Capability.PAUSE``), or this
                instance was not made to (docker: ``idle_action='pause'``).
        """
        self._ensure_open()
        self.info = await self.provider.pause(self.id)
        return self.info

    async def resume(self) -> InstanceInfo:
        """Bring the paused instance back under the same id, its files as they were. Idempotent."""
        self._ensure_open()
        self.info = await self.provider.resume(self.id)
        return self.info

    async def snapshot(self, name: str | None = None) -> SnapshotInfo:
        """Save the instance's files (its workspace and everything its commands changed) while it
        keeps running; :meth:`fork`, :meth:`restore` and ``create(from_snapshot=...)`` start from
        it. No env value is in it. ``name`` (letters, digits, ``.``, ``_``, ``-``) must be free in
        the home; ``praisonai.compute.list_snapshots`` and ``remove_snapshot`` see it from any
        process.

        Raises:
            UnsupportedFeatureError: the provider cannot snapshot (``Capability.SNAPSHOT``).
            ConfigError: the name is not one, or is taken.
        """
        from praisonai.compute import snapshots

        self._ensure_open()
        return await snapshots.front(self.provider).take(self.id, snapshots.check_name(name))

    async def restore(self, snapshot: SnapshotInfo | str) -> InstanceInfo:
        """Roll this instance back to ``snapshot`` (a ``SnapshotInfo``, an id or a name) under the
        same id: its files become the snapshot's and its processes end. Local does; docker cannot
        (it says so in one sentence: ``fork(1)`` starts a new instance from it instead).

        Raises:
            UnsupportedFeatureError: the provider cannot roll an instance back.
            ConfigError: no such snapshot, or another provider's.
        """
        from praisonai.compute import snapshots

        self._ensure_open()
        found = snapshots.find(snapshot, self.provider.name, op="restore")
        self.info = await snapshots.front(self.provider).restore(self.id, found)
        return self.info
