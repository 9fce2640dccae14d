"""Which entries of a local tree a workspace upload sends: what git would track (``.gitignore``
honoured), and for a git work tree its ``.git`` too, so history and ``git diff`` work inside.

The tree is a stranger's as often as the user's (an unpacked archive, a shared directory), and
git runs programs its repository's config names. Our two commands (``rev-parse`` and
``ls-files -co --exclude-standard``) reach only one such key, ``core.fsmonitor`` (queried for
the untracked files); ``core.hooksPath`` would matter were the index written, and a pager were
the output a terminal. Those are overridden on the command line, which git reads after every
other config (includes of the tree's config too); the rest (``diff.external``, filters and
textconv from ``.gitattributes``, ``core.sshCommand``, credential helpers, editors,
``core.alternateRefsCommand``) belong to commands that read file contents, talk to a remote or
ask the user, which these never do. The environment is this process's without any ``GIT_*``
(a git hook's ``GIT_DIR`` would list another repository), with no system config and no prompt,
and discovery stops at the tree: a ``.git`` that is no repository never sends git up to a
parent's."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pathspec

from praisonai._errors import ConfigError

#: Every key of the tree's config that could run a program from our commands, neutralized.
_GIT = ("git", "--no-pager", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")
GIT_LISTING = (*_GIT, "ls-files", "-co", "--exclude-standard", "-z")


def selected(root: Path) -> Iterator[str]:
    """The relative POSIX names to upload, in a stable order; a link is one entry (never
    entered). A git work tree asks git itself (``git ls-files -co --exclude-standard``), any
    other tree (or any tree where git is not installed) is walked with ``pathspec`` reading each
    directory's ``.gitignore`` (``.git`` left out)."""
    if (root / ".git").exists() and shutil.which("git") is not None and _git_tree(root):
        yield from _git_listing(root)
        yield from _walk(root, ".git", ignore=False)
    else:
        yield from _walk(root, "", ignore=True)


def _git_tree(root: Path) -> bool:
    probe = subprocess.run(
        [*_GIT, "rev-parse", "--is-inside-work-tree"],
        cwd=root,
        env=_environment(root),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0 and probe.stdout.strip() == b"true"


def _environment(root: Path) -> dict[str, str]:
    """This process's environment without git's own variables, and none that asks or pages."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    return {
        **kept,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CEILING_DIRECTORIES": str(root.parent),  # git looks in root, never above it
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",  # listing never rewrites the user's index
        "GIT_PAGER": "cat",
    }


def _git_listing(root: Path) -> Iterator[str]:
    with subprocess.Popen(
        [*GIT_LISTING],
        cwd=root,
        env=_environment(root),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as listing:
        assert listing.stdout is not None
        pending = b""
        while chunk := listing.stdout.read(65536):
            *names, pending = (pending + chunk).split(b"\0")
            yield from (os.fsdecode(name) for name in names if name)
        error = listing.stderr.read() if listing.stderr else b""
    if listing.returncode != 0:
        raise ConfigError(
            f"git ls-files failed in {root}: {error.decode(errors='replace').strip()}; fix the repository "
            "or upload a tree that is not one",
            op="workspace",
        )


def _walk(root: Path, below: str, *, ignore: bool) -> Iterator[str]:
    """Every file and link under ``root/below`` (directories are entered, links never)."""
    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    for top, dirs, files in os.walk(root / below if below else root, followlinks=False):
        rel = Path(top).relative_to(root).as_posix()
        rel = "" if rel == "." else rel
        if ignore:
            specs = [
                (base, spec) for base, spec in specs if rel == base or rel.startswith(base + "/") or not base
            ]
            if ".gitignore" in files and not (root / rel / ".gitignore").is_symlink():
                lines = (root / rel / ".gitignore").read_text(errors="replace").splitlines()
                specs.append((rel, pathspec.GitIgnoreSpec.from_lines(lines)))
            dirs[:] = sorted(d for d in dirs if d != ".git" and not _ignored(specs, rel, d, True))
            files = [f for f in files if not _ignored(specs, rel, f, False)]
        else:
            dirs.sort()
        for name in sorted(files):
            yield f"{rel}/{name}" if rel else name
        for name in dirs[:]:
            if (Path(top) / name).is_symlink():  # a link to a directory: sent as a link
                dirs.remove(name)
                yield f"{rel}/{name}" if rel else name


def _ignored(specs: list[tuple[str, pathspec.GitIgnoreSpec]], rel: str, name: str, is_dir: bool) -> bool:
    path = f"{rel}/{name}" if rel else name
    ignored = False
    for base, spec in specs:  # outer first: a deeper .gitignore decides last, as git's do
        inner = path[len(base) + 1 :] if base else path
        result = spec.check_file(inner + ("/" if is_dir else ""))
        if result.include is not None:
            ignored = bool(result.include)
    return ignored
