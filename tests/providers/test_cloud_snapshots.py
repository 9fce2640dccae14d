"""Snapshots on the cloud providers, through their vendors' real SDKs against the wire fakes
(tests/served.py), through the user's API (``Sandbox``): the attack on secrets — neither an env
value given at creation nor one bound after start is in a snapshot: not in an instance started
from it, not in what the vendor (its fake) keeps of the snapshot, not in this home — and removal,
which deletes what the vendor held. The conformance suite (praisonai/compute/testing/snapshots.py)
checks the rest on each. Every test removes what it made: instances first, then snapshots.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from served import IMAGE, TARGETS, Served

from praisonai import Sandbox, _portal
from praisonai._errors import UnsupportedFeatureError
from praisonai._home import praisonai_home
from praisonai._ledger import Ledger
from praisonai.compute import SnapshotInfo, list_snapshots, remove_snapshot
from praisonai.compute.base import ComputeProvider

SECRET = "late-bound-" + "7d" * 12
EARLY = "made-with-" + "3b" * 12
_IS_BOUND = f'[ "$LATE_TOKEN" = {SECRET} ] && echo bound'
_NOT_FILES = "--exclude-dir=proc --exclude-dir=sys --exclude-dir=dev"


def _docker_view(*images: str) -> str:
    """What a vendor holds of the snapshot images (its fake's docker images): their config (env,
    labels), history and every layer's bytes. Not docker's ``ContainerConfig``: docker 20.10 records
    the committed container's config there (the env the fake started the sandbox with), where the
    vendor, whose snapshot is the filesystem, keeps nothing of the kind."""
    if not images:
        return ""
    config = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{json .Config}}", *images],
        capture_output=True,
        text=True,
    )
    history = "".join(
        subprocess.run(["docker", "history", "--no-trunc", image], capture_output=True, text=True).stdout
        for image in images
    )
    saved = subprocess.run(["docker", "save", *images], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(saved)) as archive:
        layers = b"".join(
            extracted.read()
            for member in archive.getmembers()
            if member.name.endswith("layer.tar") and (extracted := archive.extractfile(member)) is not None
        )
    return config.stdout + history + layers.decode("latin-1")


def _modal_held(fake: Any) -> list[str]:
    """The Modal fake keeps a snapshot as a committed docker image."""
    from fakes.modal._boxes import SNAPSHOT_REPOSITORY

    return [ref for ref in fake.state.images.values() if ref.startswith(SNAPSHOT_REPOSITORY)]


def _modal_kept(fake: Any) -> str:
    """Its snapshot images, and its Dicts (where paused instances' records go)."""
    return _docker_view(*_modal_held(fake)) + repr(fake.state.dicts)


def _daytona_held(fake: Any) -> list[str]:
    """The Daytona fake keeps a snapshot as a committed docker image, by the snapshot's name."""
    return list(fake.snapshots.values())


def _daytona_kept(fake: Any) -> str:
    return _docker_view(*_daytona_held(fake))


def _e2b_held(fake: Any) -> list[str]:
    """The E2B fake keeps a snapshot as a committed docker image, by the snapshot's id."""
    return [fake._image(snapshot_id) for snapshot_id in fake.snapshots]


def _e2b_kept(fake: Any) -> str:
    return _docker_view(*_e2b_held(fake))


def _kubernetes_objects(fake: Any) -> list[dict[str, Any]]:
    """The Kubernetes fake keeps a snapshot as a claim holding its archive (a docker volume), or
    as a VolumeSnapshot (a docker volume of its own): both labelled with the snapshot's id."""
    with fake.cond:
        objects = [*fake.claims.values(), *fake.custom.values()]
    return [o for o in objects if "praisonai.snapshot" in (o["metadata"].get("labels") or {})]


def _kubernetes_held(fake: Any) -> list[str]:
    return [o["_volume"] for o in _kubernetes_objects(fake)]


def _kubernetes_kept(fake: Any) -> str:
    """Every file of those volumes, and the objects themselves (their specs and annotations)."""
    kept = [repr(_kubernetes_objects(fake))]
    for volume in _kubernetes_held(fake):
        argv = ["docker", "run", "--rm", "--pull", "never", "--network", "none", "-v", f"{volume}:/v:ro"]
        packed = subprocess.run([*argv, IMAGE, "tar", "-cf", "-", "-C", "/v", "."], capture_output=True)
        kept.append(packed.stdout.decode("latin-1"))
    return "".join(kept)


#: Per provider: everything its fake keeps of snapshots, as text to search, and what it holds.
KEPT: dict[str, tuple[Callable[[Any], str], Callable[[Any], list[str]]]] = {
    "modal": (_modal_kept, _modal_held),
    "daytona": (_daytona_kept, _daytona_held),
    "e2b": (_e2b_kept, _e2b_held),
    "kubernetes": (_kubernetes_kept, _kubernetes_held),
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


def test_no_env_value_is_in_a_snapshot(served: Served, provider: ComputeProvider, made: Made) -> None:
    """The attack: make an instance with a secret in its env, bind another once it runs (where the
    provider binds env after start), use them, snapshot, start from the snapshot, and look for
    either everywhere an attacker with the new instance, with the vendor's account (what its fake
    keeps of snapshots) or with this home could."""
    sb = made.create(env={"EARLY_TOKEN": EARLY})
    try:
        _portal.call(provider.processes.bind_env, sb.id, {"LATE_TOKEN": SECRET})
    except UnsupportedFeatureError:
        bound = False  # Daytona: one-shot exec, nothing bound after start
    else:
        bound = True
        assert sb.exec(_IS_BOUND).stdout.strip() == "bound"
    assert sb.exec(f'[ "$EARLY_TOKEN" = {EARLY} ] && echo set').stdout.strip() == "set"
    snapshot = sb.snapshot()
    if provider.name == "e2b":  # a full snapshot would keep the memory that holds env values
        assert served.fake.snapshot_requests[-1].get("memory") is False, served.fake.snapshot_requests
    copy = made.create(from_snapshot=snapshot)
    seen = copy.exec('echo "[${#LATE_TOKEN}][${#EARLY_TOKEN}]"').stdout.strip()
    assert seen == "[0][0]", f"the new instance has the source's env: {seen}"
    for secret in (SECRET, EARLY):
        found = copy.exec(f"grep -rlsF {secret} / {_NOT_FILES} || true")
        assert found.stdout.strip() == "", f"a secret is in the new instance's files: {found.stdout}"
        kept, _ = KEPT[provider.name]
        vendor_has_it = secret in kept(served.fake)  # not in the assert: pytest would diff the images
        assert not vendor_has_it, "the vendor keeps a secret with the snapshot"
        in_home = subprocess.run(
            ["grep", "-rlsF", secret, str(praisonai_home())], capture_output=True, text=True
        )
        assert in_home.stdout == "", f"a secret is in this home: {in_home.stdout}"
    if bound:
        assert sb.exec(_IS_BOUND).stdout.strip() == "bound", "the source lost its bound env"
        assert made.create().exec('echo "[${#LATE_TOKEN}]"').stdout.strip() == "[0]"


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
