"""The workspace operations on an instance: upload a tree, clone a repository, and show or take
out what changed since (see ``_baseline``)."""

from __future__ import annotations

import os
import posixpath
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread

from praisonai._errors import ConfigError, ExecError, PathOutsideWorkspaceError
from praisonai._types import ExecResult
from praisonai.compute.base import ComputeProvider
from praisonai.compute.foreign import ForeignProvider
from praisonai.compute.workspace import _baseline, _repo
from praisonai.compute.workspace._pack import Packed, pack
from praisonai.compute.workspace._select import selected

_BASELINE_NAME = _baseline.BASELINE_DIR.casefold()


@dataclass(frozen=True)
class Place:
    """An instance of a provider: where the workspace operations act."""

    provider: ComputeProvider
    instance_id: str

    async def exec(
        self, command: str | list[str], *, cwd: str | None = None, env: dict[str, str] | None = None
    ) -> ExecResult:
        return await self.provider.execute(self.instance_id, command, cwd=cwd, env=env)


@dataclass(frozen=True)
class Change:
    """One path that differs from the workspace's baseline: ``status`` is ``added``,
    ``modified``, ``deleted`` or ``type_changed`` (e.g. a file that became a link)."""

    path: str
    status: str


_STATUS = {"A": "added", "M": "modified", "D": "deleted", "T": "type_changed"}
#: What case-insensitive file systems (HFS+ also ignores these code points) take for ``.git``.
_IGNORED_BY_HFS = dict.fromkeys(
    [0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)


def checked_tree(path: str | os.PathLike[str]) -> Path:
    """The local tree to upload, resolved (``ConfigError``: missing, or not a directory)."""
    local = Path(path).expanduser()
    if not local.exists():
        raise ConfigError(f"the workspace {local} does not exist; give an existing directory", op="workspace")
    if not local.is_dir():
        raise ConfigError(
            f"the workspace {local} is not a directory; give the directory to upload", op="workspace"
        )
    return local.resolve()


async def upload_tree(at: Place, local: str | os.PathLike[str], mount: str | None = None) -> Packed:
    """Upload the tree ``local`` into ``mount`` (default: the working dir), ``.gitignore``
    honoured, links sent as links, streamed through a temporary archive on this machine; then
    record the baseline that :func:`diff` compares with."""
    root, where = checked_tree(local), mount or "."
    owner = await _owner(at)
    await _run(at, ["mkdir", "-p", "--", where], "workspace")
    with tempfile.TemporaryDirectory(prefix="praisonai-workspace-") as scratch:
        archive = Path(scratch, "workspace.tar")
        with archive.open("wb") as out:
            packed = await anyio.to_thread.run_sync(lambda: pack(root, selected(root), out, owner))
        if not await at.provider.upload_archive(at.instance_id, archive, where):
            carried = posixpath.join(where, f".praisonai-upload-{uuid.uuid4().hex[:12]}.tar")
            await at.provider.upload_file(at.instance_id, archive, carried)
            name = posixpath.basename(carried)
            await _run(at, f"tar -xf {name}; s=$?; rm -f {name}; exit $s", "workspace", cwd=where)
    await record_baseline(at, mount)
    return packed


async def clone(at: Place, spec: _repo.RepoSpec, mount: str | None = None) -> None:
    """Clone ``spec`` into ``mount`` (default: the working dir, which must be empty), check out
    its ref, and record the baseline. The token is bound to the clone's environment alone."""
    where = mount or "."
    if spec.token_env is not None and isinstance(at.provider, ForeignProvider):
        raise ConfigError(
            f"a repository token cannot be kept off the command line on {at.provider.provider_name} (a "
            "provider object written to PraisonAI's protocol takes the environment in its command "
            "line); clone a URL that needs no token there, or use a provider of ours",
            op="repo",
        )
    env = _repo.clone_env(spec)  # the token variable is checked before anything runs
    result = await at.exec(_repo.clone_argv(spec, where), env=env)
    if result.exit_code != 0:
        raise ExecError(f"git clone of {spec.url} failed: {_said(result.stderr, spec)}", op="repo")
    if spec.ref is not None:
        result = await at.exec(_repo.checkout_argv(spec, where), env=env)
        if result.exit_code != 0:
            raise ConfigError(
                f"the repository {spec.url} has no branch, tag or commit {spec.ref!r}; "
                "give one that exists after @",
                op="repo",
            )
    await record_baseline(at, mount)


async def record_baseline(at: Place, mount: str | None = None) -> None:
    """Record what the workspace holds now as the baseline (once: an existing one is kept)."""
    await _run(at, _baseline.RECORD, "workspace", cwd=mount)


async def diff(at: Place, mount: str | None = None) -> str:
    """The workspace's changes since its baseline, as a ``git diff`` patch (binary included)."""
    return (await _output(at, _baseline.DIFF, mount)).decode(errors="replace")


async def changes(at: Place, mount: str | None = None) -> tuple[Change, ...]:
    """The paths that differ from the baseline, in git's order. The list is the instance's
    word: a path git itself never reports (absolute, with ``..``, or inside a ``.git`` in any
    spelling a file system takes for it, where a hook or config would run on this host) is
    left out."""
    fields = (await _output(at, _baseline.NAMES, mount)).decode(errors="replace").split("\0")
    found = []
    for status, path in zip(fields[0::2], fields[1::2], strict=False):
        parts = path.split("/")
        if status[:1] in _STATUS and path and not path.startswith("/") and not any(map(_reserved, parts)):
            found.append(Change(path, _STATUS[status[:1]]))
    return tuple(found)


def _reserved(part: str) -> bool:
    """``..``, or a name this host or a case-insensitive one takes for ``.git`` (or the baseline)."""
    plain = part.translate(_IGNORED_BY_HFS).casefold().rstrip(". ")
    return part == ".." or plain in (".git", _BASELINE_NAME)


async def download_changes(
    at: Place, local: str | os.PathLike[str], mount: str | None = None
) -> tuple[Change, ...]:
    """Copy every added or changed file into ``local`` at its path (deleted ones are only
    listed): the instance's download rules apply to each, links out of the tree refused, and
    nothing is written through a link on this machine."""
    found = await changes(at, mount)
    target = Path(local)
    for change in found:
        if change.status != "deleted":
            _refuse_links_on_the_way(target, change.path)
            await at.provider.download_file(
                at.instance_id, posixpath.join(mount or ".", change.path), target / change.path
            )
    return found


def _refuse_links_on_the_way(target: Path, path: str) -> None:
    """``PathOutsideWorkspaceError`` when a directory on the way to ``target/path`` is a link
    on this machine: git never reports a path beneath a link, so the instance lies, to write
    through a link an earlier change made (``lnk -> .git``, then ``lnk/hooks/...``)."""
    here = target
    for part in path.split("/")[:-1]:
        here = here / part
        if here.is_symlink():
            raise PathOutsideWorkspaceError(
                f"download_changes: refused {path!r} from the instance: it goes through the link "
                f"{here.relative_to(target)} on this machine, where git never reports a change; "
                "the changes before it were written",
                op="download",
            )


async def _owner(at: Place) -> tuple[int, int]:
    """The instance user's uid and gid: the uploaded files are theirs."""
    said = (await _run(at, "id -u; id -g", "workspace")).split()
    return (int(said[0]), int(said[1])) if len(said) == 2 and all(s.isdigit() for s in said) else (0, 0)


async def _output(at: Place, script: str, mount: str | None) -> bytes:
    """Run a baseline script with its output to a file in the baseline repository, then fetch
    the file: a patch is neither capped nor mixed with what the exec channel says."""
    held = posixpath.join(mount or ".", _baseline.BASELINE_DIR, "praisonai-output")
    await _run(at, f'{script} >"$B/praisonai-output"', "diff", cwd=mount)
    with tempfile.TemporaryDirectory(prefix="praisonai-diff-") as scratch:
        await at.provider.download_file(at.instance_id, held, Path(scratch, "out"))
        return Path(scratch, "out").read_bytes()


async def _run(at: Place, command: str | list[str], op: str, cwd: str | None = None) -> str:
    result = await at.exec(command, cwd=cwd)
    if result.exit_code != 0:
        said = result.stderr.strip().splitlines()[-1:] or [f"exit {result.exit_code}"]
        raise ExecError(f"the workspace's {op} step failed in the instance: {said[0]}", op=op)
    return str(result.stdout)


def _said(stderr: str, spec: _repo.RepoSpec) -> str:
    lines = [line for line in _repo.scrubbed(stderr, spec).strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"
