"""Snapshots on the cloud providers, through their vendors' real SDKs against the wire fakes
(tests/served.py), through the user's API (``Sandbox``): the attack on secrets — a secret bound
after start is nowhere in a snapshot: not in an instance started from it, not in what the vendor
(its fake) keeps of the snapshot, not in this home — and removal, which deletes what the vendor
held. The conformance suite (praisonai/compute/testing/snapshots.py) checks the rest on each.
Every test removes what it made: instances first, then snapshots.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from served import TARGETS, Served

from praisonai import Sandbox, _portal
from praisonai._home import praisonai_home
from praisonai._ledger import Ledger
from praisonai.compute import SnapshotInfo, list_snapshots, remove_snapshot
from praisonai.compute.base import ComputeProvider

SECRET = "late-bound-" + "7d" * 12
_IS_BOUND = f'[ "$LATE_TOKEN" = {SECRET} ] && echo bound'


def _docker_view(*images: str) -> str:
    """What the engine shows of the images: their config, history and every layer's bytes."""
    if not images:
        return ""
    inspect = subprocess.run(["docker", "image", "inspect", *images], capture_output=True, text=True)
    history = "".join(
        subprocess.run(["docker", "history", "--no-trunc", image], capture_output=True, text=True).stdout
        for image in images
    )
    layers = subprocess.run(["docker", "save", *images], capture_output=True, check=True).stdout
    return inspect.stdout + history + layers.decode("latin-1")


def _modal_kept(fake: Any) -> str:
    """The Modal fake keeps a snapshot as a committed docker image, and each sandbox's create
    request (its env) in memory."""
    from fakes.modal._boxes import SNAPSHOT_REPOSITORY

    images = [ref for ref in fake.state.images.values() if ref.startswith(SNAPSHOT_REPOSITORY)]
    requests = [str(getattr(box, "definition", "")) for box in fake.state.boxes.values()]
    return _docker_view(*images) + "".join(requests) + repr(fake.state.dicts)


def _modal_held(fake: Any) -> list[str]:
    from fakes.modal._boxes import SNAPSHOT_REPOSITORY

    return [ref for ref in fake.state.images.values() if ref.startswith(SNAPSHOT_REPOSITORY)]


#: Per provider: everything its fake keeps, as text to search, and the snapshots it holds.
KEPT: dict[str, tuple[Callable[[Any], str], Callable[[Any], list[str]]]] = {
    "modal": (_modal_kept, _modal_held),
}


@pytest.fixture(scope="module", params=list(KEPT))
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    with TARGETS[request.param].serve(request) as target:
        yield target


@pytest.fixture
def provider(served: Served, home: Any, request: pytest.FixtureRequest) -> ComputeProvider:
    if TARGETS[served.provider.name].sdk_garbage:
        request.getfixturevalue("collect_sdk_garbage")
    return served.provider


class Made:
    """The sandboxes a test made, shut down afterwards, then every snapshot of its home."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.sandboxes: list[Sandbox] = []

    def create(self, **fields: Any) -> Sandbox:
        config = self.served.config or {}
        sb = Sandbox.create(self.served.provider, environment=False, **config, **fields)
        self.sandboxes.append(sb)
        return sb


@pytest.fixture
def made(served: Served, provider: ComputeProvider) -> Iterator[Made]:
    made = Made(served)
    yield made
    for sb in made.sandboxes:
        sb.shutdown()
    for snapshot in list_snapshots():  # this test's home: every one is this test's
        remove_snapshot(snapshot)
    assert _portal.call(_held, provider) == [], "a snapshot outlived its removal"
    assert Ledger.default().entries() == [], "an instance outlived the test"


async def _held(provider: ComputeProvider) -> list[str]:
    snapshotter = provider.snapshotter
    assert snapshotter is not None
    return await snapshotter.held()


def test_a_secret_bound_after_start_is_nowhere_in_a_snapshot(
    served: Served, provider: ComputeProvider, made: Made
) -> None:
    """The attack: bind a secret once the instance runs, use it, snapshot, start from the
    snapshot, and look for the secret everywhere an attacker with the new instance, with the
    vendor's account (its fake's keeping) or with this home could."""
    sb = made.create()
    _portal.call(provider.processes.bind_env, sb.id, {"LATE_TOKEN": SECRET})
    assert sb.exec(_IS_BOUND).stdout.strip() == "bound"
    snapshot = sb.snapshot()
    copy = made.create(from_snapshot=snapshot)
    assert copy.exec('echo "[${#LATE_TOKEN}]"').stdout.strip() == "[0]", "the new instance has it bound"
    found = copy.exec(f"grep -rlsF {SECRET} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev || true")
    assert found.stdout.strip() == "", f"the secret is in the new instance's files: {found.stdout}"
    kept, _ = KEPT[provider.name]
    assert SECRET not in kept(served.fake), "the vendor keeps the secret with the snapshot"
    in_home = subprocess.run(["grep", "-rlsF", SECRET, str(praisonai_home())], capture_output=True, text=True)
    assert in_home.stdout == "", f"the secret is in this home: {in_home.stdout}"
    assert sb.exec(_IS_BOUND).stdout.strip() == "bound", "the source lost its bound env"
    later = made.create()
    assert later.exec('echo "[${#LATE_TOKEN}]"').stdout.strip() == "[0]"


def test_removing_a_snapshot_deletes_it_at_the_vendor(
    served: Served, provider: ComputeProvider, made: Made
) -> None:
    _, held = KEPT[provider.name]
    sb = made.create()
    sb.write_file("kept.txt", "kept")
    before = set(held(served.fake))
    snapshot: SnapshotInfo = sb.snapshot("to-remove")
    assert len(set(held(served.fake)) - before) == 1, "the vendor holds no new snapshot"
    assert _portal.call(_held, provider) == [snapshot.id]
    assert remove_snapshot("to-remove") is True
    assert set(held(served.fake)) <= before, "the vendor still holds the removed snapshot"
    assert list_snapshots() == [] and _portal.call(_held, provider) == []
    with pytest.raises(Exception, match="no snapshot"):
        Sandbox.create(provider, environment=False, from_snapshot="to-remove")
