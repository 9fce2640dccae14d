"""The file API on E2B through the real ``e2b`` SDK against the wire fake, whose
``filesystem.Filesystem`` service does envd's calls inside the sandbox's container
(``fakes.e2b._fs``): which operations are envd's own calls, that links (one pointing outside the
working dir) are reported, removed and replaced as links, never followed, that a name with a
newline survives, and that each error is the one the generic path raises."""

from __future__ import annotations

import dataclasses
import shlex
import uuid
from collections.abc import Iterator

import pytest

pytest.importorskip("e2b")

from fakes.e2b import E2BFake

from praisonai import _portal
from praisonai._errors import ExecError, PathNotFoundError
from praisonai.compute.files import ShellFiles
from praisonai.compute.testing import Context

pytestmark = pytest.mark.usefixtures("docker_ok")

PROVIDER = "e2b"  # the fake, provider and ctx fixtures: tests/providers/conftest.py
_FS = "POST /filesystem.Filesystem/"
_START = "POST /process.Process/Start"


@pytest.fixture
def d(ctx: Context) -> Iterator[str]:
    """A fresh directory under the working dir, removed after the test (also when it fails)."""
    where = f"fs-{uuid.uuid4().hex[:8]}"
    assert _portal.call(ctx.sh, f"mkdir {where}").ok
    yield where
    _portal.call(ctx.sh, f"rm -rf -- {where}")


def _calls_of(fake: E2BFake, call: object) -> list[str]:
    before = len(fake.calls)
    _portal.call(call)  # type: ignore[arg-type]
    return [c for c in fake.calls[before:] if c.startswith((_FS, _START))]


def test_exists_stat_remove_rename_mkdir_are_envds_own_calls(fake: E2BFake, ctx: Context, d: str) -> None:
    p, i = ctx.provider, ctx.instance_id
    _portal.call(p.write_file, i, f"{d}/a", b"abc")
    assert _calls_of(fake, lambda: p.files.stat(i, f"{d}/a")) == [_FS + "Stat"]
    assert _calls_of(fake, lambda: p.files.exists(i, f"{d}/a")) == [_FS + "Stat"]
    assert _calls_of(fake, lambda: p.files.mkdir(i, f"{d}/x/y")) == [_FS + "MakeDir"]
    assert _calls_of(fake, lambda: p.files.rename(i, f"{d}/a", f"{d}/x/b")) == [_FS + "Move"]
    assert _calls_of(fake, lambda: p.files.remove(i, f"{d}/x")) == [_FS + "Stat", _FS + "Remove"]
    # list is the script (envd's ListDir enters a link to a directory), as is mkdir without parents
    assert _calls_of(fake, lambda: p.files.list(i, d)) == [_START]
    assert _calls_of(fake, lambda: p.files.mkdir(i, f"{d}/z", parents=False)) == [_START]


def test_native_stat_matches_the_generic_script(ctx: Context, d: str) -> None:
    p, i = ctx.provider, ctx.instance_id
    assert _portal.call(ctx.sh, f"echo hi > {d}/f && chmod 4750 {d}/f && mkdir {d}/s && chmod 1777 {d}/s").ok
    for path in (f"{d}/f", f"{d}/s", d):
        native = _portal.call(p.files.stat, i, path)
        generic = _portal.call(ShellFiles(p.execute, target=p._channel_path).stat, i, path)
        assert abs(native.mtime - generic.mtime) < 1e-5, (native, generic)
        assert native == dataclasses.replace(generic, mtime=native.mtime), (native, generic)
    assert _portal.call(p.files.stat, i, f"{d}/s").mode == 0o1777


def test_a_link_pointing_outside_is_never_followed(ctx: Context, d: str) -> None:
    p, i = ctx.provider, ctx.instance_id
    assert _portal.call(ctx.sh, f"ln -s /etc {d}/out && ln -s /nowhere {d}/dangling").ok
    link = _portal.call(p.files.stat, i, f"{d}/out")
    assert (link.type, link.symlink_target, link.mode) == ("symlink", "/etc", 0o777), link
    assert _portal.call(p.files.exists, i, f"{d}/dangling")
    with pytest.raises(NotADirectoryError):
        _portal.call(p.files.list, i, f"{d}/out")
    for path in (f"{d}/out", f"{d}/dangling"):  # a link to a directory is not one; nor one to nowhere
        with pytest.raises(FileExistsError):
            _portal.call(p.files.mkdir, i, path)
    _portal.call(p.write_file, i, f"{d}/f", b"f")
    _portal.call(p.files.rename, i, f"{d}/f", f"{d}/out")  # replaces the link, never moves into /etc
    assert _portal.call(p.files.stat, i, f"{d}/out").type == "file"
    assert _portal.call(ctx.sh, "test -d /etc && test ! -e /etc/f").ok
    _portal.call(p.files.remove, i, f"{d}/dangling")
    assert not _portal.call(p.files.exists, i, f"{d}/dangling")
    assert _portal.call(ctx.sh, f"ln -s /etc {d}/out2").ok
    _portal.call(p.files.remove, i, f"{d}/out2")  # the link, not /etc
    assert _portal.call(ctx.sh, "test -f /etc/passwd").ok


def test_a_name_with_a_newline(ctx: Context, d: str) -> None:
    p, i = ctx.provider, ctx.instance_id
    name, other = "a\nb", "c\n0\t644 x"
    assert _portal.call(ctx.sh, f"touch -- {shlex.quote(f'{d}/{name}')}").ok
    info = _portal.call(p.files.stat, i, f"{d}/{name}")
    assert (info.name, info.path, info.type) == (name, f"{d}/{name}", "file"), info
    _portal.call(p.files.rename, i, f"{d}/{name}", f"{d}/{other}")
    assert [e.name for e in _portal.call(p.files.list, i, d)] == [other]
    _portal.call(p.files.remove, i, f"{d}/{other}")
    assert _portal.call(p.files.list, i, d) == []


def test_errors_are_the_generic_paths(ctx: Context, d: str) -> None:
    p, i = ctx.provider, ctx.instance_id
    _portal.call(p.write_file, i, f"{d}/file", b"")
    for call in (
        lambda: p.files.stat(i, f"{d}/gone"),
        lambda: p.files.stat(i, f"{d}/file/under"),  # ENOTDIR: nothing there, as lstat says
        lambda: p.files.remove(i, f"{d}/gone"),
        lambda: p.files.rename(i, f"{d}/gone", f"{d}/new"),
    ):
        with pytest.raises(PathNotFoundError, match="no such file or directory in the instance"):
            _portal.call(call)
    assert not _portal.call(p.files.exists, i, f"{d}/file/under")
    with pytest.raises(FileExistsError):
        _portal.call(p.files.mkdir, i, f"{d}/file")
    _portal.call(p.files.mkdir, i, f"{d}/dir")
    _portal.call(p.files.mkdir, i, f"{d}/dir")  # exist_ok
    with pytest.raises(FileExistsError):
        _portal.call(lambda: p.files.mkdir(i, f"{d}/dir", exist_ok=False))
    _portal.call(p.files.rename, i, f"{d}/file", f"{d}/new/parent/file")  # envd's Move makes parents
    assert _portal.call(p.files.exists, i, f"{d}/new/parent/file")


def test_the_fakes_envd_follows_links_as_envd_does(ctx: Context, d: str) -> None:
    # Why list and a link's stat stay on the script: envd's ListDir enters a link to a directory
    # and reports a link with its target's type and resolved path (the SDK drops a dangling one).
    p, i = ctx.provider, ctx.instance_id
    assert _portal.call(
        ctx.sh, f"mkdir {d}/real && touch {d}/real/x && ln -s real {d}/l && ln -s /no {d}/g"
    ).ok
    sandbox = _portal.call(p._sandbox, i)  # type: ignore[attr-defined]
    root = _portal.call(p._channel_path, i, d)  # type: ignore[attr-defined]
    inside = _portal.call(sandbox.files.list, f"{root}/l")
    assert [(e.name, e.path) for e in inside] == [("x", f"{root}/l/x")]
    link = _portal.call(sandbox.files.get_info, f"{root}/l")
    assert (link.type.value, link.symlink_target) == ("dir", f"{root}/real"), link
    assert sorted(e.name for e in _portal.call(sandbox.files.list, root)) == ["l", "real"]
    assert _portal.call(sandbox.files.make_dir, f"{root}/l") is False  # "already exists"


def test_a_write_cut_half_way_leaves_the_old_file(fake: E2BFake, ctx: Context, d: str) -> None:
    """envd writes an upload into its file as the bytes come: one cut half-way (the connection
    drops, envd answers 500) used to leave half a file in place of the old one. The old file
    stays, with its mode, and nothing is left beside it; a whole write keeps the mode too."""
    p, i = ctx.provider, ctx.instance_id
    _portal.call(p.write_file, i, f"{d}/kept", b"old")
    assert _portal.call(ctx.sh, f"chmod 750 {d}/kept").ok
    fake.cut_uploads_at = 1000
    try:
        with pytest.raises(ExecError, match="E2B failed during write_file"):
            _portal.call(p.write_file, i, f"{d}/kept", b"n" * 4000)
    finally:
        fake.cut_uploads_at = None
    assert _portal.call(p.read_file, i, f"{d}/kept") == b"old"
    assert _portal.call(ctx.sh, f"ls -A {d}").stdout == "kept\n"
    _portal.call(p.write_file, i, f"{d}/kept", b"new")
    assert _portal.call(ctx.sh, f"stat -c %a {d}/kept; cat {d}/kept").stdout == "750\nnew"
    with pytest.raises(IsADirectoryError):
        _portal.call(p.write_file, i, d, b"x")


def test_a_write_replaces_a_link_instead_of_writing_through_it(ctx: Context, d: str) -> None:
    """A command plants a link where the host will write: envd's upload opened the path and wrote
    through the link (as root, chowning the target). Now the link is replaced."""
    p, i = ctx.provider, ctx.instance_id
    assert _portal.call(ctx.sh, f"printf mine > {d}/victim && ln -s victim {d}/planted").ok
    _portal.call(p.write_file, i, f"{d}/planted", b"written")
    assert _portal.call(ctx.sh, f"cat {d}/victim; test -L {d}/planted || echo ' replaced'").stdout == (
        "mine replaced\n"
    )
