"""SSH snapshots against a real OpenSSH sshd on 127.0.0.1, written as the attacker would: the
instance controls every file under its workspace (and, as the login user, the host's files that
user owns), so it plants links to host files, replaces its workspace by a link, tampers with its
snapshot's archive, names files with newlines and plants a link where a snapshot's archive would
go. None of it may read a host file into a snapshot or write one through a restore. Also: a
snapshot holds a whole version of a file rewritten in a loop, forks land on the snapshot's host,
and the archive is the login user's. Every test removes the instances and snapshots it made.
"""

from __future__ import annotations

import io
import os
import pwd
import secrets
import shutil
import socket
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from praisonai import Sandbox, _portal
from praisonai._errors import PathOutsideWorkspaceError, ProviderUnavailableError, ProvisionError
from praisonai._ledger import Ledger
from praisonai.compute import list_snapshots, remove_snapshot, snapshots
from praisonai.compute.abilities import snapshots as snapshot_ability
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.ssh import SSHCompute
from praisonai.compute.testing.sshd import SSHServer

#: 50 MiB, as the issue asks: long enough to write that a snapshot lands mid-write.
BIG = 50 * 1024 * 1024


class Made:
    """The sandboxes a test made (removed afterwards, before every snapshot of its home)."""

    def __init__(self, provider: SSHCompute) -> None:
        self.provider = provider
        self.sandboxes: list[Sandbox] = []

    def create(self, **fields: object) -> Sandbox:
        sb = Sandbox.create(self.provider, environment=False, **fields)  # type: ignore[arg-type]
        self.sandboxes.append(sb)
        return sb

    def keep(self, sandboxes: list[Sandbox]) -> list[Sandbox]:
        self.sandboxes.extend(sandboxes)
        return sandboxes


@pytest.fixture
def provider(sshd: SSHServer) -> SSHCompute:
    return SSHCompute(**sshd.connect_kwargs())


@pytest.fixture
def made(provider: SSHCompute, home: Path) -> Iterator[Made]:
    made = Made(provider)
    yield made
    for sb in made.sandboxes:
        sb.shutdown()
    for snapshot in list_snapshots():  # this test's home: every one is this test's
        remove_snapshot(snapshot)
    assert _portal.call(_held, provider) == [], "an archive outlived its snapshot"
    assert Ledger.default().entries() == [], "an instance outlived the test"


async def _held(provider: SSHCompute) -> list[str]:
    assert provider.snapshotter is not None
    return await provider.snapshotter.held()


def _store(sshd: SSHServer) -> Path:
    """Where the test sshd's host keeps the archives (this machine: the tests read it directly)."""
    return sshd.home / ".praisonai" / "instances" / ".praisonai" / "snapshots"


def _archive(sshd: SSHServer, snapshot_id: str) -> Path:
    (found,) = _store(sshd).glob(f"{snapshot_id}.*.tar")
    return found


def _host_dir(sb: Sandbox, marker: str) -> str:
    """A directory of the login user's outside every workspace (the host's, not the instance's)."""
    return sb.exec(f'd="$(cd ../../.. && pwd)/host-{marker}"; mkdir -p "$d" && echo "$d"').stdout.strip()


# ---- taking one: nothing outside the workspace is read ---------------------------------------------


def test_a_link_to_a_host_file_is_kept_as_a_link_and_its_target_is_never_read(
    sshd: SSHServer, made: Made
) -> None:
    secret, marker = "host-secret-" + secrets.token_hex(8), secrets.token_hex(4)
    sb = made.create()
    host = _host_dir(sb, marker)
    try:
        sb.exec(f"printf %s {secret} > {host}/secret.txt && ln -s {host}/secret.txt file-link")
        sb.exec(f"ln -s {host} dir-link && ln -s ../../../host-{marker}/secret.txt relative-link")
        snapshot = sb.snapshot()
        assert secret.encode() not in _archive(sshd, snapshot.id).read_bytes(), "a link was followed"
        copy = made.create(from_snapshot=snapshot)
        links = copy.exec("for f in file-link dir-link relative-link; do [ -L $f ] && readlink $f; done")
        assert links.stdout.split() == [f"{host}/secret.txt", host, f"../../../host-{marker}/secret.txt"]
    finally:
        sb.exec(f"rm -rf {host}")


def test_a_workspace_replaced_by_a_link_to_a_host_directory_is_not_archived(
    sshd: SSHServer, made: Made
) -> None:
    secret, marker = "host-secret-" + secrets.token_hex(8), secrets.token_hex(4)
    sb = made.create()
    host = _host_dir(sb, marker)
    workspace = sb.exec("pwd -P").stdout.strip()
    sb.exec(f"printf %s {secret} > {host}/secret.txt")
    sb.exec(f'mv "{workspace}" "{workspace}.moved" && ln -s "{host}" "{workspace}"')
    try:
        with pytest.raises(PathOutsideWorkspaceError, match="no longer a directory of its own") as refused:
            sb.snapshot()
        assert "\n" not in str(refused.value)
        assert list(_store(sshd).glob("*")) == [], "a refused snapshot left an archive"
    finally:
        sb.exec(f'rm -f "{workspace}" && mv "{workspace}.moved" "{workspace}" && rm -rf "{host}"')


# ---- restoring one: nothing outside the workspace is written -----------------------------------------


def _planted(members: list[tarfile.TarInfo]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            data = b"planted" if member.isreg() else b""
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, target: str = "") -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.linkname, member.mode = kind, target, 0o644
    return member


#: Archives an instance may write over its snapshot's (it runs as the user who owns them): each has
#: a member that lands outside the workspace when extracted naively ({out}: a host directory).
ESCAPES: dict[str, list[tuple[str, bytes, str]]] = {
    "dot-dot": [("./kept.txt", tarfile.REGTYPE, ""), ("../../../escaped.txt", tarfile.REGTYPE, "")],
    "through a link to a host directory": [
        ("out", tarfile.SYMTYPE, "{out}"),
        ("out/escaped.txt", tarfile.REGTYPE, ""),
    ],
    "through a chain of links": [
        ("a", tarfile.SYMTYPE, "b"),
        ("b", tarfile.SYMTYPE, "../../../../../host-{marker}"),
        ("a/escaped.txt", tarfile.REGTYPE, ""),
    ],
    "a hard link to a host file": [("hard", tarfile.LNKTYPE, "{out}/victim.txt")],
    "a name with a newline and dot-dot": [("x\n../../../../escaped.txt", tarfile.REGTYPE, "")],
}


@pytest.mark.parametrize("attack", list(ESCAPES))
def test_a_tampered_archive_is_refused_whole_and_nothing_leaves_the_workspace(
    sshd: SSHServer, made: Made, attack: str
) -> None:
    marker = secrets.token_hex(4)
    sb = made.create()
    out = _host_dir(sb, marker)
    try:
        sb.exec(f"printf victim > {out}/victim.txt && printf before > state.txt")
        snapshot = sb.snapshot()
        sb.exec("printf after > state.txt")
        members = [
            _member(name, kind, target.format(out=out, marker=marker))
            for name, kind, target in ESCAPES[attack]
        ]
        sb.write_file("planted.tar", _planted(members))
        sb.exec(f"cat planted.tar > ../.praisonai/snapshots/{_archive(sshd, snapshot.id).name}")
        with pytest.raises(ProvisionError, match="nothing was restored") as refused:
            sb.restore(snapshot)
        assert "\n" not in str(refused.value)
        escaped = sb.exec(f"find {sshd.home} /tmp -name 'escaped.txt*' 2>/dev/null; cat {out}/victim.txt")
        assert escaped.stdout == "victim", f"a member left the workspace: {escaped.stdout!r}"
        assert sb.read_file("state.txt") == b"after", "a refused restore changed the workspace"
    finally:
        sb.exec(f"rm -rf {out}")


def test_an_absolute_member_is_put_beneath_the_workspace(sshd: SSHServer, made: Made) -> None:
    sb = made.create()
    host = _host_dir(sb, secrets.token_hex(4))
    try:
        snapshot = sb.snapshot()
        sb.write_file("planted.tar", _planted([_member(f"{host}/absolute.txt")]))
        sb.exec(f"cat planted.tar > ../.praisonai/snapshots/{_archive(sshd, snapshot.id).name}")
        sb.restore(snapshot)
        assert not os.path.lexists(f"{host}/absolute.txt"), "an absolute member was written where it points"
        assert sb.read_file(f"{host.lstrip('/')}/absolute.txt") == b"planted"
    finally:
        sb.exec(f"rm -rf {host}")


def test_restore_never_writes_through_a_link_the_instance_put_where_a_file_was(
    sshd: SSHServer, made: Made
) -> None:
    marker = secrets.token_hex(4)
    sb = made.create()
    host = _host_dir(sb, marker)
    try:
        sb.exec(f"printf victim > {host}/victim.txt && mkdir sub && printf kept > sub/data.txt")
        sb.exec("printf kept > data.txt")
        snapshot = sb.snapshot()
        sb.exec(f"rm -rf sub data.txt && ln -s {host}/victim.txt data.txt && ln -s {host} sub")
        sleeper = f"sleep {1_000_000 + secrets.randbelow(1_000_000)}"
        sb.exec(f"{sleeper} >/dev/null 2>&1 &")
        assert sb.restore(snapshot).instance_id == sb.id
        seen = sb.exec(f"cat {host}/victim.txt; ls {host}; [ -L data.txt ] || cat data.txt sub/data.txt")
        assert seen.stdout == "victimvictim.txt\nkeptkept", seen.stdout
        assert sleeper not in sb.exec("ps -eo args").stdout, "restore left the instance's processes"
    finally:
        sb.exec(f"rm -rf {host}")


# ---- names ---------------------------------------------------------------------------------------------


def test_names_with_newlines_and_dashes_come_back_exactly(made: Made) -> None:
    sb = made.create()
    sb.exec(
        """mkdir "$(printf 'line\\nbreak')" && printf one > "$(printf 'line\\nbreak')/$(printf 'a\\nb')" """
    )
    sb.exec("printf two > ./-rf && printf three > ' lead' && printf four > '..x'")
    listing = (
        "find . -mindepth 1 -print0 | sort -z | "
        'xargs -0 -n1 sh -c \'printf "[%s]" "$0"; cat "$0" 2>/dev/null\''
    )
    before = sb.exec(listing).stdout
    (copy,) = made.keep(sb.fork(1))
    assert copy.exec(listing).stdout == before, "a name was changed on its way through the archive"


def test_an_archive_name_planted_in_advance_is_neither_written_through_nor_adopted(
    sshd: SSHServer, made: Made, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attacker knows the next snapshot id (it is printed, logged) and plants a link at the names
    an archive could take: the host file it points at is untouched, and the snapshot is the instance's."""
    known = "snap_" + secrets.token_hex(6)
    monkeypatch.setattr(snapshot_ability, "new_snapshot_id", lambda: known)
    marker = secrets.token_hex(4)
    sb = made.create()
    host = _host_dir(sb, marker)
    store = "../.praisonai/snapshots"
    try:
        sb.exec(f"printf victim > {host}/victim.txt && printf mine > mine.txt && mkdir -p {store}")
        for name in (f"{known}.tar", f".{known}.tar", f"{known}.partial"):
            sb.exec(f"ln -s {host}/victim.txt {store}/{name}")
        snapshot = sb.snapshot()
        assert snapshot.id == known
        assert sb.exec(f"cat {host}/victim.txt").stdout == "victim", "the archive was written through a link"
        copy = made.create(from_snapshot=snapshot)  # not a fork: its snapshot would take the same id
        assert copy.read_file("mine.txt") == b"mine"
    finally:
        sb.exec(f"rm -rf {host} {store}/{known}.tar {store}/.{known}.tar {store}/{known}.partial")


# ---- the rest of what a snapshot promises ------------------------------------------------------------

#: Rewrites big.bin in a loop, each version whole in a file renamed over it (as a careful writer does).
_WRITER = (
    'n=0; while :; do c=$(printf "\\\\$(printf %03o $((97 + n % 26)))"); '
    "head -c {size} /dev/zero | tr '\\000' \"$c\" > big.tmp && mv big.tmp big.bin; n=$((n + 1)); done"
)
#: The file's size and how many of its bytes differ from its first (none in a whole version).
_WHOLE = 'wc -c < big.bin; tr -d "$(head -c 1 big.bin)" < big.bin | wc -c'


def test_every_snapshot_of_a_file_rewritten_in_a_loop_holds_a_whole_version(made: Made) -> None:
    sb = made.create()
    sb.start(_WRITER.format(size=BIG))
    sb.exec("until [ -e big.bin ]; do sleep 0.05; done", timeout=120)
    for snapshot in [sb.snapshot() for _ in range(2)]:
        size, rest = made.create(from_snapshot=snapshot).exec(_WHOLE).stdout.split()
        assert (int(size), int(rest)) == (BIG, 0), f"snapshot {snapshot.id} holds a torn version"


def test_the_archive_is_the_login_users_private_file_and_holds_no_bound_env(
    sshd: SSHServer, made: Made, provider: SSHCompute
) -> None:
    secret = "late-bound-" + secrets.token_hex(12)
    sb = made.create()
    _portal.call(provider.processes.bind_env, sb.id, {"LATE_TOKEN": secret})
    snapshot = sb.snapshot()
    archive = _archive(sshd, snapshot.id)
    assert secret.encode() not in archive.read_bytes()
    assert archive.stat().st_uid == pwd.getpwnam(sshd.user).pw_uid
    assert _store(sshd).stat().st_mode & 0o777 == 0o700
    assert snapshot.size_bytes == archive.stat().st_size
    suffix = archive.name.removeprefix(f"{snapshot.id}.").removesuffix(".tar")
    assert len(suffix) >= 10 and sb.id not in archive.name, "the archive's name can be guessed"


def test_forks_land_on_the_host_that_keeps_the_snapshot(sshd: SSHServer, home: Path) -> None:
    """Two hosts of a pool (two roots on the test sshd): the forks are made where the archive is,
    whichever host is least busy."""
    roots = [f".praisonai/pool-{secrets.token_hex(3)}-{n}" for n in range(2)]
    provider = SSHCompute(hosts=[{**sshd.connect_kwargs(), "root": root} for root in roots])
    made = Made(provider)
    try:
        sb = made.create()
        sb.write_file("base.txt", "base")
        root = next(r for r in roots if f"/{r}/" in sb.exec("pwd -P").stdout)
        forks = made.keep(sb.fork(3))
        for fork in forks:
            assert f"/{root}/" in fork.exec("pwd -P").stdout, "a fork was made on another host"
            assert fork.read_file("base.txt") == b"base"
    finally:
        for sb in made.sandboxes:
            sb.shutdown()
        for snapshot in list_snapshots():
            remove_snapshot(snapshot)
        assert _portal.call(_held, provider) == []
        for root in roots:
            shutil.rmtree(sshd.home / root, ignore_errors=True)


def test_a_pool_host_that_does_not_answer_stops_neither_a_fork_nor_a_removal(
    sshd: SSHServer, home: Path
) -> None:
    """The silent host comes first: the snapshot's host is found past it, and its archive removed."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        silent = closed.getsockname()[1]  # nothing listens there once the socket is closed
    live = sshd.connect_kwargs()
    provider = SSHCompute(hosts=[{**live, "port": silent, "connect_timeout": 2}, live])
    made: list[str] = []
    try:
        source = _portal.call(provider.provision)
        made.append(source.instance_id)
        _portal.call(provider.write_file, source.instance_id, "kept.txt", "kept")
        snapshot = _portal.call(snapshots.front(provider).take, source.instance_id, None)
        copy = _portal.call(snapshots.provision_from, provider, ComputeConfig(), snapshot)
        made.append(copy.instance_id)
        assert _portal.call(provider.read_file, copy.instance_id, "kept.txt") == b"kept"
    finally:
        for instance_id in made:
            _portal.call(provider.shutdown, instance_id)
        removed = [remove_snapshot(leftover) for leftover in list_snapshots()]
    assert removed == [True]
    with pytest.raises(ProviderUnavailableError):  # not "gone": it may be on the silent host
        _portal.call(provider.snapshotter.remove, snapshot.id)
