"""A hostile tree handed to ``upload_workspace``, and a hostile instance handing changes back:
no program named by the tree's git config (or by the instance) ever runs on this host, and
what the upload sends is still what git would track.

The tree's ``.git/config`` names a script that touches a marker file outside the tree; each
test uploads for real (git on this host, a real instance) and asserts the marker never
appears and the upload is right."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit import provider_named

from praisonai import Sandbox
from praisonai._errors import PathOutsideWorkspaceError
from praisonai.compute.workspace import BASELINE_DIR

_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]


@pytest.fixture(params=["local", "docker"])
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    with Sandbox.create(provider_named(request.param, request), environment=False) as sb:
        yield sb


@pytest.fixture
def local_sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    with Sandbox.create(provider_named("local", request), environment=False) as sb:
        yield sb


def payload(tmp_path: Path) -> tuple[Path, Path]:
    """A program that, if anything runs it, leaves ``marker`` (outside every tree)."""
    marker = tmp_path / "ran-on-the-host"
    script = tmp_path / "payload.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat >/dev/null 2>&1\nexit 0\n")
    script.chmod(0o755)
    return script, marker


def repository(where: Path) -> Path:
    """A git work tree: a committed file, an untracked one, an ignored one."""
    subprocess.run([*_GIT, "init", "-q", str(where)], check=True)
    (where / ".gitignore").write_text("*.log\n")
    (where / "tracked.py").write_text("X = 1\n")
    subprocess.run([*_GIT, "-C", str(where), "add", "."], check=True)
    subprocess.run([*_GIT, "-C", str(where), "commit", "-qm", "first"], check=True)
    (where / "untracked.py").write_text("Y = 2\n")
    (where / "noise.log").write_text("ignored")
    return where


def hostile_config(tree: Path, script: Path, how: str) -> None:
    """Arm the tree's own config with ``script`` the way ``how`` names (git reads the key from
    the tree's config, or from a file that config includes)."""
    config = tree / ".git" / "config"
    if how == "fsmonitor":
        config.write_text(config.read_text() + f"[core]\n\tfsmonitor = {script}\n")
    elif how == "include":  # the key pulled in from another file of the tree
        (tree / ".git" / "more").write_text(f"[core]\n\tfsmonitor = {script}\n")
        config.write_text(config.read_text() + "[include]\n\tpath = more\n")
    elif how == "includeIf":
        (tree / ".git" / "more").write_text(f"[core]\n\tfsmonitor = {script}\n")
        config.write_text(config.read_text() + '[includeIf "gitdir:**"]\n\tpath = more\n')


def uploaded(sandbox: Sandbox) -> list[str]:
    found = sandbox.exec(f"find . -path ./{BASELINE_DIR} -prune -o -path ./.git -prune -o -type f -print")
    return sorted(found.stdout.split())


def test_the_trees_fsmonitor_never_runs_on_the_host(sandbox: Sandbox, tmp_path: Path) -> None:
    script, marker = payload(tmp_path)
    tree = repository(tmp_path / "tree")
    hostile_config(tree, script, "fsmonitor")
    sandbox.upload_workspace(tree)
    assert not marker.exists(), "the tree's core.fsmonitor ran on the host"
    assert uploaded(sandbox) == ["./.gitignore", "./tracked.py", "./untracked.py"]
    assert sandbox.exec("test -f .git/config && test -f .git/HEAD").ok  # history goes with it


@pytest.mark.parametrize("how", ["include", "includeIf"])
def test_the_key_pulled_in_by_an_include_never_runs(local_sandbox: Sandbox, tmp_path: Path, how: str) -> None:
    script, marker = payload(tmp_path)
    tree = repository(tmp_path / "tree")
    hostile_config(tree, script, how)
    local_sandbox.upload_workspace(tree)
    assert not marker.exists(), f"the tree's config ({how}) ran a program on the host"
    assert uploaded(local_sandbox) == ["./.gitignore", "./tracked.py", "./untracked.py"]


def test_a_dot_git_that_is_no_repository_does_not_send_git_up_to_the_parent(
    local_sandbox: Sandbox, tmp_path: Path
) -> None:
    """``tree/.git`` is an empty directory inside a hostile repository: git, asked in ``tree``,
    would climb to the parent's ``.git`` and run its config; the tree is walked instead."""
    script, marker = payload(tmp_path)
    outer = repository(tmp_path / "outer")
    hostile_config(outer, script, "fsmonitor")
    tree = outer / "tree"
    (tree / ".git").mkdir(parents=True)
    (tree / "mine.py").write_text("Z = 3\n")
    local_sandbox.upload_workspace(tree)
    assert not marker.exists(), "git climbed to the parent repository and ran its core.fsmonitor"
    assert uploaded(local_sandbox) == ["./mine.py"]


def test_inherited_git_variables_do_not_change_what_is_listed(
    local_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from inside a git hook (``GIT_DIR`` and ``GIT_INDEX_FILE`` set for another repository,
    config given by ``GIT_CONFIG_COUNT``): the tree given is still the tree listed."""
    script, marker = payload(tmp_path)
    other = repository(tmp_path / "other")
    (other / "elsewhere.py").write_text("W = 4\n")
    subprocess.run([*_GIT, "-C", str(other), "add", "elsewhere.py"], check=True)
    tree = repository(tmp_path / "tree")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    for key, value in {"COUNT": "1", "KEY_0": "core.fsmonitor", "VALUE_0": str(script)}.items():
        monkeypatch.setenv(f"GIT_CONFIG_{key}", value)
    local_sandbox.upload_workspace(tree)
    assert not marker.exists()
    assert uploaded(local_sandbox) == ["./.gitignore", "./tracked.py", "./untracked.py"]
    assert local_sandbox.exec("test -f .git/HEAD").ok, "the tree was not taken for the work tree it is"
    assert os.environ["GIT_DIR"] == str(other / ".git")  # ours alone was cleaned


#: A ``git`` the instance puts first on its PATH: it names changes git itself never reports
#: (inside a ``.git``, in any case), each present in the instance. (A link out of the tree is
#: refused by the download itself.)
_LYING_GIT = r"""#!/bin/sh
case "$*" in *--name-status*)
    mkdir -p .git/hooks sub/.GIT && printf '#!/bin/sh\n%s\n' "$MARK" > .git/hooks/post-checkout
    chmod +x .git/hooks/post-checkout && printf '[core]\n\tfsmonitor = %s\n' "$MARK" > sub/.GIT/config
    cp .git/config .git/config.bak && printf '[core]\n\tfsmonitor = %s\n' "$MARK" >> .git/config
    printf 'A\0.git/hooks/post-checkout\0M\0.git/config\0A\0sub/.GIT/config\0M\0tracked.py\0'; exit 0;;
esac
exec /usr/bin/git "$@"
"""


def test_changes_named_inside_a_dot_git_are_never_written(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The instance lies about what changed, to plant a hook and a config in the user's own
    repository (which the next ``git checkout`` there would run): only the real change arrives."""
    script, marker = payload(tmp_path)
    tree = repository(tmp_path / "tree")
    config_before = (tree / ".git" / "config").read_text()
    env = {"PATH": "/tmp/bin:/usr/bin:/bin", "MARK": str(script)}
    with Sandbox.create(provider_named("docker", request), environment=False, env=env) as sb:
        sb.upload_workspace(tree)
        sb.write_file("/tmp/bin/git", _LYING_GIT)
        sb.exec("chmod +x /tmp/bin/git && echo 'X = 9' > tracked.py", check=True)
        changes = sb.download_changes(tree)
    assert not (tree / ".git" / "hooks" / "post-checkout").exists(), "a hook was planted in the user's repo"
    assert (tree / ".git" / "config").read_text() == config_before, "the user's .git/config was rewritten"
    assert not (tree / "sub" / ".GIT").exists()
    assert (tree / "tracked.py").read_text() == "X = 9\n"
    assert [c.path for c in changes] == ["tracked.py"]
    subprocess.run([*_GIT, "-C", str(tree), "checkout", "-q", "-b", "other"], check=True)
    assert not marker.exists()


#: The same lie by another route: a link to ``.git`` (inside the tree, which the download
#: allows), then a file beneath the link.
_LYING_GIT_THROUGH_A_LINK = r"""#!/bin/sh
case "$*" in *--name-status*)
    mkdir -p .git/hooks && printf '#!/bin/sh\n%s\n' "$MARK" > .git/hooks/post-checkout
    chmod +x .git/hooks/post-checkout && ln -sfn .git lnk
    printf 'T\0lnk\0A\0lnk/hooks/post-checkout\0'; exit 0;;
esac
exec /usr/bin/git "$@"
"""


def test_a_change_beneath_a_link_is_refused(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    script, marker = payload(tmp_path)
    tree = repository(tmp_path / "tree")
    env = {"PATH": "/tmp/bin:/usr/bin:/bin", "MARK": str(script)}
    with Sandbox.create(provider_named("docker", request), environment=False, env=env) as sb:
        sb.upload_workspace(tree)
        sb.write_file("/tmp/bin/git", _LYING_GIT_THROUGH_A_LINK)
        sb.exec("chmod +x /tmp/bin/git", check=True)
        with pytest.raises(
            PathOutsideWorkspaceError, match=r"'lnk/hooks/post-checkout'.*goes through the link lnk"
        ):
            sb.download_changes(tree)
    assert not (tree / ".git" / "hooks" / "post-checkout").exists(), "a hook was planted through a link"
    subprocess.run([*_GIT, "-C", str(tree), "checkout", "-q", "-b", "other"], check=True)
    assert not marker.exists()
