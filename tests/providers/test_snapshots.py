"""Snapshots, fork and restore on real docker (runc and gVisor) and real local processes (plain and
under bubblewrap), through the user's API (``Sandbox``): a snapshot is consistent while a file is
rewritten in a loop; forks are independent; a failed fork removes what it made; a secret bound
after start is nowhere in a snapshot, nor in an instance started from it, nor (docker) in the
image's config, history or layers; bad input makes nothing. Every test removes what it made —
instances first, then snapshots (their images included) — also when it fails.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from praisonai import Sandbox, _portal
from praisonai._errors import ConfigError, ProvisionError
from praisonai._home import praisonai_home
from praisonai._ledger import Ledger
from praisonai.compute import SnapshotInfo, list_snapshots, remove_snapshot
from praisonai.compute.base import ComputeProvider
from praisonai.compute.providers.docker import DockerCompute
from praisonai.compute.providers.local import LocalCompute

#: 50 MiB, as the issue asks: long enough to write that a snapshot lands mid-write.
BIG = 50 * 1024 * 1024


def _gvisor(request: pytest.FixtureRequest) -> DockerCompute:
    request.getfixturevalue("docker_ok")
    missing = None if "runsc" in (DockerCompute().api.info().get("Runtimes") or {}) else "no runsc runtime"
    request.getfixturevalue("skip_unless_required")("gvisor", missing)
    return DockerCompute(runtime="runsc")


def _docker(request: pytest.FixtureRequest) -> DockerCompute:
    request.getfixturevalue("docker_ok")
    return DockerCompute()


def _local_bwrap(request: pytest.FixtureRequest) -> LocalCompute:
    request.getfixturevalue("bwrap_ok")
    return LocalCompute(isolate=True)


PROVIDERS: dict[str, Callable[[pytest.FixtureRequest], ComputeProvider]] = {
    "docker": _docker,
    "docker-gvisor": _gvisor,
    "local": lambda request: LocalCompute(),
    "local-bwrap": _local_bwrap,
}


@pytest.fixture(params=list(PROVIDERS))
def provider(request: pytest.FixtureRequest, home: Path) -> ComputeProvider:
    return PROVIDERS[request.param](request)


class Made:
    """The sandboxes and snapshots a test made, removed afterwards, pass or fail."""

    def __init__(self) -> None:
        self.sandboxes: list[Sandbox] = []

    def keep(self, *sandboxes: Sandbox) -> Sandbox:
        self.sandboxes.extend(sandboxes)
        return sandboxes[0]


@pytest.fixture
def made(provider: ComputeProvider) -> Iterator[Made]:
    made = Made()
    yield made
    for sb in made.sandboxes:  # before the snapshots: docker keeps an image its container runs from
        sb.shutdown()
    for snapshot in list_snapshots():  # this test's home: every one is this test's
        remove_snapshot(snapshot)
    assert _portal.call(_held, provider) == [], "a snapshot outlived its removal"
    assert Ledger.default().entries() == [], "an instance outlived the test"


async def _held(provider: ComputeProvider) -> list[str]:
    snapshotter = provider.snapshotter
    assert snapshotter is not None
    return await snapshotter.held()


def _create(provider: ComputeProvider, made: Made, **fields: Any) -> Sandbox:
    return made.keep(Sandbox.create(provider, environment=False, **fields))


# ---- consistency ---------------------------------------------------------------------------------

#: Rewrites big.bin in a loop, each version whole in a file of its own renamed over it (as a careful
#: writer does): one letter repeated, the next letter each time.
_WRITER = (
    'n=0; while :; do c=$(printf "\\\\$(printf %03o $((97 + n % 26)))"); '
    "head -c {size} /dev/zero | tr '\\000' \"$c\" > big.tmp && mv big.tmp big.bin; n=$((n + 1)); done"
)


#: The file's size, its first byte, and how many bytes are not that one (none in a whole version).
_WHOLE = 'wc -c < big.bin; head -c 1 big.bin | od -An -tu1; tr -d "$(head -c 1 big.bin)" < big.bin | wc -c'


def test_every_snapshot_of_a_file_rewritten_in_a_loop_holds_a_whole_version(
    provider: ComputeProvider, made: Made
) -> None:
    sb = _create(provider, made)
    sb.start(_WRITER.format(size=BIG))
    sb.exec("until [ -e big.bin ]; do sleep 0.05; done", timeout=120)
    taken = [sb.snapshot() for _ in range(3)]
    for snapshot in taken:
        copy = _create(provider, made, from_snapshot=snapshot)
        r = copy.exec(
            'wc -c < big.bin; head -c 1 big.bin | od -An -tu1; tr -d "$(head -c 1 big.bin)" < big.bin | wc -c'
        )
        size, first, rest = r.stdout.split()
        assert (int(size), int(rest)) == (BIG, 0), f"snapshot {snapshot.id} holds a torn version: {r.stdout}"
        assert ord("a") <= int(first) <= ord("z")


# ---- fork --------------------------------------------------------------------------------------


def test_fork_makes_independent_instances_each_running_its_own_command(
    provider: ComputeProvider, made: Made
) -> None:
    sb = _create(provider, made, env={"GREETING": "hi"})
    sb.write_file("base.txt", "shared past")
    forks = sb.fork(3)
    made.keep(*forks)
    assert len({f.id for f in forks} | {sb.id}) == 4
    for number, fork in enumerate(forks):
        fork.exec(f"echo {number} > mine.txt")
    for number, fork in enumerate(forks):
        r = fork.exec('cat base.txt; echo; cat mine.txt; echo "$GREETING"')
        assert r.stdout.split("\n") == ["shared past", str(number), "hi", ""], r.stdout
    assert sb.exec("ls mine.txt 2>/dev/null || echo none").stdout.strip() == "none"
    (snapshot,) = list_snapshots()
    assert snapshot.source == sb.id and snapshot.provider == provider.name


class _FailsSecondStart:
    """The provider's snapshotter, whose second instance fails once made (as an engine that stops
    answering mid-fork would)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.starts = inner, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def create_from(self, *args: Any) -> Any:
        self.starts += 1
        number = self.starts  # the forks start concurrently: counted before any of them awaits
        info = await self.inner.create_from(*args)
        if number == 2:
            raise ProvisionError("injected: the second fork failed", op="provision")
        return info


def test_a_failed_fork_removes_every_instance_and_the_snapshot_it_made(
    provider: ComputeProvider, made: Made
) -> None:
    sb = _create(provider, made)
    failing = _FailsSecondStart(provider.snapshotter)
    provider.__dict__["snapshotter"] = failing  # the part is a cached property: this one for the test
    try:
        with pytest.raises(ProvisionError, match="injected"):
            sb.fork(3)
    finally:
        del provider.__dict__["snapshotter"]
    assert failing.starts == 3
    assert [e.instance_id for e in Ledger.default().entries()] == [sb.id], "a fork outlived its failure"
    assert list_snapshots() == [] and _portal.call(_held, provider) == [], "the fork's snapshot stayed"


# ---- restore -----------------------------------------------------------------------------------


def test_restore_rolls_local_back_under_the_same_id_and_docker_says_fork(
    provider: ComputeProvider, made: Made
) -> None:
    sb = _create(provider, made)
    sb.write_file("state.txt", "one")
    snapshot = sb.snapshot("before-two")
    sb.write_file("state.txt", "two")
    if provider.name == "docker":
        with pytest.raises(Exception, match=r"fork\(1\)") as refused:
            sb.restore("before-two")
        assert "\n" not in str(refused.value) and sb.read_file("state.txt") == b"two"
        return
    assert sb.restore(snapshot).instance_id == sb.id
    assert sb.read_file("state.txt") == b"one" and sb.exec("echo up").stdout == "up\n"


# ---- secrets -----------------------------------------------------------------------------------

SECRET = "late-bound-" + "5e" * 12
_NOT_FILES = "--exclude-dir=proc --exclude-dir=sys --exclude-dir=dev"
_IS_BOUND = f'[ "$LATE_TOKEN" = {SECRET} ] && echo bound'


def test_a_secret_bound_after_start_is_nowhere_in_a_snapshot_or_what_starts_from_it(
    provider: ComputeProvider, made: Made
) -> None:
    """The attack: bind a secret once the instance runs, use it, snapshot, start from the snapshot,
    and look for the secret everywhere an attacker with the new instance, or with the engine,
    could. (Commands here never print it: a command's output is kept in the helper's spool, in the
    container's layer, like any file a command writes.)"""
    sb = _create(provider, made)
    _portal.call(provider.processes.bind_env, sb.id, {"LATE_TOKEN": SECRET})
    assert sb.exec(_IS_BOUND).stdout.strip() == "bound"
    snapshot = sb.snapshot()
    copy = _create(provider, made, from_snapshot=snapshot)
    assert copy.exec('echo "[${#LATE_TOKEN}]"').stdout.strip() == "[0]", "the new instance has it bound"
    if provider.name == "docker":
        found = copy.exec(
            f"grep -rlsF {SECRET} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev || true"
        )
        assert found.stdout.strip() == "", f"the secret is in the new instance's files: {found.stdout}"
        assert SECRET not in _docker_view(f"praisonai-snapshot:{snapshot.id}")
    else:
        for place in (praisonai_home() / "snapshots", praisonai_home() / "local" / copy.id):
            found = subprocess.run(["grep", "-rlsF", SECRET, str(place)], capture_output=True, text=True)
            assert found.stdout == "", f"the secret is in {found.stdout}"
    assert sb.exec(_IS_BOUND).stdout.strip() == "bound", "the source lost its bound env"


#: Prints a line found nowhere else: the command's text holds only the arithmetic that makes it.
_PRINTS_MARKER = "echo spooled-$((6 * 7))-output-$((1000 + 337))"
_MARKER = "spooled-42-output-1337"


def test_the_output_a_command_printed_is_not_in_a_snapshot_or_a_fork(
    provider: ComputeProvider, made: Made
) -> None:
    """The helper keeps each command's output in its spool: the spool is the instance's, not part of
    its saved filesystem (docker's commit never takes it; a local copy is the workspace alone)."""
    sb = _create(provider, made)
    assert sb.exec(_PRINTS_MARKER).stdout.strip() == _MARKER
    fork = made.keep(*sb.fork(1))
    # the pattern is made as the grep runs (its own text does not hold it), by root: the spool is
    # root's alone, and an attacker with the engine (or the host) reads every file
    search = f'p=spooled-$((40 + 2))-output-1337; grep -rlsF "$p" / {_NOT_FILES} || true'
    if provider.name == "docker":
        (snapshot,) = list_snapshots()
        assert _MARKER not in _docker_view(f"praisonai-snapshot:{snapshot.id}"), "the image holds it"
        argv = ["docker", "exec", "-u", "0", f"praisonai_{fork.id}", "sh", "-c", search]
    else:  # the snapshot's copy and the fork's own directory
        places = [praisonai_home() / "snapshots", praisonai_home() / "local" / fork.id]
        argv = ["grep", "-rlsF", _MARKER, *map(str, places)]
    found = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert found.stdout.strip() == "", f"the source's command output is in the fork: {found.stdout}"
    assert fork.exec(_PRINTS_MARKER).stdout.strip() == _MARKER, "the fork's own spool does not work"


def _docker_view(image: str) -> str:
    """What the engine shows of the image: its config, its history and every layer's bytes."""
    inspect = subprocess.run(["docker", "image", "inspect", image], capture_output=True, text=True)
    history = subprocess.run(["docker", "history", "--no-trunc", image], capture_output=True, text=True)
    layers = subprocess.run(["docker", "save", image], capture_output=True, check=True).stdout
    return inspect.stdout + history.stdout + layers.decode("latin-1")


# ---- bad input ---------------------------------------------------------------------------------


def test_bad_snapshot_input_is_refused_in_one_sentence_and_makes_nothing(
    provider: ComputeProvider, made: Made
) -> None:
    sb = _create(provider, made)
    snapshot = sb.snapshot("mine")
    other = LocalCompute() if provider.name == "docker" else DockerCompute()
    attempts: dict[str, Callable[[], object]] = {
        "unknown": lambda: Sandbox.create(provider, environment=False, from_snapshot="snap_000000000000"),
        "unknown name": lambda: Sandbox.create(provider, environment=False, from_snapshot="nope"),
        "another provider's": lambda: Sandbox.create(other, environment=False, from_snapshot=snapshot),
        "fork(0)": lambda: sb.fork(0),
        "fork(10_000)": lambda: sb.fork(10_000),
        "a taken name": lambda: sb.snapshot("mine"),
        "a bad name": lambda: sb.snapshot("has space"),
        "not a snapshot": lambda: sb.restore(42),  # type: ignore[arg-type]
    }
    for what, attempt in attempts.items():
        with pytest.raises(ConfigError) as refused:
            attempt()
        assert "\n" not in str(refused.value), (what, refused.value)
    assert [e.instance_id for e in Ledger.default().entries()] == [sb.id], "a refusal made an instance"
    assert list_snapshots() == [snapshot], "a refusal made a snapshot"


def test_a_snapshot_is_listed_and_removed_from_another_process(provider: ComputeProvider, made: Made) -> None:
    sb = _create(provider, made)
    snapshot = sb.snapshot("shared")
    script = (
        "from praisonai.compute import list_snapshots, remove_snapshot\n"
        "print([s.name for s in list_snapshots()]); print(remove_snapshot('shared'))\n"
    )
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert child.stdout.split("\n")[:2] == ["['shared']", "True"], child.stderr
    assert list_snapshots() == [] and snapshot.id not in _portal.call(_held, provider)


def test_sandbox_create_from_a_snapshot_name_takes_its_provider(
    provider: ComputeProvider, made: Made
) -> None:
    sb = _create(provider, made)
    sb.write_file("kept.txt", "kept")
    sb.snapshot("by-name")
    copy = made.keep(Sandbox.create(environment=False, from_snapshot="by-name"))
    assert copy.provider.name == provider.name and copy.provider.options == provider.options
    assert copy.read_file("kept.txt") == b"kept"


def test_snapshot_info_is_frozen() -> None:
    info = SnapshotInfo("snap_000000000000", None, "local", "local_000000000000", 0.0)
    with pytest.raises(AttributeError):
        info.name = "x"  # type: ignore[misc]


def test_a_local_copy_skips_what_vanished_under_it_and_refuses_a_vanished_workspace(tmp_path: Path) -> None:
    from praisonai._errors import ProvisionError
    from praisonai.compute.providers.local._snapshot import copy_tree

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "kept").write_text("whole")
    copy_tree(tmp_path / "ws", tmp_path / "copy")
    assert (tmp_path / "copy" / "kept").read_text() == "whole"
    with pytest.raises(ProvisionError, match="could not copy the workspace"):
        copy_tree(tmp_path / "gone", tmp_path / "other")
    assert not (tmp_path / "other").exists()
