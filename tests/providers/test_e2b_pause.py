"""Pause and resume on E2B through the real ``e2b`` SDK against its wire fake (``fakes.e2b``,
which pauses a sandbox's container with ``docker pause``): files and the sandbox id survive, the
status says ``paused`` in between, everywhere, and any use after a pause resumes it natively. What
every provider's pause must do is checked by the conformance suite (``compute.testing.pause``);
here, what E2B's does itself."""

from __future__ import annotations

import pytest

pytest.importorskip("e2b")

from fakes.e2b import E2BFake
from kit import wait_until

from praisonai import _portal
from praisonai._errors import InstanceNotFoundError, PraisonAIError
from praisonai._types import InstanceStatus
from praisonai.compute import _reaper
from praisonai.compute.providers.e2b import E2BCompute

pytestmark = pytest.mark.usefixtures("docker_ok")

PROVIDER = "e2b"  # the fake fixture: tests/providers/conftest.py


def _sandbox_of(fake: E2BFake, instance_id: str) -> str:
    return next(
        s.sandbox_id for s in fake.sandboxes.values() if s.metadata["praisonai.instance"] == instance_id
    )


def test_another_process_sees_it_paused_and_resumes_the_same_sandbox(fake: E2BFake) -> None:
    p = E2BCompute()
    iid = _portal.call(p.provision).instance_id
    try:
        _portal.call(p.write_file, iid, "kept.txt", b"before pause")
        sandbox_id = _sandbox_of(fake, iid)
        assert _portal.call(p.pause, iid).status is InstanceStatus.PAUSED
        assert _portal.call(p.pause, iid).status is InstanceStatus.PAUSED  # idempotent (E2B's 409)
        other = E2BCompute()  # another process's view: nothing cached
        assert _portal.call(other.get_status, iid).status is InstanceStatus.PAUSED
        listed = {i.instance_id: i.status for i in _portal.call(other.list_instances)}
        assert listed[iid] is InstanceStatus.PAUSED
        assert _portal.call(other.resume, iid).status is InstanceStatus.RUNNING
        assert _portal.call(p.read_file, iid, "kept.txt") == b"before pause"
        assert _sandbox_of(fake, iid) == sandbox_id  # the same sandbox, not a replacement
    finally:
        _portal.call(p.shutdown, iid)


def test_resume_of_a_running_instance_is_a_no_op(fake: E2BFake) -> None:
    p = E2BCompute()
    iid = _portal.call(p.provision).instance_id
    try:
        _portal.call(lambda: p.execute(iid, "echo $$ > pid"))
        before = len(fake.calls)
        assert _portal.call(p.resume, iid).status is InstanceStatus.RUNNING
        assert not [c for c in fake.calls[before:] if "/connect" in c or "/pause" in c]
        assert _portal.call(p.read_file, iid, "pid").strip().isdigit()
    finally:
        _portal.call(p.shutdown, iid)


def test_a_vendor_error_is_ours_from_the_sdks(fake: E2BFake) -> None:
    # The sandbox killed behind this process's back: E2B answers the pause 404, the SDK raises
    # SandboxNotFoundException, and we raise InstanceNotFoundError from it.
    import e2b

    p = E2BCompute()
    iid = _portal.call(p.provision).instance_id
    try:
        fake._expire(fake.sandboxes[_sandbox_of(fake, iid)])
        with pytest.raises(InstanceNotFoundError) as caught:
            _portal.call(p.pause, iid)
        assert isinstance(caught.value, PraisonAIError)
        assert isinstance(caught.value.__cause__, e2b.SandboxException)
    finally:
        _portal.call(p.shutdown, iid)


@pytest.mark.alone  # it times an idle timeout
def test_an_instance_that_idleness_pauses_is_paused_by_e2b_at_its_timeout_never_killed(
    fake: E2BFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its owner gone (this process's reaper does nothing here), E2B's own timeout pauses it:
    the create asks for ``on_timeout: pause``, and the files survive."""
    monkeypatch.setattr(_reaper, "reason_to_stop", lambda *args, **kwargs: None)
    p = E2BCompute()
    iid = _portal.call(p.provision, {"idle_timeout_s": 1, "idle_action": "pause"}).instance_id
    try:
        _portal.call(p.write_file, iid, "kept.txt", b"across the timeout")
        sandbox_id = _sandbox_of(fake, iid)
        assert fake.sandboxes[sandbox_id].request.get("autoPause") is True
        wait_until(lambda: fake.sandboxes[sandbox_id].paused, 15)
        later = E2BCompute()  # the next process: its first call resumes it
        assert _portal.call(later.get_status, iid).status is InstanceStatus.PAUSED
        assert _portal.call(later.read_file, iid, "kept.txt") == b"across the timeout"
    finally:
        _portal.call(p.shutdown, iid)
