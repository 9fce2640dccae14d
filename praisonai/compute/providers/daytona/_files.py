"""Daytona's file API: its daemon's own calls where they keep the contract of
``praisonai.compute.files``, the generic in-instance script where they cannot.

What the daemon does (``apps/daemon/pkg/toolbox/fs`` in daytonaio/daytona, SDK 0.226): every
call looks its path up with Go's ``os.Stat``, which FOLLOWS a link, and its ``FileInfo`` has no
link type or target. Hence, per operation:

- ``exists``: ``GET /files/info``. An answer means something is there. Its "not found" also
  covers a dangling link (``os.Stat`` fails on it), so a not-found, or a refusal, is asked
  again of the script, whose answer the generic path gives.
- ``remove``: ``DELETE /files?recursive=true``, Go's ``os.RemoveAll``: it unlinks a link itself
  and takes a tree apart by fd, never entering a link. Its ``os.Stat`` pre-check calls a dangling
  link missing and a refused one forbidden, so those are left to the script (which removes the
  dangling link, or raises what the generic path raises).
- ``list`` and ``stat`` stay generic: ``os.Stat`` reports a link as what it points at (a link to
  ``/etc`` as a directory), a listing drops a dangling link and enters a link it is given, so a
  link could never be reported as a link.
- ``rename`` stays generic: ``POST /files/move`` refuses an existing target (409) where ours
  replaces a file or link, and across devices it falls back to a copy that reads through links.
- ``mkdir`` stays generic: ``POST /files/folder`` is ``os.MkdirAll``: it always makes parents,
  takes a link to a directory for the directory, and answers a file in the way with a bare 400.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from praisonai._errors import ExecError
from praisonai._types import ExecResult
from praisonai.compute.files import ShellFiles
from praisonai.compute.providers.daytona._client import translated
from praisonai.runtime.partial import partial_beside

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager


class _Unsure(Exception):
    """The daemon could not tell (a not-found that may be a dangling link, a refusal): the script
    is asked instead."""


class DaytonaFiles(ShellFiles):
    """The files part: what Daytona's daemon does natively (``exists``, ``remove``, whole-file
    puts), the generic script for the rest (see the module docstring). ``sandbox`` opens an
    instance's SDK sandbox for an operation; ``path`` names an instance path as the daemon does
    (absolute, from the working dir)."""

    def __init__(
        self,
        execute: Callable[..., Awaitable[ExecResult]],
        *,
        sandbox: Callable[[str, str], AbstractAsyncContextManager[Any]],
        path: Callable[[Any, str], str],
    ) -> None:
        super().__init__(execute)
        self._sandbox, self._path = sandbox, path

    async def put_whole(self, instance_id: str, path: str, source: bytes | str, op: str) -> None:
        """``source`` (bytes, or a local file's path, streamed) uploaded to a new file beside
        ``path``, then put in its place by one command (the daemon's move refuses an existing
        target): a reader sees the old file or the new one, never an upload cut half-way (daemons
        before the temp-file upload write in place as the bytes come) nor a mix of two writers; a
        replaced file keeps its mode (the newest daemons reset it to 0644) and a link at ``path``
        is replaced (they write through it)."""
        async with self._sandbox(instance_id, op) as sandbox:
            target = self._path(sandbox, path)
            partial = partial_beside(target)
            try:
                with translated(op, instance_id=instance_id):
                    await sandbox.fs.upload_file(source, partial)
                await self.place(instance_id, partial, target)
            except BaseException:
                with contextlib.suppress(Exception):
                    await sandbox.fs.delete_file(partial)
                raise

    async def exists(self, instance_id: str, path: str) -> bool:
        try:
            async with self._daemon(instance_id, "exists", path) as (fs, where):
                await fs.get_file_info(where)
            return True
        except _Unsure:
            pass  # asked outside the handler, so an error of the script's is not chained to this one
        return await super().exists(instance_id, path)

    async def remove(self, instance_id: str, path: str) -> None:
        try:
            async with self._daemon(instance_id, "remove", path) as (fs, where):
                await fs.delete_file(where, recursive=True)  # RemoveAll: a link goes, its target stays
            return
        except _Unsure:
            pass
        await super().remove(instance_id, path)

    @contextlib.asynccontextmanager
    async def _daemon(self, instance_id: str, op: str, path: str) -> AsyncIterator[tuple[Any, str]]:
        """The sandbox's ``fs`` and ``path`` as the daemon names it; the daemon's errors as the
        generic path's, or ``_Unsure``."""
        async with self._sandbox(instance_id, "files") as sandbox:
            with _daemon_errors(op, instance_id, path):
                yield sandbox.fs, self._path(sandbox, path)


@contextlib.contextmanager
def _daemon_errors(op: str, instance_id: str, path: str) -> Iterator[None]:
    from daytona import DaytonaBadRequestError, DaytonaForbiddenError, DaytonaNotFoundError

    try:
        yield
    except (DaytonaNotFoundError, DaytonaForbiddenError) as exc:
        # os.Stat's not-found or permission refusal (also a sandbox gone or a key refused: the
        # script's own call then raises that as the generic path does)
        raise _Unsure from exc
    except DaytonaBadRequestError as exc:  # the daemon's 400: os.Stat or the removal failed
        if op == "exists":  # ENOTDIR, ELOOP...: what `[ -e ]` calls "not there", said by the script
            raise _Unsure from exc
        raise ExecError(f"{op} {path} failed in the instance: {str(exc)[:200]}", op=op) from exc
    except Exception as exc:
        with translated(op, instance_id=instance_id, path=path):
            raise exc
