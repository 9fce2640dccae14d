"""Pause and resume on Tenki through the real ``tenki`` SDK against its wire fake
(``fakes.tenki``: ``PauseSession``/``ResumeSession`` as ``docker pause``/``unpause``, ``/tmp``
emptied on resume as Tenki does): the working dir and the sandbox id survive, ``paused`` in
status and list. What every provider's pause must do is checked by the conformance suite
(``compute.testing.pause``); here, what Tenki's does itself."""

from __future__ import annotations

import pytest

pytest.importorskip("tenki", reason="the tenki SDK is not installed (pip install 'praisonai[tenki]')")

import grpc
from fakes.tenki import TenkiFake

from praisonai import _portal
from praisonai._errors import PraisonAIError
from praisonai._types import InstanceStatus
from praisonai.compute.providers.tenki import TenkiCompute

pytestmark = pytest.mark.usefixtures("docker_ok")

PROVIDER = "tenki"  # the fake and provider fixtures: tests/providers/conftest.py


def test_a_pause_is_tenkis_own_on_the_same_sandbox(provider: TenkiCompute, fake: TenkiFake) -> None:
    iid = _portal.call(provider.provision).instance_id
    try:
        box = fake.find(iid)
        assert box is not None
        assert _portal.call(provider.pause, iid).status is InstanceStatus.PAUSED
        assert box["state"] == "PAUSED"
        assert _portal.call(provider.resume, iid).status is InstanceStatus.RUNNING
        assert fake.find(iid) is box  # the same sandbox, not a replacement
        # /tmp (the background spool) was emptied by the resume: background processes still start
        started = _portal.call(provider.processes.start, iid, "echo bg")
        _portal.call(lambda: provider.processes.wait(iid, started.process_id, timeout=30))
        assert _portal.call(provider.processes.output, iid, started.process_id) == b"bg\n"
    finally:
        _portal.call(provider.shutdown, iid)


def test_a_vendor_error_is_ours_from_the_sdks(provider: TenkiCompute, fake: TenkiFake) -> None:
    import tenki

    iid = _portal.call(provider.provision).instance_id
    try:
        fake.fail_next(grpc.StatusCode.PERMISSION_DENIED, "no access to this workspace")
        with pytest.raises(PraisonAIError) as caught:
            _portal.call(provider.pause, iid)
        assert isinstance(caught.value.__cause__, tenki.SandboxError)
        assert (fake.find(iid) or {}).get("state") == "RUNNING"
    finally:
        _portal.call(provider.shutdown, iid)
