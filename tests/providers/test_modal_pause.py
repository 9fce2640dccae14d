"""Pause and resume on Modal through the real SDK and the wire fake: a ``snapshot_filesystem``
image, the paused instance's record in the ``praisonai-paused`` Modal Dict, a new sandbox under
the same id on resume. A second ``ModalCompute`` stands for another process with the same
credentials (it shares nothing with the first but Modal)."""

from __future__ import annotations

import gc
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("modal")

from kit import wait_until
from served import IMAGE

import praisonai
from praisonai import Sandbox, _portal
from praisonai._errors import InstanceNotFoundError, UnsupportedFeatureError
from praisonai._ledger import Ledger
from praisonai._types import InstanceStatus
from praisonai.compute import _home_reaper, inventory
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.modal import ModalCompute, _spec
from praisonai.compute.providers.modal._paused import STORE

_REPO = Path(praisonai.__file__).parents[1]
PROVIDER = "modal"  # the fake and provider fixtures: tests/providers/conftest.py


@pytest.fixture(autouse=True)
def _collect_sdk_garbage() -> Iterator[None]:
    """The SDK's handles collected while they are ours (see the same fixture in test_modal.py)."""
    yield
    gc.collect()


@pytest.fixture
def made(provider: ComputeProvider) -> Iterator[list[str]]:
    """The instances a test provisions (it appends their ids); shut down after the test."""
    ids: list[str] = []
    yield ids
    for instance_id in ids:
        _portal.call(provider.shutdown, instance_id)


def provision(provider: ComputeProvider, made: list[str], **config: Any) -> str:
    info = _portal.call(provider.provision, ComputeConfig(idle_action="pause", **config))
    made.append(info.instance_id)
    return info.instance_id


def records(fake: Any) -> int:
    """How many records the fake's ``praisonai-paused`` Dicts hold."""
    state = fake.state
    return sum(len(state.dicts[i]) for (_, name), i in state.dict_names.items() if name == STORE)


def running_boxes(fake: Any, instance_id: str) -> list[Any]:
    return [b for b in fake.state.boxes.values() if b.name == instance_id and not b.status]


def test_a_file_survives_pause_and_resume_under_the_same_id(
    provider: ComputeProvider, fake: Any, made: list[str]
) -> None:
    iid = provision(provider, made)
    _portal.call(provider.write_file, iid, "kept.txt", "before the pause")
    before = records(fake)
    paused = _portal.call(provider.pause, iid)
    assert paused.status is InstanceStatus.PAUSED and paused.metadata["image_id"].startswith("im-"), paused
    assert not running_boxes(fake, iid), "a paused instance keeps no sandbox"
    assert records(fake) == before + 1, "its record must be in the Modal Dict"
    resumed = _portal.call(provider.resume, iid)
    assert resumed.instance_id == iid and resumed.status is InstanceStatus.RUNNING, resumed
    assert _portal.call(provider.read_file, iid, "kept.txt") == b"before the pause"
    assert records(fake) == before, "a resume removes the record"
    [box] = running_boxes(fake, iid)
    assert box.tags["praisonai.instance"] == iid, "found by its tags as before"


def test_another_process_sees_it_paused_and_resumes_it(
    provider: ComputeProvider, fake: Any, made: list[str]
) -> None:
    iid = provision(provider, made)
    _portal.call(provider.write_file, iid, "kept.txt", "seen elsewhere")
    _portal.call(provider.pause, iid)
    other = ModalCompute(image=IMAGE)
    assert _portal.call(other.get_status, iid).status is InstanceStatus.PAUSED
    listed = {i.instance_id: i.status for i in _portal.call(other.list_instances)}
    assert listed.get(iid) is InstanceStatus.PAUSED, f"list must show it paused: {listed}"
    assert _portal.call(other.resume, iid).status is InstanceStatus.RUNNING
    assert _portal.call(other.read_file, iid, "kept.txt") == b"seen elsewhere"
    assert _portal.call(provider.read_file, iid, "kept.txt") == b"seen elsewhere", "and the first finds it"


def test_a_call_from_another_process_resumes_it(
    provider: ComputeProvider, fake: Any, made: list[str]
) -> None:
    iid = provision(provider, made)
    _portal.call(provider.write_file, iid, "kept.txt", "woken")
    _portal.call(provider.pause, iid)
    other = ModalCompute(image=IMAGE)
    result = _portal.call(other.execute, iid, "cat kept.txt")
    assert result.ok and result.stdout == "woken", result
    assert _portal.call(provider.get_status, iid).status is InstanceStatus.RUNNING


def test_shutdown_of_a_paused_instance_removes_its_record(
    provider: ComputeProvider, fake: Any, made: list[str]
) -> None:
    iid = provision(provider, made)
    before = records(fake)
    _portal.call(provider.pause, iid)
    assert _portal.call(provider.shutdown, iid) is True, "a paused instance exists until shut down"
    assert records(fake) == before, "shutdown must remove the record"
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.get_status, iid)
    assert _portal.call(provider.shutdown, iid) is False


def test_the_reaper_pauses_an_idle_instance_and_its_next_call_resumes_it(
    provider: ComputeProvider, fake: Any, made: list[str]
) -> None:
    """Modal gets no idle timeout for it (it would terminate it, files and all): this process's
    reaper pauses it instead."""
    iid = provision(provider, made, idle_timeout_s=1)
    _portal.call(provider.write_file, iid, "a.txt", "before")
    wait_until(lambda: _portal.call(provider.get_status, iid).status is InstanceStatus.PAUSED, 20)
    r = _portal.call(provider.execute, iid, "cat a.txt")
    assert r.stdout == "before", r


def test_settings_and_env_come_back_with_the_sandbox(
    provider: ComputeProvider, fake: Any, made: list[str]
) -> None:
    iid = provision(provider, made, env={"KEPT": "yes"}, network="none", cpu=0.5, ttl_s=600)
    [first] = running_boxes(fake, iid)
    assert first.idle_timeout is None, "Modal's idle timeout would remove what must be paused"
    _portal.call(provider.pause, iid)
    _portal.call(provider.resume, iid)
    [box] = running_boxes(fake, iid)
    d = box.definition
    assert d.network_access.network_access_type == first.definition.network_access.network_access_type
    assert d.resources.milli_cpu == first.definition.resources.milli_cpu == 500
    assert 0 < d.timeout_secs <= 600, "what is left of the ttl, not a new one"
    result = _portal.call(provider.execute, iid, "echo $KEPT")
    assert result.stdout == "yes\n", result


def test_a_paused_instance_past_its_ttl_is_removed_not_resumed(
    provider: ComputeProvider, fake: Any, made: list[str]
) -> None:
    """Whichever comes first removes it: this process's reaper, or the resume (``past_ttl``)."""
    iid = provision(provider, made, ttl_s=2)
    before = records(fake)
    _portal.call(provider.pause, iid)
    time.sleep(2.5)
    with pytest.raises(InstanceNotFoundError):
        _portal.call(ModalCompute(image=IMAGE).resume, iid)
    assert records(fake) == before and not running_boxes(fake, iid)


def test_past_ttl_counts_from_creation() -> None:
    created = int(time.time()) - 100
    tags = {"praisonai.created": str(created), _spec.TAG_SPEC: '{"ttl_s":60}'}
    assert _spec.past_ttl(tags, created + 100) == "100s old (ttl_s=60)"
    assert _spec.past_ttl({**tags, _spec.TAG_SPEC: '{"ttl_s":600}'}, time.time()) is None
    assert _spec.past_ttl({"praisonai.created": str(created)}, time.time()) is None, "no ttl: never"
    left = _spec.from_tags({**tags, _spec.TAG_SPEC: '{"ttl_s":600}'})["timeout"]
    assert 499 <= left <= 500, f"a resumed sandbox gets what is left of its ttl: {left}"


def test_a_process_holding_the_sandbox_another_paused_resumes_it_on_its_next_call(
    provider: ComputeProvider, fake: Any, made: list[str]
) -> None:
    """Its handle and channel were of the terminated sandbox: the channel is opened again (nothing
    ran on the old one), on the instance resumed."""
    iid = provision(provider, made)
    _portal.call(provider.write_file, iid, "kept.txt", "held")
    assert _portal.call(provider.execute, iid, "echo here").ok
    _portal.call(ModalCompute(image=IMAGE).pause, iid)
    r = _portal.call(provider.execute, iid, "cat kept.txt")
    assert r.ok and r.stdout == "held", r
    assert _portal.call(provider.read_file, iid, "kept.txt") == b"held"


def test_a_transfer_from_another_process_resumes_it(
    provider: ComputeProvider, fake: Any, made: list[str], tmp_path: Path
) -> None:
    """A relative path resolves against the instance's own working dir, read from its tags."""
    iid = provision(provider, made, working_dir="/srv/work")
    _portal.call(provider.write_file, iid, "kept.txt", "moved")
    _portal.call(provider.pause, iid)
    other = ModalCompute(image=IMAGE)
    assert _portal.call(other.download_file, iid, "kept.txt", tmp_path / "kept.txt")
    assert (tmp_path / "kept.txt").read_text() == "moved"
    _portal.call(provider.pause, iid)
    (tmp_path / "up.txt").write_text("sent")
    assert _portal.call(ModalCompute(image=IMAGE).upload_file, iid, tmp_path / "up.txt", "up.txt")
    assert _portal.call(provider.read_file, iid, "/srv/work/up.txt") == b"sent"


@pytest.mark.usefixtures("home")
def test_ps_shows_it_paused_and_gc_removes_it_past_its_retain_age(
    provider: ComputeProvider, fake: Any, made: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # no home reaper started by this process: it, too, removes a paused instance past its retain age
    monkeypatch.setattr(_home_reaper, "ensure_running", lambda home=None: False)
    before = records(fake)
    iid = provision(provider, made, retain_s=1)
    _portal.call(provider.pause, iid)
    shown = {i.instance_id: i.status for i in inventory.ps(providers=[provider]).instances}
    assert shown.get(iid) == "paused", shown
    time.sleep(1.5)
    outcome = inventory.gc(providers=[provider])
    assert [o.instance.instance_id for o in outcome.orphans] == [iid] and not outcome.failed, outcome
    assert records(fake) == before, "gc's shutdown removes the record"


def test_a_sandbox_made_before_its_settings_were_tagged_is_not_paused(
    provider: ComputeProvider, fake: Any, made: list[str]
) -> None:
    """Without its settings a resume could give a network to a network='none' sandbox."""
    iid = provision(provider, made)
    [box] = running_boxes(fake, iid)
    assert box.tags.pop(_spec.TAG_SPEC) == "{}", "every sandbox has its settings tagged, even none"
    with pytest.raises(UnsupportedFeatureError, match="cannot be paused; provision it again"):
        _portal.call(provider.pause, iid)
    assert running_boxes(fake, iid) == [box], "left running, untouched"


def test_sandbox_connect_resumes_a_paused_instance(provider: ComputeProvider, made: list[str]) -> None:
    iid = provision(provider, made)
    _portal.call(provider.write_file, iid, "notes.txt", "kept across idle")
    _portal.call(provider.pause, iid)
    with Sandbox.connect(iid) as sb:  # a provider of its own: another process's view
        assert sb.info.status is InstanceStatus.RUNNING and sb.id == iid
        assert sb.read_file("notes.txt") == b"kept across idle"


def test_a_paused_instance_whose_image_modal_expired_is_removed_not_resumed(
    provider: ComputeProvider, fake: Any, made: list[str]
) -> None:
    iid = provision(provider, made)
    before = records(fake)
    image_id = _portal.call(provider.pause, iid).metadata["image_id"]
    docker_image = fake.state.images.pop(image_id)  # Modal's snapshot ttl, passed
    try:
        with pytest.raises(InstanceNotFoundError, match="no longer has the snapshot"):
            _portal.call(provider.resume, iid)
    finally:
        fake.state.images[image_id] = docker_image  # the fake removes it when it stops
    assert records(fake) == before and not running_boxes(fake, iid)
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.get_status, iid)


def test_expose_of_a_declared_port_resumes_an_instance_another_process_paused(
    provider: ComputeProvider, fake: Any, made: list[str]
) -> None:
    iid = provision(provider, made, ports=[8000])
    first = _portal.call(provider.expose, iid, 8000)
    _portal.call(ModalCompute(image=IMAGE).pause, iid)
    again = _portal.call(provider.expose, iid, 8000)
    assert again.startswith("https://") and again != first, "the new sandbox's tunnel"
    [box] = running_boxes(fake, iid)
    assert [p.port for p in box.definition.open_ports.ports] == [8000], "its port opened again"


# Provisions a Modal instance that idleness pauses, writes a file, prints its id, then dies by
# SIGKILL: Modal has no idle end for it (that would lose its files), so the home's reaper pauses it.
_KILLED_CLIENT = """
import os, signal, sys
from praisonai import _portal
from praisonai.compute.providers.modal import ModalCompute
p = ModalCompute(image=sys.argv[1])
iid = _portal.call(p.provision, {"idle_timeout_s": 2, "idle_action": "pause"}).instance_id
_portal.call(p.write_file, iid, "notes.txt", "kept across idle")
print(iid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.usefixtures("home")
def test_the_home_reaper_pauses_an_idle_instance_whose_owner_was_killed(
    provider: ComputeProvider, made: list[str]
) -> None:
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_CLIENT, IMAGE], capture_output=True, text=True, timeout=120, cwd=_REPO
    )
    instance_id = child.stdout.strip()
    made.append(instance_id)
    assert child.returncode == -signal.SIGKILL and instance_id.startswith("modal_"), child.stderr
    wait_until(lambda: (row := Ledger.default().get(instance_id)) is not None and row.state == "paused", 60)
    assert _portal.call(provider.get_status, instance_id).status is InstanceStatus.PAUSED
    _portal.call(provider.resume, instance_id)
    assert _portal.call(provider.read_file, instance_id, "notes.txt") == b"kept across idle"
