"""Daytona's file API through the real ``daytona`` SDK against its wire fake (``fakes.daytona``:
the daemon's ``/files/info`` and ``DELETE /files`` done inside the sandbox's container). The
conformance file suite runs in test_conformance.py; these check that ``exists`` and ``remove`` are
the daemon's own calls, and the daemon's traps: its ``os.Stat`` follows links (a dangling link is
"not found", a link to a directory "is a directory"), so links planted by the instance, also ones
pointing outside the working dir, must still be reported and removed as links."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("daytona", reason="the daytona SDK is not installed (pip install 'praisonai[daytona]')")

from fakes.daytona import DaytonaFake

from praisonai import _portal
from praisonai._errors import PathNotFoundError, PraisonAIError
from praisonai.compute.providers.daytona import DaytonaCompute

pytestmark = pytest.mark.usefixtures("docker_ok")

PROVIDER = "daytona"  # the fake and provider fixtures: tests/providers/conftest.py
_INFO, _DELETE = "GET /toolbox/*/files/info", "DELETE /toolbox/*/files"
_ODD = ["-rf", "a b\nc", "ünï*?", " lead", "semi;colon", "$(x)"]  # planted by the instance


@pytest.fixture
def iid(provider: DaytonaCompute) -> Iterator[str]:
    instance_id = _portal.call(provider.provision).instance_id
    try:
        yield instance_id
    finally:
        _portal.call(provider.shutdown, instance_id)


def _sh(provider: DaytonaCompute, iid: str, script: str) -> str:
    result = _portal.call(provider.execute, iid, script)
    assert result.exit_code == 0, result
    return result.stdout


def _native(fake: DaytonaFake, before: dict[str, int]) -> dict[str, int]:
    """The daemon file routes called since ``before``."""
    return {k: fake.calls.get(k, 0) - before.get(k, 0) for k in (_INFO, _DELETE)}


def test_exists_and_remove_are_the_daemon_calls_and_a_link_outside_goes_as_a_link(
    provider: DaytonaCompute, fake: DaytonaFake, iid: str
) -> None:
    _sh(provider, iid, "mkdir -p d/real && echo k > d/real/keep && ln -s /etc d/out && ln -s real d/in")
    before = dict(fake.calls)
    assert _portal.call(provider.files.exists, iid, "d/out")
    _portal.call(provider.files.remove, iid, "d/out")  # a link to /etc: the daemon's os.Stat says "dir"
    _portal.call(provider.files.remove, iid, "d/in/")  # the link, not the directory it names
    assert _native(fake, before) == {_INFO: 1, _DELETE: 2}, "exists and remove must be native"
    assert _sh(provider, iid, "ls -A d; test -s /etc/passwd && echo etc-kept") == "real\netc-kept\n"
    assert _portal.call(provider.read_file, iid, "d/real/keep") == b"k\n"


def test_a_tree_holding_links_out_is_removed_without_entering_them(
    provider: DaytonaCompute, iid: str
) -> None:
    _sh(provider, iid, "mkdir -p /tmp/out t/sub && echo o > /tmp/out/f && ln -s /tmp/out t/sub/out")
    _portal.call(provider.files.remove, iid, "t")
    assert _sh(provider, iid, "cat /tmp/out/f; test -e t || echo t-gone") == "o\nt-gone\n"


def test_a_dangling_link_exists_and_is_removed_though_the_daemon_calls_it_missing(
    provider: DaytonaCompute, fake: DaytonaFake, iid: str
) -> None:
    _sh(provider, iid, "ln -s /nowhere dangling")
    before = dict(fake.calls)
    assert _portal.call(provider.files.exists, iid, "dangling")  # the daemon's 404, asked again
    _portal.call(provider.files.remove, iid, "dangling")
    assert _native(fake, before) == {_INFO: 1, _DELETE: 1}
    assert not _portal.call(provider.files.exists, iid, "dangling")
    assert _sh(provider, iid, "test -L dangling || echo gone") == "gone\n"


def test_odd_names_are_found_and_removed_as_named(provider: DaytonaCompute, iid: str) -> None:
    _sh(provider, iid, "mkdir odd && cd odd && touch -- " + " ".join(shlex.quote(n) for n in _ODD) + " keep")
    for name in _ODD:
        assert _portal.call(provider.files.exists, iid, f"odd/{name}"), name
        _portal.call(provider.files.remove, iid, f"odd/{name}")
        assert not _portal.call(provider.files.exists, iid, f"odd/{name}"), name
    assert _sh(provider, iid, "ls -A odd") == "keep\n"


def test_missing_paths_are_not_there_and_their_removal_says_so(provider: DaytonaCompute, iid: str) -> None:
    _sh(provider, iid, "touch plain")
    assert not _portal.call(provider.files.exists, iid, "nope/deeper")
    assert not _portal.call(provider.files.exists, iid, "plain/x")  # the daemon's 400 (ENOTDIR)
    with pytest.raises(PathNotFoundError, match="nope"):
        _portal.call(provider.files.remove, iid, "nope")


def test_a_paused_instance_is_resumed_for_a_native_call(provider: DaytonaCompute, iid: str) -> None:
    _sh(provider, iid, "touch kept")
    _portal.call(provider.pause, iid)
    assert _portal.call(provider.files.exists, iid, "kept")  # the toolbox answers a started sandbox only
    _portal.call(provider.files.remove, iid, "kept")
    assert not _portal.call(provider.files.exists, iid, "kept")


def test_the_fake_daemon_answers_as_os_stat_does(
    fake: DaytonaFake, provider: DaytonaCompute, iid: str
) -> None:
    """The fake's wire, through the SDK alone: links followed, the daemon's status codes."""
    from daytona import (
        Daytona,
        DaytonaBadRequestError,
        DaytonaConfig,
        DaytonaFileNotFoundError,
        DaytonaNotFoundError,
    )

    _sh(provider, iid, "mkdir -m 750 real && ln -s real link && ln -s /nowhere dangling")
    sdk = Daytona(DaytonaConfig(api_key="fake-key", api_url=fake.api_url))
    fs = sdk.get(iid).fs
    info = fs.get_file_info("link")  # relative: from the sandbox's working dir
    assert (info.name, info.is_dir, info.permissions, info.mode[:1]) == ("link", True, "0750", "d"), info
    assert info.modified_at and info.modified_at.endswith("Z"), info
    with pytest.raises(DaytonaNotFoundError):
        fs.get_file_info("dangling")
    with pytest.raises(DaytonaFileNotFoundError):
        fs.delete_file("dangling")
    with pytest.raises(DaytonaBadRequestError, match="recursive"):
        fs.delete_file("link")  # os.Stat: a directory
    fs.delete_file("link", recursive=True)
    assert _sh(provider, iid, "ls -A") == "dangling\nreal\n"


def test_a_write_cut_half_way_leaves_the_old_file(
    provider: DaytonaCompute, fake: DaytonaFake, iid: str, tmp_path: Path
) -> None:
    """A daemon that writes an upload in place as the bytes come (those before the temp-file
    upload) left half a file in place of the old one when an upload (write_file, or upload_file
    of one file) broke off. Now the old file stays, with its mode, and nothing is left beside it;
    a whole write keeps the mode too (the newest daemons reset it to 0644), replaces a planted
    link instead of writing through it, and a directory is refused."""
    _sh(provider, iid, "mkdir d && printf old > d/kept && chmod 750 d/kept")
    source = tmp_path / "source"
    source.write_bytes(b"n" * 4000)
    for write in (
        lambda: provider.write_file(iid, "d/kept", b"n" * 4000),
        lambda: provider.upload_file(iid, source, "d/kept"),
    ):
        fake.cut_uploads_at = 1000
        try:
            with pytest.raises(PraisonAIError, match="unexpected EOF"):
                _portal.call(write)
        finally:
            fake.cut_uploads_at = None
        assert _sh(provider, iid, "ls -A d; cat d/kept") == "kept\nold"
    _portal.call(provider.write_file, iid, "d/kept", b"new")
    assert _sh(provider, iid, "stat -c %a d/kept; cat d/kept") == "750\nnew"
    _sh(provider, iid, "printf mine > d/victim && ln -s victim d/planted")
    _portal.call(provider.write_file, iid, "d/planted", b"written")
    assert _sh(provider, iid, "cat d/victim; test -L d/planted || echo ' replaced'") == "mine replaced\n"
    with pytest.raises(IsADirectoryError):
        _portal.call(provider.write_file, iid, "d", b"x")
    assert _sh(provider, iid, "ls -A d") == "kept\nplanted\nvictim\n"
